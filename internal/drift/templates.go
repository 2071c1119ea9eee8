package drift

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/nodecheck"
)

// Kinds of the findings about instance templates.
const (
	UnknownTemplate = "unknown-template"
	KubeEnv         = "kube-env"
	StartupScript   = "startup-script"
	GuestGPU        = "guest-accelerators"
	MachineType     = "machine-type"
	BootDisk        = "boot-disk"
)

// LiveTemplate is an instance template as gcloud prints it (`gcloud
// compute instance-templates describe --format=json`): its name, where it
// was read from, and its properties decoded into the typed template
// (model.ComputeInstanceTemplate.Template).
type LiveTemplate struct {
	Name string
	// File is where the template was read from.
	File string
	*model.InstanceTemplate
}

// ReadTemplates reads the output of `gcloud compute instance-templates
// describe --format=json` (one object) or of `… list --format=json` (a
// list of them).
func ReadTemplates(file string, data []byte) ([]*LiveTemplate, error) {
	trimmed := bytes.TrimSpace(data)
	var in []*model.ComputeInstanceTemplate
	var err error
	if len(trimmed) > 0 && trimmed[0] == '[' {
		err = json.Unmarshal(trimmed, &in)
	} else {
		var t model.ComputeInstanceTemplate
		err = json.Unmarshal(trimmed, &t)
		in = []*model.ComputeInstanceTemplate{&t}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s", positioned(file, data, err), "not gcloud instance-template JSON")
	}
	out := make([]*LiveTemplate, len(in))
	for i, t := range in {
		if t == nil || t.Name == "" || t.Properties == nil {
			return nil, fmt.Errorf("%s: item %d: not an instance template (no name or properties)", file, i)
		}
		if t.Kind != "" && t.Kind != "compute#instanceTemplate" {
			return nil, fmt.Errorf("%s: %s is a %s, not an instance template", file, t.Name, t.Kind)
		}
		out[i] = &LiveTemplate{Name: t.Name, File: file, InstanceTemplate: t.Template()}
	}
	return out, nil
}

// positioned prefixes a JSON error with file:line:col when it has an offset.
func positioned(file string, data []byte, err error) string {
	var off int64 = -1
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	}
	if off < 0 {
		return fmt.Sprintf("%s: %v", file, err)
	}
	// Offsets count from the trimmed input; add the leading space back.
	off += int64(len(data) - len(bytes.TrimLeft(data, " \t\r\n")))
	off = min(off, int64(len(data)))
	line := bytes.Count(data[:off], []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Sprintf("%s:%d:%d: %v", file, line, col, err)
}

// TemplateResult is what drift found in one instance template.
type TemplateResult struct {
	Name     string              `json:"name"`
	File     string              `json:"file"`
	Group    string              `json:"group,omitempty"`
	Findings []nodecheck.Finding `json:"findings"`
}

// GroupOfTemplate finds the cloud group whose instance templates are named
// like the template (the longest matching Cluster.TemplatePrefix).
func GroupOfTemplate(src *model.Source, name string) *model.NodeGroup {
	var best *model.NodeGroup
	for _, g := range src.Groups() {
		p := src.Cluster.TemplatePrefix(g)
		if g.Cloud() && strings.HasPrefix(name, p) && len(name) > len(p) &&
			(best == nil || len(p) > len(src.Cluster.TemplatePrefix(best))) {
			best = g
		}
	}
	return best
}

// CheckTemplates compares instance templates with the rendered artifacts
// in files: the kube-env and startup-script metadata, the guest
// accelerators, the machine type and the boot disk size.
func CheckTemplates(src *model.Source, files layout.Files, tmpls []*LiveTemplate) []TemplateResult {
	out := []TemplateResult{}
	for _, t := range tmpls {
		r := TemplateResult{Name: t.Name, File: t.File, Findings: []nodecheck.Finding{}}
		g := GroupOfTemplate(src, t.Name)
		if g == nil {
			var prefixes []string
			for _, g := range src.CloudGroups() {
				prefixes = append(prefixes, src.Cluster.TemplatePrefix(g))
			}
			r.Findings = append(r.Findings, nodecheck.Finding{Kind: UnknownTemplate, Got: t.Name,
				Message: fmt.Sprintf("template %s belongs to no node group (names start with %s)", t.Name, strings.Join(prefixes, ", "))})
			out = append(out, r)
			continue
		}
		r.Group = g.Name
		p := &t.Properties
		r.Findings = append(r.Findings, checkKubeEnv(metadataValue(p, model.MetadataKubeEnv), files[layout.KubeEnvPath(g.Name)], layout.KubeEnvPath(g.Name))...)
		r.Findings = append(r.Findings, checkScript(metadataValue(p, model.MetadataStartupScript), files[layout.StartupScriptPath(g.Name)], layout.StartupScriptPath(g.Name))...)
		r.Findings = append(r.Findings, checkAccelerators(g, p.GuestAccelerators)...)
		if mt := lastSegment(p.MachineType); mt != g.MachineType {
			r.Findings = append(r.Findings, nodecheck.Finding{Kind: MachineType, Want: g.MachineType, Got: mt,
				Message: fmt.Sprintf("machine type %s, the source says %s", mt, g.MachineType)})
		}
		r.Findings = append(r.Findings, checkBootDisk(g, p.Disks)...)
		out = append(out, r)
	}
	return out
}

