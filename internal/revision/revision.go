// Package revision names what a cloud node is made from: a short digest of
// its group's kube-env (the autoscaler's view of the node), startup script
// (which carries the JoinConfiguration and the kubelet patch), its whole
// instance template as nodegen decides it (model.InstanceTemplate: image,
// machine type, disks, accelerators, scheduling, labels, tags, metadata
// keys, service account) and its Kubernetes version. Every cloud node joins with it as the label model.RevisionLabel,
// and the group's kube-env declares the same label, so a node whose label
// differs from its group's current revision was made from an older source.
//
// The digest is taken over the artifacts with the revision label's value
// left out, so it does not depend on itself, and without the generated-file
// header and kube-env's autoscaling_options (how the autoscaler treats the
// group, not what its nodes are). The renderer renders each artifact once,
// with a placeholder as wide as a revision where the value goes, and Stamp
// writes the revision over it in place.
//
// The digest covers the rendered bytes, not the source's fields: a node
// must be replaced when what it boots with changes, and that changes with
// nodegen's templates as well as with the source (a join script that gains
// a step changes every group's revision, its source unchanged).
package revision

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
)

// Len is the number of hex digits of a revision.
const Len = 12

// Label is the node label that carries a node's revision.
const Label = model.RevisionLabel

// labelEq starts the revision label with its value, wherever it is
// written (kube-env's node_labels, the kubelet's --node-labels); the value
// is the run of lowercase hex digits after it. Label values cannot hold
// '/' or '=', so nothing a user writes matches it.
const labelEq = Label + "="

// labelValues calls f with the start and end of each revision label with
// its value in data (the leftmost matches of labelEq followed by
// [0-9a-f]*, none overlapping), in order. It looks for the label's end,
// "/revision=", which bytes.Index finds many times faster in a script than
// the whole label (whose first byte is a common letter), and checks what
// precedes it.
func labelValues(data []byte, f func(start, end int)) {
	const tail = "/revision="
	head := len(labelEq) - len(tail)
	for off := 0; ; {
		i := bytes.Index(data[off:], []byte(tail))
		if i < 0 {
			return
		}
		at := off + i
		start := at - head
		if start < off || string(data[start:at]) != labelEq[:head] {
			off = at + 1
			continue
		}
		end := start + len(labelEq)
		for end < len(data) && isHexDigit(data[end]) {
			end++
		}
		f(start, end)
		off = end
	}
}

