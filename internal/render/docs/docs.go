// Package docs renders out/docs: the pages a person reads to run the
// cluster (its node groups, day 0, a mesh cluster's install steps and a
// fleet's drawing), from the model and the files rendered before them.
package docs

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/schemadoc"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// markdownHeader is HeaderLine in Markdown's comment syntax.
func markdownHeader(origin string) string { return "<!-- " + layout.HeaderLine(origin) + " -->\n" }

// placement is what a pod spec needs to run on a group's nodes.
type placement struct {
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// podPlacement selects the group by its identity label (the verified one
// for a cloud group: model.NodeGroup.SelectorLabel) and tolerates its
// taints, but not its startup taint: a pod must wait until the node is
// ready for it.
func podPlacement(g *model.NodeGroup) placement {
	p := placement{NodeSelector: map[string]string{g.SelectorLabel(): g.Name}}
	if len(g.Taints) > 0 {
		p.Tolerations = manifest.Tolerations(g.Taints)
	}
	return p
}

// edge says that artifact To is rendered (in part) from source file From.
type edge struct{ From, To string }

// provenance lists which source file each artifact depends on: a group's
// file feeds its own artifacts and the shared ones that list it; the
// cluster's file feeds every artifact. paths are the rendered artifacts.
func provenance(src *model.Source, paths []string) []edge {
	origin := func(g *model.NodeGroup) string {
		if o := src.Origins[g.Name]; o != "" {
			return o
		}
		return src.Name
	}
	var out []edge
	rendered := make(map[string]bool, len(paths))
	for _, p := range paths {
		rendered[p] = true
	}
	seen := map[edge]bool{}
	add := func(from, to string) {
		if e := (edge{from, to}); rendered[to] && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	gpu := map[*model.NodeGroup]bool{}
	for _, g := range src.GPUGroups() {
		gpu[g] = true
	}
	extra := src.ExtraStartupTaints()
	for _, g := range src.Groups() {
		o := origin(g)
		if g.Cloud() {
			add(o, layout.KubeEnvPath(g.Name))
			add(o, layout.StartupScriptPath(g.Name))
			add(o, layout.TerraformGroupPath(g.Name))
			add(o, layout.TerraformOutputsPath)
			add(o, layout.TerraformIAMPath) // the Compute condition names its MIGs and instances
		}
		if g.Autoscaled() || (g.Cloud() && g.StartupTaint != nil && slices.Contains(extra, g.StartupTaint.Key)) {
			add(o, layout.AutoscalerFlagsPath)
			add(o, layout.AutoscalerValuesPath)
			add(o, layout.PriorityExpanderPath) // its MIGs and priority
		}
		if g.Name == src.Cluster.Autoscaler.NodeGroup {
			add(o, layout.AutoscalerValuesPath) // its nodeSelector and tolerations
			add(o, layout.NodeLifecyclePath)    // the collector's too
			add(o, layout.AutoscalerNodePath)   // its instance names and taints
		}
		if g.Cloud() {
			// The longest provisioning time; the autoscaler's group
			// also gives the renewer's placement.
			add(o, layout.JoinTokenRenewerPath)
			add(o, layout.NodeCSRApproverPath) // its instance names, zones and provisioning time
		}
		if gpu[g] {
			add(o, layout.TaintRemoverPath)
			add(o, layout.GPUOperatorValuesPath)
			if g.Autoscaled() {
				add(o, layout.NodeLifecyclePath) // the collector's stuck GPU nodes: its MIGs, GPUs and startup taint
			}
		}
		if g.Cloud() {
			add(o, layout.Day0DocsPath) // the quota; the autoscaler's group, its MIGs
			if _, family, ok := model.ImageFamily(g.Image); ok {
				add(o, layout.ImageBuildPath(family)) // its image family's version and GPUs
			}
		}
		if g.Kind == model.KindOnPrem {
			add(o, layout.OnpremJoinPath(g.Name)) // its nodes, labels and taints
		}
		if g.Autoscaled() || (g.Cloud() && g.StartupTaint != nil) || (g.Kind == model.KindOnPrem && len(g.Nodes) > 0 && src.Cluster.Autoscaler.Caps != nil) {
			// Its MIGs, max, startup taint and provisioning time; its
			// nodes' share of the caps.
			add(o, layout.MonitoringRulesPath)
			add(o, layout.MonitoringPrometheusRulePath)
		}
		if g.Autoscaled() || (g.Cloud() && g.StartupTaint != nil) {
			add(o, layout.MonitoringDashboardPath) // its MIGs, max and startup taint's panels
		}
		if g.Kind == model.KindOnPrem && len(g.Nodes) > 0 {
			add(o, layout.OnpremLabelNodesPath) // its nodes, labels and taints
			add(o, layout.Day0DocsPath)         // the step that runs it
		}
		add(o, layout.DocsPath)
	}
	cluster := src.ClusterOrigin
	if cluster == "" {
		cluster = src.Name
	}
	for _, p := range paths {
		add(cluster, p)
	}
	return out
}

// NodeGroups renders out/docs/nodegroups.md: every group at a glance, how a pod
// lands on each, the GPU scale-up sequence with the groups' real names,
// and which source file produced which artifact. Column descriptions come
// from the schema's comments. It must run last: the provenance graph
// lists the artifacts already in files.
func NodeGroups(src *model.Source, files layout.Files) error {
	sch, err := schemadoc.Load()
	if err != nil {
		return err
	}
	paths := append(files.Paths(), layout.DocsPath)
	slices.Sort(paths)
	var b bytes.Buffer
	d := &docWriter{b: &b, src: src, sch: sch}
	b.WriteString(markdownHeader(src.Name))
	d.intro()
	d.joinToken()
	d.table()
	d.capacity()
	if err := d.onpremProviderID(); err != nil {
		return err
	}
	for _, g := range src.Groups() {
		if err := d.group(g); err != nil {
			return fmt.Errorf("node group %s: docs: %w", g.Name, err)
		}
	}
	d.provenance(provenance(src, paths))
	files[layout.DocsPath] = b.Bytes()
	return nil
}

type docWriter struct {
	b   *bytes.Buffer
	src *model.Source
	sch *schemadoc.Schema
}

func (d *docWriter) p(format string, args ...any) { fmt.Fprintf(d.b, format, args...) }

// mdCell escapes text for a Markdown table cell.
func mdCell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}

func code(s string) string { return "`" + s + "`" }

// mdLineBreaks matches what ends a line in Markdown (CommonMark: LF, CR,
// CRLF), plus the Unicode line and paragraph separators and NEL, which
// some renderers also break on.
var mdLineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ", "\u0085", " ")

// mdText escapes free text for the middle of a Markdown paragraph line:
// line breaks become spaces (no block can start there), and every ASCII
// punctuation character that can start inline markup (emphasis, code
// spans, links and images, raw HTML, entities, strikethrough, table cells)
// is backslash-escaped, so the text renders as written.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range mdLineBreaks.Replace(s) {
		if strings.ContainsRune("\\`*_[]<>&|~!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdCode writes free text as a Markdown code span: line breaks become
// spaces, and the span is delimited by more backticks than the longest
// run of backticks in the text (padded with spaces when the text starts
// or ends with one), so nothing in it ends the span early.
func mdCode(s string) string {
	s = mdLineBreaks.Replace(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (strings.HasPrefix(s, " ") && strings.HasSuffix(s, " ")) {
		s = " " + s + " "
	}
	return fence + s + fence
}

func (d *docWriter) intro() {
	c := &d.src.Cluster
	d.p("\n# Node groups of cluster %s\n\n", c.Name)
	d.p("Kubernetes %s, control plane %s (on-prem, reached over the VPN). Cloud groups run in GCP project %s, region %s, as zonal MIGs sized by the Cluster Autoscaler %s, which runs on node group %s.\n",
		c.KubernetesVersion, code(c.ControlPlaneEndpoint), code(c.GCP.Project), code(c.GCP.Region), c.AutoscalerImageTag(), code(c.Autoscaler.NodeGroup))
	d.p("\nGenerated by nodegen from %s; edit the source and run `nodegen gen`. `nodegen docs --schema` prints every source field.\n", mdCode(d.src.Name+"/"))
}

func (d *docWriter) doc(path string) string {
	if f := d.sch.Field("nodeGroups." + schemadoc.GroupKey + "." + path); f != nil {
		return f.Doc
	}
	return ""
}

func sizeOf(g *model.NodeGroup) string {
	switch g.Kind {
	case model.KindGCE:
		return fmt.Sprintf("%d–%d per zone", g.Min, g.Max)
	case model.KindGCEStatic:
		return fmt.Sprintf("%d per zone (fixed)", g.Max)
	}
	return "—"
}

// totalOf is the group's size over all its zones (min and max are per
// zonal MIG).
func totalOf(g *model.NodeGroup) string {
	switch g.Kind {
	case model.KindGCE:
		return fmt.Sprintf("%d–%d in %d zone(s)", g.MinNodes(), g.MaxNodes(), len(g.Zones))
	case model.KindGCEStatic:
		return fmt.Sprintf("%d in %d zone(s) (fixed)", g.MaxNodes(), len(g.Zones))
	}
	return "—"
}

func gpuOf(g *model.NodeGroup) string {
	if g.GPU == nil {
		return "—"
	}
	if g.SharesGPUs() {
		return fmt.Sprintf("%d × %s, time-sliced ×%d", g.GPU.Count, g.GPU.Type, g.GPUReplicas())
	}
	return fmt.Sprintf("%d × %s", g.GPU.Count, g.GPU.Type)
}

func taintList(ts []model.Taint) string {
	if len(ts) == 0 {
		return "—"
	}
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = code(t.String())
	}
	return strings.Join(out, "<br>")
}

func labelList(m map[string]string) string {
	if len(m) == 0 {
		return "—"
	}
	var out []string
	for _, k := range model.SortedKeys(m) {
		out = append(out, code(k+"="+m[k]))
	}
	return strings.Join(out, "<br>")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (d *docWriter) table() {
	d.p("\n## Overview\n\n")
	d.p("| Group | Kind | Zones | Machine type | GPU | Min–max per zone | Group total | Labels | Taints | Startup taint |\n")
	d.p("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range d.src.Groups() {
		startup := "—"
		if g.StartupTaint != nil {
			startup = code(g.StartupTaint.String())
		}
		zones := "—"
		if len(g.Zones) > 0 {
			zones = strings.Join(g.Zones, "<br>")
		}
		// A cloud node also carries the verified group label, from the
		// node CSR approver once it checked the VM.
		labels := maps.Clone(g.NodeLabels)
		if g.Cloud() {
			maps.Copy(labels, model.VerifiedLabels(g))
		}
		d.p("| [%s](#%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			g.Name, g.Name, g.Kind, zones, orDash(mdCell(g.MachineType)), gpuOf(g), sizeOf(g), totalOf(g),
			labelList(labels), taintList(g.Taints), startup)
	}
	d.p("\nColumns, as the schema documents the fields:\n\n")
	for _, c := range []struct {
		name  string
		paths []string
	}{
		{"Kind", []string{"kind"}}, {"Zones", []string{"zones"}}, {"Machine type", []string{"machineType"}},
		{"GPU", []string{"gpu"}}, {"Min–max per zone", []string{"min", "max"}}, {"Labels", []string{"labels"}},
		{"Taints", []string{"taints"}}, {"Startup taint", []string{"startupTaint"}},
	} {
		var names, docs []string
		for _, p := range c.paths {
			names = append(names, code(p))
			docs = append(docs, d.doc(p))
		}
		d.p("- **%s** (%s): %s\n", c.name, strings.Join(names, ", "), strings.Join(docs, " "))
	}
	d.p("\nLabels are the ones every node of the group registers with and the Cluster Autoscaler's template declares; cloud nodes also get `%s`, `%s` and `%s` at join.",
		model.ZoneLabel, model.RegionLabel, model.InstanceTypeLabel)
	var self []string
	for _, k := range model.SortedKeys(model.KubeletSelfLabels(&model.NodeGroup{})) {
		self = append(self, code(k))
	}
	d.p(" The kubelet also sets %s on every node itself; kube-env declares them too, so that a pod selecting them can scale a group up from zero.\n", strings.Join(self, " and "))
}

func (d *docWriter) group(g *model.NodeGroup) error {
	c := &d.src.Cluster
	d.p("\n## %s\n\n", g.Name)
	origin := d.src.Origins[g.Name]
	if origin == "" {
		origin = d.src.Name
	}
	// The description is free text: it goes mid-line, where no block
	// (heading, list, code, table) can start, with its line breaks and
	// inline markup escaped.
	d.p("Kind `%s`, defined in %s", g.Kind, mdCode(origin))
	if desc := strings.TrimSuffix(strings.TrimSpace(g.Description), "."); desc != "" {
		d.p(": %s", mdText(desc))
	}
	d.p(".\n")
	switch {
	case g.Cloud():
		var migs []string
		for _, z := range g.Zones {
			migs = append(migs, code(c.MIGName(g, z)))
		}
		how := "sized by the Cluster Autoscaler"
		if !g.Autoscaled() {
			how = "of a fixed size, never scaled by the autoscaler"
		}
		d.p("\nMIGs (%s): %s. VMs are named `%s-xxxx` and boot from %s.\n", how, strings.Join(migs, ", "), c.BaseInstanceName(g), mdCode(g.Image))
		if g.Name == c.Autoscaler.NodeGroup {
			d.p("\nThe Cluster Autoscaler runs here (`out/%s%s` carries the placement below).\n", d.src.Tree, layout.AutoscalerValuesPath)
		}
	default:
		d.p("\nnodegen never scales these nodes. The selector below needs the group's labels on them, e.g. `kubectl label node <node> %s`.\n",
			strings.Join(pairs(g.NodeLabels), " "))
		d.onpremJoin(g)
		if l := g.Locality; l != nil {
			d.p("\nThe labels %s and %s carry the group's locality (region %s, zone %s): Istio's locality load balancing prefers endpoints in the caller's own region and zone.\n",
				code(model.RegionLabel), code(model.ZoneLabel), mdCode(l.Region), mdCode(l.Zone))
		}
	}

	snippet, err := yamlout.Marshal(podPlacement(g))
	if err != nil {
		return err
	}
	d.p("\n### Run a pod here\n\nAdd to the pod's `spec`:\n\n```yaml\n%s```\n", snippet)
	if g.GPU != nil {
		d.p("\nRequest the GPUs in each container's `resources.limits` (`%s`, at most %d per node).\n", model.GPUResource, g.AdvertisedGPUs())
		if g.SharesGPUs() {
			d.p("\nEach GPU is time-sliced %d ways: pods share it without memory or fault isolation.\n", g.GPUReplicas())
		}
	}
	if g.Spot {
		d.p("\nThe nodes are Spot VMs (`%s=true`): GCE may preempt them with %s notice.\n", model.SpotLabel, model.SpotPreemptionNotice)
		d.spotFallback(g)
	}
	if g.StartupTaint != nil {
		d.p("\nDo not tolerate the startup taint `%s`: new nodes carry it until their GPUs are validated, and a pod that tolerates it could start before the GPUs work.\n", g.StartupTaint.String())
	}
	if g.Cloud() && g.GPU != nil && g.StartupTaint != nil {
		d.sequence(g)
	}
	return nil
}

func pairs(m map[string]string) []string {
	var out []string
	for _, k := range model.SortedKeys(m) {
		out = append(out, k+"="+m[k])
	}
	return out
}

// sequence writes the GPU scale-up of g as a Mermaid sequence diagram.
func (d *docWriter) sequence(g *model.NodeGroup) {
	c := &d.src.Cluster
	var migs []string
	for _, z := range g.Zones {
		migs = append(migs, c.MIGName(g, z))
	}
	sel := g.SelectorLabel() + "=" + g.Name
	gpus := gpuOf(g)
	d.p("\n### GPU scale-up\n\n```mermaid\nsequenceDiagram\n")
	lines := []string{
		"participant P as Pod (nodeSelector " + sel + ")",
		"participant S as kube-scheduler",
		"participant CA as cluster-autoscaler (node group " + c.Autoscaler.NodeGroup + ")",
		"participant MIG as MIG " + strings.Join(migs, " or "),
		"participant N as Node " + c.BaseInstanceName(g) + "-xxxx",
		"participant OP as GPU Operator",
		"participant TR as DaemonSet " + g.TaintRemoverDaemonSet(),
		"S->>P: Pending: no node of " + g.Name + " exists or has a free GPU",
		"CA->>CA: simulate the pod on the template from kube-env (" + gpus + ", taints and labels of " + g.Name + ")",
		fmt.Sprintf("CA->>MIG: resize by +1 (at most %d per zone)", g.Max),
		"MIG->>N: create a VM from template " + c.TemplatePrefix(g) + "*",
		"N->>N: startup-script.sh joins with kubeadm",
		"Note over N: registers with taint " + g.StartupTaint.String(),
		"CA->>CA: startup taint: the node counts as coming up, no second scale-up",
		"OP->>N: driver, container toolkit, device plugin, validator",
		"OP->>N: validations " + model.GPUValidationsDir + "/(driver, toolkit, cuda, plugin)-ready",
		fmt.Sprintf("TR->>N: %s allocatable is %d: remove taint %s", model.GPUResource, g.AdvertisedGPUs(), g.StartupTaint.Key),
		"S->>P: bind to the node",
	}
	for _, l := range lines {
		d.p("  %s\n", mermaidText(l))
	}
	d.p("```\n")
}

// mermaidText keeps a line of Mermaid text free of the characters that
// end a statement or start a comment or entity there.
func mermaidText(s string) string {
	return strings.NewReplacer(";", ",", "#", "", "%%", "%").Replace(s)
}

// mermaidLabel writes text for the inside of a quoted Mermaid label
// (["..."]): the characters that would end the quotes, start an entity or a
// Markdown string, or be read as HTML are written as Mermaid's entity
// codes (#quot; and the like), and line breaks become spaces.
func mermaidLabel(s string) string {
	return strings.NewReplacer(
		"#", "#35;", "\"", "#quot;", "`", "#96;", "<", "#lt;", ">", "#gt;", "&", "#amp;",
		"\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ", "\u0085", " ",
	).Replace(s)
}

func (d *docWriter) provenance(edges []edge) {
	d.p("\n## Which source file produced which artifact\n\n")
	d.p("Paths under `out/%s`. The cluster's file feeds every artifact; a group's file feeds its own artifacts and the shared ones that list the group.\n\n", d.src.Tree)
	d.p("```mermaid\nflowchart LR\n")
	ids := map[string]string{}
	id := func(prefix, name string) string {
		if v, ok := ids[name]; ok {
			return v
		}
		v := fmt.Sprintf("%s%d", prefix, len(ids))
		ids[name] = v
		return v
	}
	var sources, artifacts []string
	seen := map[string]bool{}
	for _, e := range edges {
		if !seen["s"+e.From] {
			seen["s"+e.From] = true
			sources = append(sources, e.From)
		}
		if !seen["a"+e.To] {
			seen["a"+e.To] = true
			artifacts = append(artifacts, e.To)
		}
	}
	slices.Sort(sources)
	slices.Sort(artifacts)
	d.p("  subgraph source[\"%s/\"]\n", mermaidLabel(d.src.Name))
	for _, s := range sources {
		d.p("    %s[\"%s\"]\n", id("s", s), mermaidLabel(strings.TrimPrefix(s, d.src.Name+"/")))
	}
	d.p("  end\n  subgraph out[\"out/%s\"]\n", d.src.Tree)
	for _, a := range artifacts {
		d.p("    %s[\"%s\"]\n", id("a", a), a)
	}
	d.p("  end\n")
	// The cluster's file feeds everything: one edge to the out/ box.
	cluster := d.src.ClusterOrigin
	if cluster == "" {
		cluster = d.src.Name
	}
	d.p("  %s --> out\n", id("s", cluster))
	for _, e := range edges {
		if e.From == cluster {
			continue
		}
		d.p("  %s --> %s\n", id("s", e.From), id("a", e.To))
	}
	d.p("```\n")
}