// metadataValue is the value of a metadata key, nil without the key.
func metadataValue(p *model.InstanceProperties, key string) *string {
	if v, ok := p.MetadataValue(key); ok {
		return &v
	}
	return nil
}

func lastSegment(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// checkKubeEnv compares a template's kube-env with the rendered one the
// way the autoscaler reads both; a difference in comments or layout only
// is reported as such.
func checkKubeEnv(got *string, want []byte, path string) []nodecheck.Finding {
	if got == nil {
		return []nodecheck.Finding{{Kind: KubeEnv, Message: "no kube-env metadata: the autoscaler gets no labels, taints or reservations for scale-from-zero"}}
	}
	if *got == string(want) {
		return nil
	}
	wt, err := kubeenv.ReadTemplate(want)
	if err != nil {
		return []nodecheck.Finding{{Kind: KubeEnv, Message: "internal error: rendered kube-env unreadable: " + err.Error()}}
	}
	gt, err := kubeenv.ReadTemplate([]byte(*got))
	if err != nil {
		return []nodecheck.Finding{{Kind: KubeEnv, Message: "kube-env unreadable by the autoscaler (no scale-from-zero): " + err.Error()}}
	}
	d := &kubeEnvDiff{}
	// The revision label is a digest of the artifacts: every other
	// difference changes it, so it is not reported on its own.
	withoutRevision := func(m map[string]string) map[string]string {
		c := make(map[string]string, len(m))
		maps.Copy(c, m)
		delete(c, model.RevisionLabel)
		return c
	}
	d.labels(withoutRevision(wt.Labels), withoutRevision(gt.Labels))
	d.taints(wt.Taints, gt.Taints)
	d.values(wt, gt)
	if len(d.out) == 0 {
		d.out = append(d.out, nodecheck.Finding{Kind: KubeEnv, Message: "kube-env differs from what gen renders (" + path + ") in comments or layout only: the autoscaler reads the same"})
	}
	return d.out
}

// kubeEnvDiff collects the differences between a rendered kube-env
// (want) and a template's (got), each a nodecheck.Finding.
type kubeEnvDiff struct{ out []nodecheck.Finding }

func (d *kubeEnvDiff) add(key, want, got, msg string) {
	d.out = append(d.out, nodecheck.Finding{Kind: KubeEnv, Key: key, Want: want, Got: got, Message: "kube-env: " + msg})
}

// labels reports each label missing, different or extra.
func (d *kubeEnvDiff) labels(w, g map[string]string) {
	for _, k := range model.SortedKeys(w) {
		gv, ok := g[k]
		switch {
		case !ok:
			d.add(k, w[k], "", fmt.Sprintf("label %s missing (want %s)", k, w[k]))
		case gv != w[k]:
			d.add(k, w[k], gv, fmt.Sprintf("label %s is %s, the source says %s", k, gv, w[k]))
		}
	}
	for _, k := range model.SortedKeys(g) {
		if _, ok := w[k]; !ok {
			d.add(k, "", g[k], fmt.Sprintf("label %s=%s is not in the source", k, g[k]))
		}
	}
}

// taints reports each taint missing, different (in value or effect) or
// extra, by key.
func (d *kubeEnvDiff) taints(want, got []kubeenv.Taint) {
	byKey := func(ts []kubeenv.Taint) map[string]string {
		m := map[string]string{}
		for _, t := range ts {
			m[t.Key] = t.Value + ":" + t.Effect
		}
		return m
	}
	wTaints, gTaints := byKey(want), byKey(got)
	for _, k := range model.SortedKeys(wTaints) {
		gv, ok := gTaints[k]
		switch {
		case !ok:
			d.add(k, k+"="+wTaints[k], "", fmt.Sprintf("taint %s=%s missing", k, wTaints[k]))
		case gv != wTaints[k]:
			d.add(k, k+"="+wTaints[k], k+"="+gv, fmt.Sprintf("taint %s=%s, the source says %s=%s", k, gv, k, wTaints[k]))
		}
	}
	for _, k := range model.SortedKeys(gTaints) {
		if _, ok := wTaints[k]; !ok {
			d.add(k, "", k+"="+gTaints[k], fmt.Sprintf("taint %s=%s is not in the source", k, gTaints[k]))
		}
	}
}

// values reports each other variable the autoscaler reads that differs:
// the reservations, eviction thresholds, extended resources, autoscaling
// options, and the node's OS, distribution and architecture.
func (d *kubeEnvDiff) values(wt, gt *kubeenv.Template) {
	for _, v := range []struct {
		name string
		w, g map[string]string
	}{
		{kubeenv.VarKubeReserved, wt.KubeReserved, gt.KubeReserved},
		{kubeenv.VarEvictionHard, wt.EvictionHard, gt.EvictionHard},
		{kubeenv.VarExtendedResources, wt.ExtendedResources, gt.ExtendedResources},
		{kubeenv.VarAutoscalingOptions, wt.AutoscalingOpts, gt.AutoscalingOpts},
	} {
		if !maps.Equal(v.w, v.g) {
			d.add(v.name, pairs(v.w), pairs(v.g), fmt.Sprintf("%s is %q, the source says %q", v.name, pairs(v.g), pairs(v.w)))
		}
	}
	for _, v := range [][3]string{{kubeenv.VarOS, wt.OS, gt.OS}, {kubeenv.VarOSDistribution, wt.OSDistribution, gt.OSDistribution}, {kubeenv.VarArch, wt.Arch, gt.Arch}} {
		if v[1] != v[2] {
			d.add(v[0], v[1], v[2], fmt.Sprintf("%s is %s, the source says %s", v[0], v[2], v[1]))
		}
	}
}

func pairs(m map[string]string) string {
	var s []string
	for _, k := range model.SortedKeys(m) {
		s = append(s, k+"="+m[k])
	}
	return strings.Join(s, ",")
}

func checkScript(got *string, want []byte, path string) []nodecheck.Finding {
	if got == nil {
		return []nodecheck.Finding{{Kind: StartupScript, Message: "no startup-script metadata: new VMs never join"}}
	}
	if *got == string(want) {
		return nil
	}
	d := diff.Diff("template startup-script", []byte(*got), path+" (generated)", want)
	return []nodecheck.Finding{{Kind: StartupScript, Message: "startup-script differs from what gen renders (" + path + ")", Diff: string(d)}}
}

// checkAccelerators compares guestAccelerators with the group's GPU. The
// autoscaler counts the nvidia-* entries as the template's nvidia.com/gpu.
// Accelerator-optimized machine types come with their GPUs: an empty list
// is fine there (nodegen declares them in kube-env's extended_resources).
func checkAccelerators(g *model.NodeGroup, accs []model.AcceleratorConfig) []nodecheck.Finding {
	got := map[string]int64{}
	for _, a := range accs {
		got[lastSegment(a.AcceleratorType)] += a.AcceleratorCount
	}
	want := map[string]int64{}
	if g.GPU != nil {
		want[g.GPU.Type] = int64(g.GPU.Count)
		if info, ok := gce.Accelerator(g.GPU.Type); ok && info.Attach == gce.BuiltIn && len(got) == 0 {
			return nil
		}
	}
	if maps.Equal(got, want) {
		return nil
	}
	str := func(m map[string]int64) string {
		if len(m) == 0 {
			return "none"
		}
		var s []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			s = append(s, fmt.Sprintf("%d × %s", m[k], k))
		}
		return strings.Join(s, ", ")
	}
	return []nodecheck.Finding{{Kind: GuestGPU, Want: str(want), Got: str(got),
		Message: fmt.Sprintf("guestAccelerators %s, the source says %s", str(got), str(want))}}
}

// checkBootDisk compares the boot disk size: the autoscaler derives the
// template node's ephemeral storage from it, and gives none without it.
func checkBootDisk(g *model.NodeGroup, disks []model.AttachedDisk) []nodecheck.Finding {
	for _, d := range disks {
		if !d.Boot || d.InitializeParams.DiskSizeGb == 0 {
			continue
		}
		if got := d.InitializeParams.DiskSizeGb; got != int64(g.BootDiskSizeGb) {
			return []nodecheck.Finding{{Kind: BootDisk, Want: strconv.Itoa(g.BootDiskSizeGb), Got: strconv.FormatInt(got, 10),
				Message: fmt.Sprintf("boot disk %d GB, the source says %d GB", got, g.BootDiskSizeGb)}}
		}
		return nil
	}
	return []nodecheck.Finding{{Kind: BootDisk, Want: strconv.Itoa(g.BootDiskSizeGb),
		Message: "no boot disk with initializeParams.diskSizeGb: the autoscaler gives the template node no ephemeral-storage"}}
}
