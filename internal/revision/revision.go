// Package revision names what a cloud node is made from: a short digest of
// its group's kube-env (the autoscaler's view of the node), startup script
// (which carries the JoinConfiguration and the kubelet patch) and instance
// properties (image, machine type, disks, accelerators, Spot, Kubernetes
// version). Every cloud node joins with it as the label model.RevisionLabel,
// and the group's kube-env declares the same label, so a node whose label
// differs from its group's current revision was made from an older source.
//
// The digest is taken over the artifacts with the revision label's value
// emptied, so it does not depend on itself, and without the generated-file
// header and kube-env's autoscaling_options (how the autoscaler treats the
// group, not what its nodes are).
package revision

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
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
	return replaceRanges(nil, data, labelRanges(data), value)
}

// replaceRanges is replaceValues with data's labels found already
// (labelRanges), writing a changed copy into buf's storage (reused when
// large enough).
func replaceRanges(buf, data []byte, labels [][2]int, value string) []byte {
	var out []byte
	last := 0
	for _, l := range labels {
		at := l[0] + len(labelEq)
		if out == nil && string(data[at:l[1]]) == value {
			continue
		}
		if out == nil {
			out = buf[:0]
			if cap(out) < len(data)+len(value) {
				out = make([]byte, 0, len(data)+len(value))
			}
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

// scratch holds the buffers Of empties the artifacts' labels in: the
// emptied copies live only while their digest is taken.
var scratch = sync.Pool{New: func() any { return new([]byte) }}

// Empty returns data with every revision label's value emptied: the form
// the digest is taken over. It returns data itself when every value is
// empty already.
func Empty(data []byte) []byte { return replaceValues(data, "") }

// Set returns data with every revision label's value replaced by rev
// (data itself when every value is rev already).
func Set(data []byte, rev string) []byte { return replaceValues(data, rev) }

// Of computes the revision of the cloud group g of src from its rendered
// kube-env and startup script, whatever revision value they carry.
func Of(src *model.Source, g *model.NodeGroup, kubeEnv, script []byte) (string, error) {
	env, err := kubeenv.Parse(Empty(kubeEnv))
	if err != nil {
		return "", fmt.Errorf("kube-env: %w", err)
	}
	return OfEnvVars(src, g, env[kubeenv.AutoscalerEnvVars], script), nil
}

// OfEnvVars is Of with the kube-env given as the value the autoscaler
// reads from its AUTOSCALER_ENV_VARS with the revision label emptied: what
// render wrote there, so that it need not read back the kube-env it just
// wrote (verify does, and recomputes the revision with Of).
func OfEnvVars(src *model.Source, g *model.NodeGroup, envVars string, script []byte) string {
	return ofLabels(src, g, envVars, script, labelRanges(script))
}

// ofLabels is OfEnvVars with the script's labels found already.
func ofLabels(src *model.Source, g *model.NodeGroup, envVars string, script []byte, labels [][2]int) string {
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
	field("format", "nodegen revision 1")
	field("kube-env", strings.Join(vars, ";"))
	buf := scratch.Get().(*[]byte)
	emptied := replaceRanges(*buf, script, labels, "")
	fieldParts(h, "startup-script", withoutHeader(emptied)...)
	if len(emptied) > 0 && len(script) > 0 && &emptied[0] != &script[0] {
		*buf = emptied[:0]
	}
	scratch.Put(buf)
	field("image", g.Image)
	field("machine-type", g.MachineType)
	field("arch", g.Arch)
	field("boot-disk", g.BootDiskType+" "+strconv.Itoa(g.BootDiskSizeGb))
	field("local-ssds", strconv.Itoa(g.LocalSSDCount))
	field("spot", strconv.FormatBool(g.Spot))
	if g.GPU != nil {
		field("accelerators", g.GPU.Type+" "+strconv.Itoa(g.GPU.Count))
	}
	field("kubernetes-version", src.Cluster.NodeVersion(g))
	return hex.EncodeToString(h.Sum(nil))[:Len]
}

// StampEnvVars returns a cloud group's rendered kube-env and startup
// script with their revision labels set to the group's revision, taken as
// OfEnvVars does from envVars, the AUTOSCALER_ENV_VARS the kube-env holds
// with the label empty.
func StampEnvVars(src *model.Source, g *model.NodeGroup, envVars string, kubeEnv, script []byte) (env, stamped []byte) {
	labels := labelRanges(script)
	rev := ofLabels(src, g, envVars, script, labels)
	return Set(kubeEnv, rev), replaceRanges(nil, script, labels, rev)
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

// withoutHeader returns the parts of script that remain once every
// generated-file header line is dropped (a line that, trimmed of spaces,
// starts with headerPrefix and ends with "DO NOT EDIT."); the header names
// the source file the group is defined in, not what its nodes are.
func withoutHeader(script []byte) [][]byte {
	var parts [][]byte
	kept := 0 // script[kept:] is not yet in parts
	for off := 0; ; {
		i := bytes.Index(script[off:], []byte(headerPrefix))
		if i < 0 {
			break
		}
		at := off + i
		start := bytes.LastIndexByte(script[:at], '\n') + 1
		end := len(script)
		if j := bytes.IndexByte(script[at:], '\n'); j >= 0 {
			end = at + j + 1
		}
		if t := bytes.TrimSpace(script[start:end]); bytes.HasPrefix(t, []byte(headerPrefix)) && bytes.HasSuffix(t, []byte("DO NOT EDIT.")) {
			if start > kept {
				parts = append(parts, script[kept:start])
			}
			kept = end
		}
		off = end
	}
	if kept < len(script) {
		parts = append(parts, script[kept:])
	}
	return parts
}

// Declared returns the revision each cloud group's rendered kube-env
// declares (files as gen renders them), by group; a group whose kube-env
// declares none has no entry.
func Declared(src *model.Source, files layout.Files) (map[string]string, error) {
	out := map[string]string{}
	for _, g := range src.CloudGroups() {
		rev, ok, err := FromKubeEnv(files[layout.KubeEnvPath(g.Name)])
		if err != nil {
			return nil, fmt.Errorf("node group %s: kube-env: %w", g.Name, err)
		}
		if ok {
			out[g.Name] = rev
		}
	}
	return out, nil
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
	want := ofLabels(src, g, env[kubeenv.AutoscalerEnvVars], script, labels)
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