func isHexDigit(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// labelRanges returns the start and end of each revision label with its
// value in data, as labelValues finds them.
func labelRanges(data []byte) [][2]int {
	var r [][2]int
	labelValues(data, func(start, end int) { r = append(r, [2]int{start, end}) })
	return r
}

// replaceValues returns data with every revision label's value replaced
// by value; data itself when that changes nothing.
func replaceValues(data []byte, value string) []byte {
	return replaceRanges(data, labelRanges(data), value)
}

// replaceRanges is replaceValues with data's labels found already
// (labelRanges).
func replaceRanges(data []byte, labels [][2]int, value string) []byte {
	var out []byte
	last := 0
	for _, l := range labels {
		at := l[0] + len(labelEq)
		if out == nil && string(data[at:l[1]]) == value {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(data)+len(value))
		}
		out = append(out, data[last:at]...)
		out = append(out, value...)
		last = l[1]
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// Empty returns data with every revision label's value emptied: the form
// the digest is taken over. It returns data itself when every value is
// empty already.
func Empty(data []byte) []byte { return replaceValues(data, "") }

// Placeholder is the value a renderer gives the revision label wherever it
// renders it: as wide as a revision, so that Stamp writes the revision over
// it in place once the digest is taken.
const Placeholder = "000000000000"

// Of computes the revision of the cloud group g of src from its rendered
// kube-env and startup script, whatever revision value they carry.
func Of(src *model.Source, g *model.NodeGroup, kubeEnv, script []byte) (string, error) {
	env, err := kubeenv.Parse(Empty(kubeEnv))
	if err != nil {
		return "", fmt.Errorf("kube-env: %w", err)
	}
	return digest(src, g, src.InstanceTemplate(g), env[kubeenv.AutoscalerEnvVars], script, labelRanges(script)), nil
}

// Stamp gives a cloud group's artifacts, rendered once with Placeholder as
// every revision label's value, the group's revision: it takes the digest
// of kube-env's AUTOSCALER_ENV_VARS (envVars, as the renderer joined them)
// and of the startup script with the labels' values left out, writes the
// revision over each placeholder of kubeEnv and script, in place, and
// returns it. A label with another value is a renderer's mistake, and an
// error.
func Stamp(src *model.Source, g *model.NodeGroup, envVars string, kubeEnv, script []byte) (string, error) {
	envLabels, scriptLabels := labelRanges(kubeEnv), labelRanges(script)
	for _, a := range []struct {
		name   string
		data   []byte
		labels [][2]int
	}{{"kube-env", kubeEnv, envLabels}, {"startup script", script, scriptLabels}} {
		if len(a.labels) == 0 {
			return "", fmt.Errorf("%s: no %s label", a.name, Label)
		}
		for _, l := range a.labels {
			if v := a.data[l[0]+len(labelEq) : l[1]]; string(v) != Placeholder {
				return "", fmt.Errorf("%s: %s=%s, want the placeholder %s", a.name, Label, v, Placeholder)
			}
		}
	}
	rev := digest(src, g, src.InstanceTemplate(g), string(Empty([]byte(envVars))), script, scriptLabels)
	for _, l := range envLabels {
		copy(kubeEnv[l[0]+len(labelEq):l[1]], rev)
	}
	for _, l := range scriptLabels {
		copy(script[l[0]+len(labelEq):l[1]], rev)
	}
	return rev, nil
}

// digest is the revision of the cloud group g of src: the digest of
// envVars, the AUTOSCALER_ENV_VARS of its kube-env with the revision label
// empty, less autoscaling_options; of its startup script with every
// revision label's value (labels, as labelRanges finds them) and every
// generated-file header line left out; and of its instance template tmpl.
func digest(src *model.Source, g *model.NodeGroup, tmpl *model.InstanceTemplate, envVars string, script []byte, labels [][2]int) string {
	var vars []string
	for _, seg := range strings.Split(envVars, ";") {
		if name, _, _ := strings.Cut(seg, "="); strings.TrimSpace(name) != kubeenv.VarAutoscalingOptions {
			vars = append(vars, seg)
		}
	}
	h := sha256.New()
	field := func(name, value string) {
		// Length-prefixed, so that no two inputs write the same bytes.
		fieldParts(h, name, value)
	}
	field("format", "nodegen revision 2")
	field("kube-env", strings.Join(vars, ";"))
	values := make([][2]int, len(labels))
	for i, l := range labels {
		values[i] = [2]int{l[0] + len(labelEq), l[1]}
	}
	fieldParts(h, "startup-script", cut(script, union(headerLines(script), values))...)
	// The whole instance template nodegen decides, in one encoding that
	// writes every field (encoding/json writes struct fields in their
	// order and map keys sorted): a template attribute cannot change
	// without changing the revision (TestTemplateFieldsChangeRevision).
	t, err := json.Marshal(tmpl)
	if err != nil {
		// The template holds strings, numbers, booleans, slices and
		// string maps only.
		panic(fmt.Sprintf("revision: instance template of %s: %v", g.Name, err))
	}
	field("instance-template", string(t))
	field("arch", g.Arch)
	field("kubernetes-version", src.Cluster.NodeVersion(g))
	return hex.EncodeToString(h.Sum(nil))[:Len]
}

// fieldParts writes one field of the digest: its name, the length of its
// value, and the value, the concatenation of parts.
func fieldParts[T ~string | ~[]byte](w io.Writer, name string, parts ...T) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b := make([]byte, 0, len(name)+24)
	b = append(b, name...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\n')
	w.Write(b)
	for _, p := range parts {
		w.Write([]byte(p))
	}
	w.Write([]byte{'\n'})
}

// headerPrefix starts the generated-file header line.
const headerPrefix = "# Code generated by nodegen from "

// headerLines returns the start and end of each generated-file header
// line of script (a line that, trimmed of spaces, starts with headerPrefix
// and ends with "DO NOT EDIT.", its newline included), in order; the header
// names the source file the group is defined in, not what its nodes are.
func headerLines(script []byte) [][2]int {
	var lines [][2]int
	for off := 0; ; {
		i := bytes.Index(script[off:], []byte(headerPrefix))
		if i < 0 {
			return lines
		}
		at := off + i
		start := bytes.LastIndexByte(script[:at], '\n') + 1
		end := len(script)
		if j := bytes.IndexByte(script[at:], '\n'); j >= 0 {
			end = at + j + 1
		}
		if t := bytes.TrimSpace(script[start:end]); bytes.HasPrefix(t, []byte(headerPrefix)) && bytes.HasSuffix(t, []byte("DO NOT EDIT.")) {
			lines = append(lines, [2]int{start, end})
		}
		off = end
	}
}

// union merges two ordered lists of ranges, each of disjoint ranges, into
// one ordered list of disjoint ranges covering both.
func union(a, b [][2]int) [][2]int {
	all := append(append(make([][2]int, 0, len(a)+len(b)), a...), b...)
	slices.SortFunc(all, func(x, y [2]int) int { return x[0] - y[0] })
	var out [][2]int
	for _, r := range all {
		if n := len(out); n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// cut returns the parts of data outside the ordered, disjoint ranges, as
// slices of data (nothing is copied).
func cut(data []byte, ranges [][2]int) [][]byte {
	var parts [][]byte
	kept := 0 // data[kept:] is not yet in parts
	for _, r := range ranges {
		if r[0] > kept {
			parts = append(parts, data[kept:r[0]])
		}
		kept = r[1]
	}
	if kept < len(data) {
		parts = append(parts, data[kept:])
	}
	return parts
}

// FromKubeEnv returns the revision a kube-env declares in node_labels, read
// the autoscaler's way; ok is false when it declares none.
func FromKubeEnv(kubeEnv []byte) (rev string, ok bool, err error) {
	t, err := kubeenv.ReadTemplate(kubeEnv)
	if err != nil {
		return "", false, err
	}
	rev, ok = t.Labels[Label]
	return rev, ok, nil
}

// CheckRead reports, as an error, whether the kube-env and startup
// script of the cloud group g declare its revision: the label in
// kube-env's node_labels and in the kubelet's --node-labels, with the
// digest of the two artifacts as its value. t is kube-env read the
// autoscaler's way, kubeenv.ReadTemplate(kubeEnv).
func CheckRead(src *model.Source, g *model.NodeGroup, kubeEnv, script []byte, t *kubeenv.Template) error {
	env, err := kubeenv.Parse(Empty(kubeEnv))
	if err != nil {
		return fmt.Errorf("kube-env: %w", err)
	}
	labels := labelRanges(script)
	want := digest(src, g, src.InstanceTemplate(g), env[kubeenv.AutoscalerEnvVars], script, labels)
	got, ok := t.Labels[Label]
	switch {
	case !ok:
		return fmt.Errorf("kube-env: node_labels has no %s label", Label)
	case got != want:
		return fmt.Errorf("kube-env: %s=%s, but the group's artifacts make revision %s", Label, got, want)
	}
	if len(labels) != 1 {
		return fmt.Errorf("startup script: %d %s labels, want 1 (in --node-labels)", len(labels), Label)
	}
	if !strings.HasPrefix(string(script[labels[0][0]+len(labelEq):labels[0][1]]), want) {
		return fmt.Errorf("startup script: %s is not %s", Label, want)
	}
	return nil
}
