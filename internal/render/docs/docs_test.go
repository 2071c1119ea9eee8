package docs_test

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/docs"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// docSection returns the text of the "## name" section of the docs.
func docSection(t *testing.T, doc, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+name+"\n")
	if !ok {
		t.Fatalf("the docs have no section %q", name)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// fenced returns the body of the first ```lang block after marker.
func fenced(t *testing.T, text, marker, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, marker)
	if !ok {
		t.Fatalf("no %q", marker)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("no ```%s block after %q", lang, marker)
	}
	body, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("unterminated ```%s block", lang)
	}
	return body
}

// nodeOf builds the Node a group's VM registers as: its labels (with the
// zone, region and instance-type labels the join script adds to cloud
// nodes, and what the kubelet sets itself) and its join taints. For an
// onprem group it is a node labelled as the docs ask.
func nodeOf(src *model.Source, g *model.NodeGroup, withStartupTaint bool) *corev1.Node {
	labels := maps.Clone(g.NodeLabels)
	name := g.Name + "-node"
	labels["kubernetes.io/hostname"] = name
	labels["kubernetes.io/os"] = "linux"
	labels["kubernetes.io/arch"] = "amd64"
	if g.Cloud() {
		maps.Copy(labels, model.VerifiedLabels(g)) // the approver's, once it checked the VM
		labels[model.ZoneLabel] = g.Zones[0]
		labels[model.RegionLabel] = gce.ZoneRegion(g.Zones[0])
		labels[model.InstanceTypeLabel] = g.MachineType
		labels["kubernetes.io/arch"] = g.Arch
	}
	taints := g.Taints
	if withStartupTaint {
		taints = g.JoinTaints()
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	for _, t := range taints {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return n
}

// lands reports whether the scheduler's node-affinity and taint filters
// let pod onto node, and if not, why.
func lands(pod *corev1.Pod, node *corev1.Node) (bool, string) {
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	if err != nil {
		return false, err.Error()
	}
	if !ok {
		return false, "node selector does not match"
	}
	if taint, found := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false); found {
		return false, "untolerated taint " + taint.ToString()
	}
	return true, ""
}

// TestDocsSnippetsLandPods decodes each group's nodeSelector/tolerations
// snippet strictly into a PodSpec and checks with the scheduler's helpers
// that the pod lands on the group's node, waits while the node still has
// its startup taint, and lands on no other group's node.
func TestDocsSnippetsLandPods(t *testing.T) {
	src, files := testsrc.Example(t)
	doc := string(files[layout.DocsPath])
	pods := map[string]*corev1.Pod{}
	for _, g := range src.Groups() {
		snippet := fenced(t, docSection(t, doc, g.Name), "### Run a pod here", "yaml")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if err := yaml.UnmarshalStrict([]byte(snippet), &pod.Spec); err != nil {
			t.Fatalf("%s: strict decode of the snippet into a PodSpec: %v\n%s", g.Name, err, snippet)
		}
		if len(pod.Spec.NodeSelector) == 0 {
			t.Errorf("%s: the snippet selects no node", g.Name)
		}
		pods[g.Name] = pod
		if ok, why := lands(pod, nodeOf(src, g, false)); !ok {
			t.Errorf("%s: the documented pod does not land on the group's node: %s", g.Name, why)
		}
		if g.StartupTaint != nil {
			if ok, _ := lands(pod, nodeOf(src, g, true)); ok {
				t.Errorf("%s: the documented pod lands while the startup taint is still on the node", g.Name)
			}
		}
	}
	for name, pod := range pods {
		for _, other := range src.Groups() {
			if other.Name == name {
				continue
			}
			if ok, _ := lands(pod, nodeOf(src, other, false)); ok {
				t.Errorf("the pod documented for %s also lands on %s", name, other.Name)
			}
		}
	}
}

// TestDocsTable checks the overview table has one row per group with its
// real shape.
func TestDocsTable(t *testing.T) {
	src, files := testsrc.Example(t)
	doc := string(files[layout.DocsPath])
	if !strings.HasPrefix(doc, "<!-- Code generated by nodegen from nodegroups. DO NOT EDIT. -->\n") {
		t.Errorf("docs header: %q", strings.SplitN(doc, "\n", 2)[0])
	}
	table := docSection(t, doc, "Overview")
	for _, g := range src.Groups() {
		var row string
		for _, line := range strings.Split(table, "\n") {
			if strings.HasPrefix(line, "| ["+g.Name+"]") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("no table row for %s", g.Name)
			continue
		}
		cells := strings.Split(strings.Trim(row, "|"), " | ")
		if len(cells) != 10 {
			t.Fatalf("%s: %d cells in %q", g.Name, len(cells), row)
		}
		if strings.TrimSpace(cells[1]) != g.Kind {
			t.Errorf("%s: kind cell %q", g.Name, cells[1])
		}
		for _, z := range g.Zones {
			if !strings.Contains(cells[2], z) {
				t.Errorf("%s: zones cell lacks %s", g.Name, z)
			}
		}
		// min and max are per zone; the group total multiplies them by the zones.
		if g.Autoscaled() {
			if want := fmt.Sprintf("%d–%d in %d zone(s)", g.Min*len(g.Zones), g.Max*len(g.Zones), len(g.Zones)); strings.TrimSpace(cells[6]) != want {
				t.Errorf("%s: group total cell %q, want %q", g.Name, cells[6], want)
			}
		}
		for k, v := range g.NodeLabels {
			if !strings.Contains(cells[7], "`"+k+"="+v+"`") {
				t.Errorf("%s: labels cell lacks %s=%s", g.Name, k, v)
			}
		}
		for _, tt := range g.Taints {
			if !strings.Contains(cells[8], "`"+tt.String()+"`") {
				t.Errorf("%s: taints cell lacks %s", g.Name, tt)
			}
		}
		if g.StartupTaint != nil && !strings.Contains(cells[9], "`"+g.StartupTaint.String()+"`") {
			t.Errorf("%s: startup taint cell %q", g.Name, cells[9])
		}
		if g.GPU != nil && !strings.Contains(cells[4], g.GPU.Type) {
			t.Errorf("%s: GPU cell %q", g.Name, cells[4])
		}
	}
}

// TestDocsScaleUpSequence checks the GPU scale-up diagram names the
// group's real MIGs, template, taint and remover, in the order things
// happen.
func TestDocsScaleUpSequence(t *testing.T) {
	src, files := testsrc.Example(t)
	doc := string(files[layout.DocsPath])
	gpu := src.GPUGroups()
	if len(gpu) == 0 {
		t.Fatal("the example has no GPU group")
	}
	for _, g := range gpu {
		seq := fenced(t, docSection(t, doc, g.Name), "### GPU scale-up", "mermaid")
		if !strings.HasPrefix(seq, "sequenceDiagram\n") {
			t.Errorf("%s: not a sequence diagram", g.Name)
		}
		for _, z := range g.Zones {
			if !strings.Contains(seq, src.Cluster.MIGName(g, z)) {
				t.Errorf("%s: the diagram lacks MIG %s", g.Name, src.Cluster.MIGName(g, z))
			}
		}
		steps := []string{
			"Pending",
			"kube-env",
			"resize",
			src.Cluster.TemplatePrefix(g),
			"kubeadm",
			"taint " + g.StartupTaint.String(),
			"no second scale-up",
			model.GPUValidationsDir,
			"TR->>N",
			"remove taint " + g.StartupTaint.Key,
			"bind",
		}
		at := 0
		for _, s := range steps {
			i := strings.Index(seq[at:], s)
			if i < 0 {
				t.Errorf("%s: %q missing or out of order in\n%s", g.Name, s, seq)
				break
			}
			at += i
		}
		if !strings.Contains(seq, "participant TR as DaemonSet "+g.TaintRemoverDaemonSet()+"\n") {
			t.Errorf("%s: the diagram does not name the taint remover %s", g.Name, g.TaintRemoverDaemonSet())
		}
		if strings.ContainsAny(seq, ";#") {
			t.Errorf("%s: the diagram contains ';' or '#', which Mermaid reads as syntax", g.Name)
		}
	}
	for _, g := range src.Groups() {
		if !slices.Contains(gpu, g) && strings.Contains(docSection(t, doc, g.Name), "sequenceDiagram") {
			t.Errorf("%s has a GPU scale-up diagram", g.Name)
		}
	}
}

// mutations change one thing about a group each; together they touch
// every field a renderer reads.
var mutations = map[string]func(*model.NodeGroup){
	"label": func(g *model.NodeGroup) { g.Labels["example.com/probe"] = "x" },
	"taint": func(g *model.NodeGroup) {
		g.Taints = append(g.Taints, model.Taint{Key: "example.com/probe", Value: "x", Effect: "NoSchedule"})
	},
	"description": func(g *model.NodeGroup) { g.Description += " (probe)" },
	"size": func(g *model.NodeGroup) {
		g.Max++
		if g.Kind == model.KindGCEStatic {
			g.Min++
		}
	},
	"zone": func(g *model.NodeGroup) {
		if g.Cloud() {
			g.Zones = append(g.Zones, "us-central1-f")
		}
	},
	"machine": func(g *model.NodeGroup) {
		if g.Cloud() {
			g.MachineType = "n1-standard-16"
		}
	},
	"image":   func(g *model.NodeGroup) { g.Image += "-probe" },
	"disk":    func(g *model.NodeGroup) { g.BootDiskSizeGb += 10 },
	"spot":    func(g *model.NodeGroup) { g.Spot = !g.Spot },
	"reserve": func(g *model.NodeGroup) { g.Kubelet.KubeReserved["cpu"] = "150m" },
	"gpu": func(g *model.NodeGroup) {
		if g.GPU != nil {
			g.GPU.Count++
		}
	},
	"provision": func(g *model.NodeGroup) {
		if g.Cloud() {
			g.Autoscaling.MaxNodeProvisionTime = model.DurationOf(2 * time.Hour)
		}
	},
	"startup": func(g *model.NodeGroup) {
		if g.StartupTaint != nil {
			g.StartupTaint.Value = "probe"
		}
	},
}

// TestProvenanceIsWhatChanges proves the "which source file produced which
// artifact" graph by experiment: for each group, the artifacts that change
// under the mutations above are exactly those the graph draws from the
// group's file.
func TestProvenanceIsWhatChanges(t *testing.T) {
	src, files := testsrc.Example(t)
	edges := docs.Provenance(src, files.Paths())
	doc := string(files[layout.DocsPath])
	graph := fenced(t, doc, "## Which source file produced which artifact", "mermaid")
	for _, e := range edges {
		if !strings.Contains(graph, `["`+e.To+`"]`) {
			t.Errorf("the graph lacks artifact %s", e.To)
		}
	}
	for _, g := range src.Groups() {
		origin := src.Origins[g.Name]
		if origin == src.ClusterOrigin || origin == "" {
			t.Fatalf("group %s has origin %q", g.Name, origin)
		}
		changed := map[string]bool{}
		for name, mutate := range mutations {
			msrc, _ := testsrc.Example(t)
			mg := msrc.NodeGroups[g.Name]
			if mg.Kubelet == nil {
				mg.Kubelet = &model.Kubelet{KubeReserved: map[string]string{}}
			}
			mutate(mg)
			msrc.Resolve()
			mfiles, err := render.All(msrc)
			if err != nil {
				t.Fatalf("%s after mutation %s: %v", g.Name, name, err)
			}
			for _, p := range files.Paths() {
				if !bytes.Equal(files[p], mfiles[p]) {
					changed[p] = true
				}
			}
		}
		var drawn []string
		for _, e := range edges {
			if e.From == origin {
				drawn = append(drawn, e.To)
			}
		}
		slices.Sort(drawn)
		if got := slices.Sorted(maps.Keys(changed)); !slices.Equal(got, drawn) {
			t.Errorf("%s (%s): mutations change\n%v\nthe graph draws\n%v", g.Name, origin, got, drawn)
		}
	}
	if src.ClusterOrigin == "" || !strings.Contains(graph, `["`+strings.TrimPrefix(src.ClusterOrigin, src.Name+"/")+`"]`) {
		t.Errorf("the graph lacks the cluster's file %q", src.ClusterOrigin)
	}
}
