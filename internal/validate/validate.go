// Package validate checks a decoded source against the rules of every
// consumer of nodegen's artifacts (kubelet, kube-env, the autoscaler, GCE)
// that the CUE schema cannot express, and reports each problem at the
// position of the value that causes it.
package validate

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeenv"
	"github.com/nodegen/nodegen/internal/model"
	secretscan "github.com/nodegen/nodegen/internal/secrets"
	"github.com/nodegen/nodegen/internal/source"
)

// Positioner finds where a value was written.
type Positioner interface {
	Pos(sels ...cue.Selector) token.Pos
	KeyPos(sels ...cue.Selector) token.Pos
}

// Loaded checks a loaded source completely: every problem CUE found
// (l.Findings), secrets in the files and in the resolved values (package
// secrets), duplicate node groups in the files, and the Go rules on every
// part of the source that decoded. It returns the problems as one sorted
// list (nil: the source is valid).
func Loaded(l *source.Loaded) diag.List {
	// A secret is the problem to report about the value that holds it,
	// whatever else is wrong with that value.
	secrets := secretscan.Source(l.Syntax, l.Value, l)
	hasSecret := map[string]bool{}
	for _, f := range secrets {
		hasSecret[f.Path] = true
	}
	var list diag.List
	for _, f := range l.Findings {
		if !hasSecret[f.Path] {
			list = append(list, f)
		}
	}
	list = append(list, secrets...)
	list = append(list, DuplicateGroups(l.Syntax)...)
	if !l.Broken.All {
		for _, m := range l.Members {
			if !m.Broken.All {
				list = append(list, check(m.Source, m, m.Broken)...)
			}
		}
		list = append(list, Fleet(l)...)
		list = append(list, Mesh(l)...)
	}
	return list.Sorted()
}

type checker struct {
	src    *model.Source
	pos    Positioner
	broken source.Broken
	list   diag.List
	// hostDriver is src.HostDriver(), decided once for all groups (it
	// reads every cloud group).
	hostDriver bool
}

// Source checks a complete, decoded source and returns every finding.
func Source(src *model.Source, pos Positioner) diag.List {
	return check(src, pos, source.Broken{})
}

// check checks src, skipping what broken says did not decode.
func check(src *model.Source, pos Positioner, broken source.Broken) diag.List {
	c := &checker{src: src, pos: pos, broken: broken, hostDriver: src.HostDriver()}
	if !broken.Cluster {
		c.cluster()
		c.region()
		c.versions()
	}
	for _, g := range src.Groups() {
		c.group(g)
	}
	c.partialGroups()
	if !broken.Cluster {
		c.instanceNamePrefixes()
		c.list = append(c.list, secretRoles([]secretMember{{src, pos}}, false)...)
		c.imageFamilies()
		c.list = append(c.list, familyImages([]secretMember{{src, pos}}, false)...)
	}
	c.startupTaintFlags()
	return c.list.Sorted()
}

// partialGroups runs the group checks on the groups that decoded only
// without the fields the schema refused (source.PartialGroup), so that
// their other mistakes are reported in the same run; a finding about a
// refused field (now the schema's default) is left out.
func (c *checker) partialGroups() {
	for _, name := range model.SortedKeys(c.broken.Partial) {
		pg := c.broken.Partial[name]
		sub := &checker{src: c.src, pos: c.pos, broken: c.broken, hostDriver: c.hostDriver}
		sub.group(pg.Group)
		for _, f := range sub.list {
			if !slices.ContainsFunc(pg.Refused, func(p string) bool { return f.Path == p || strings.HasPrefix(f.Path, p+".") }) {
				c.list = append(c.list, f)
			}
		}
	}
}

// at records a finding about the value at path.
func (c *checker) at(path []cue.Selector, format string, args ...any) {
	c.list.Add(c.pos.Pos(path...), c.path(path), format, args...)
}

// atKey records a finding about the key of the field at path.
func (c *checker) atKey(path []cue.Selector, format string, args ...any) {
	c.list.Add(c.pos.KeyPos(path...), c.path(path), format, args...)
}

// prefixer is a Positioner of a part of the source (a fleet's cluster):
// paths relative to it are written after its prefix in findings.
type prefixer interface{ PathPrefix() string }

// path names path in a finding, from the root of the source.
func (c *checker) path(path []cue.Selector) string {
	p := pathString(path)
	if pp, ok := c.pos.(prefixer); ok && pp.PathPrefix() != "" {
		if p == "" {
			return pp.PathPrefix()
		}
		return pp.PathPrefix() + "." + p
	}
	return p
}

func pathString(path []cue.Selector) string {
	labels := make([]string, len(path))
	for i, s := range path {
		labels[i] = s.String()
	}
	return strings.Join(labels, ".")
}

func sel(parts ...any) []cue.Selector {
	out := make([]cue.Selector, 0, len(parts))
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, cue.Str(p))
		case int:
			out = append(out, cue.Index(p))
		case cue.Selector:
			out = append(out, p)
		}
	}
	return out
}

// join appends selectors to a copy of path.
func join(path []cue.Selector, parts ...any) []cue.Selector {
	return append(slices.Clone(path), sel(parts...)...)
}

func (c *checker) cluster() {
	cl := &c.src.Cluster
	jt := cl.JoinToken
	if (jt.SecretManager == nil) == (jt.MetadataKey == "") {
		c.at(sel("cluster", "joinToken"), "set exactly one of secretManager or metadataKey")
	}
	c.joinToken()
	c.caCertHashes(cl.CACertHashes)
	c.endpoint(cl.ControlPlaneEndpoint)
	c.network()
	c.egressImages()
	c.podNetwork()
	c.nodeLifecycle()
	c.rollout()
	c.containerImage(sel("cluster", "taintRemover", "image"), cl.TaintRemover.Image)
	c.capacity()
	c.capBounds()
	c.autoscalerRelease(false)
	c.kubernetesAcceptNoEffect()
	c.patchedImage()
	c.declaredNodes()

	name := cl.Autoscaler.NodeGroup
	g, ok := c.src.NodeGroups[name]
	p := sel("cluster", "autoscaler", "nodeGroup")
	switch {
	case c.broken.Groups[name]:
		// Its own findings say what is wrong with it.
	case !ok:
		if s := diag.SuggestNames(name, model.SortedKeys(c.src.NodeGroups)); len(s) > 0 {
			c.at(p, "no node group %q; did you mean %s?", name, diag.QuotedOrList(s))
		} else {
			c.at(p, "no node group %q: the autoscaler needs a dedicated gce-static node group", name)
		}
	case g.Kind != model.KindGCEStatic:
		c.at(p, "node group %q is %s; the autoscaler must run on a gce-static group (fixed size, never scaled away, with the GCE metadata server in reach)", name, g.Kind)
	case g.GPU != nil:
		c.at(p, "node group %q has GPUs; the autoscaler must run on a CPU-only group", name)
	case g.Max < 1:
		c.at(p, "node group %q has size 0: the autoscaler would never run", name)
	case len(g.Taints) == 0:
		c.at(p, "node group %q has no taint; taint it so that no other pod lands on the autoscaler's node", name)
	case !keepsPodsOff(g.Taints):
		c.at(sel("nodeGroups", name, "taints"), "the autoscaler's node group %q has only PreferNoSchedule taints, which do not keep other pods off its node (the scheduler only prefers other nodes); use effect NoSchedule or NoExecute", name)
	}
	c.autoscalerZones()
	c.spotFallback()
	c.iamCondition()
}

// CACertHashCommand prints the pin of a kubeadm cluster's CA, run on a
// control-plane node: the public key of /etc/kubernetes/pki/ca.crt in DER,
// hashed with SHA-256, as kubeadm join's --discovery-token-ca-cert-hash
// takes it (kubernetes/website, content/en/docs/reference/setup-tools/
// kubeadm/kubeadm-join.md; openssl pkey for RSA and ECDSA keys alike).
const CACertHashCommand = `openssl x509 -pubkey -noout -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex | sed 's/^.* /sha256:/'`

// caCertHashes refuses a placeholder pin: a SHA-256 of one repeated hex
// digit (the all-zero example) is no CA's public key, so every join would
// fail the CA check, long after vet and gen said nothing.
func (c *checker) caCertHashes(hashes []string) {
	for i, h := range hashes {
		hex, ok := strings.CutPrefix(h, "sha256:")
		if !ok || len(hex) != 64 || strings.Count(hex, hex[:1]) != len(hex) {
			continue // the schema's pattern, or a real-looking pin
		}
		c.at(sel("cluster", "caCertHashes", i), "%s is a placeholder, not the pin of your cluster's CA: every kubeadm join would refuse the control plane. On a control-plane node, %s prints it, and so does kubeadm token create --print-join-command (its --discovery-token-ca-cert-hash)", h, CACertHashCommand)
	}
}

// endpoint checks controlPlaneEndpoint: host:port, the host an IP address
// or a DNS name.
func (c *checker) endpoint(ep string) {
	p := sel("cluster", "controlPlaneEndpoint")
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		c.at(p, "%q is not host:port: %v", ep, err)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		c.at(p, "port %s is not between 1 and 65535", port)
	}
	c.endpointHost(p, host)
	if net.ParseIP(host) == nil && strings.Trim(host, "0123456789.") == "" {
		c.at(p, "host %q is made of digits and dots but is not an IPv4 address (four numbers from 0 to 255)", host)
	} else if net.ParseIP(host) == nil {
		if msgs := validation.IsDNS1123Subdomain(host); len(msgs) > 0 {
			c.at(p, "host %q is neither an IP address nor a DNS name: %s", host, strings.Join(msgs, "; "))
		}
	}
}

func (c *checker) group(g *model.NodeGroup) {
	base := sel("nodeGroups", g.Name)
	for _, k := range model.SortedKeys(g.Labels) {
		c.label(join(base, "labels", k), k, g.Labels[k])
	}
	keys := map[string]int{}
	for i, t := range g.Taints {
		p := join(base, "taints", i)
		c.taint(p, t)
		if j, dup := keys[t.Key]; dup {
			c.at(join(p, "key"), "taint key %q repeats taints[%d]: kube-env's node_taints holds one taint per key (the autoscaler keeps the last), so the template would differ from the node", t.Key, j)
		} else {
			keys[t.Key] = i
		}
		switch fix, near := nearMissStartupPrefix(t.Key); {
		case model.RegularTaintProblem(t.Key) != "":
			c.at(join(p, "key"), "%s", model.RegularTaintProblem(t.Key))
		case near:
			c.at(join(p, "key"), "taint %q looks like a startup taint with a misspelt prefix; did you mean startupTaint: {key: %q}?", t.Key, fix)
		}
	}
	if g.GPU == nil {
		c.gpuOperatorLabels(g, base)
	}
	c.migLabels(g, base)
	if g.Cloud() {
		c.cloudGroup(g, base, keys)
		c.familyOS(g)
	}
	c.autohealing(g, base)
	c.locality(g, base)
	c.reality(g, base)
	c.nodeShape(g, base)
	c.maxPods(g, base)
}

// gpuOperatorLabelPrefix is the namespace of the labels the NVIDIA GPU
// Operator puts on the nodes it finds GPUs on: nvidia.com/gpu.present
// (commonGPULabelKey), nvidia.com/gpu.deploy.<operand> (the driver, device
// plugin and other operand DaemonSets select nodes by them),
// nvidia.com/gpu.product and the others of GPU Feature Discovery
// (NVIDIA/gpu-operator controllers/state_manager.go).
const gpuOperatorLabelPrefix = "nvidia.com/gpu."

// gpuOperatorLabels reports the GPU Operator's labels on a group without
// GPUs: the operand DaemonSets and every pod that selects GPU nodes by
// them would land on its nodes, and the template node the autoscaler
// builds for the group would match such pods.
func (c *checker) gpuOperatorLabels(g *model.NodeGroup, base []cue.Selector) {
	for _, k := range model.SortedKeys(g.Labels) {
		if strings.HasPrefix(k, gpuOperatorLabelPrefix) {
			c.atKey(join(base, "labels", k), "label %q is the NVIDIA GPU Operator's, for nodes with GPUs, and node group %q has none: the operator's DaemonSets and the pods that select GPU nodes by it would land on these nodes; remove it (the operator sets its labels itself on the nodes it finds GPUs on)", k, g.Name)
		}
	}
}

// migLabelPrefix is the namespace of the GPU Operator's MIG labels:
// nvidia.com/mig.config, which a person sets to choose the partitioning
// the MIG manager applies to a node's GPUs, and the ones the operator sets
// itself (GPU Feature Discovery's nvidia.com/mig.capable and
// nvidia.com/mig.strategy, the MIG manager's nvidia.com/mig.config.state).
const (
	migLabelPrefix = "nvidia.com/mig."
	migConfigLabel = "nvidia.com/mig.config"
)

// migLabels refuses the GPU Operator's MIG labels on a group. nodegen
// does not model MIG: it declares a group's whole GPUs to the autoscaler
// (guestAccelerators, or kube-env's extended_resources: count, times the
// time-slicing replicas) and renders the operator's MIG strategy
// "single". The MIG manager is on in the chart (NVIDIA/gpu-operator
// v26.7.0 deployments/gpu-operator/values.yaml, migManager.enabled) and
// partitions the GPUs of a node labelled nvidia.com/mig.config: under
// "single" the node then advertises one nvidia.com/gpu per MIG instance,
// which the template the autoscaler scales a group from zero by does not
// (a pod asking for more than the group's count never scales it up), and
// under "mixed" it advertises none, only nvidia.com/mig-<profile>: a node
// with the GPU label and no GPU allocatable is an unready GPU node to the
// autoscaler for ever (kubernetes/autoscaler cluster-autoscaler-1.35.2
// processors/customresources/gpu_processor.go
// FilterOutNodesWithUnreadyResources, utils/gpu/gpu.go
// NodeHasGpuAllocatable).
func (c *checker) migLabels(g *model.NodeGroup, base []cue.Selector) {
	for _, k := range model.SortedKeys(g.Labels) {
		switch {
		case k == migConfigLabel:
			c.atKey(join(base, "labels", k), "label %q has the GPU Operator's MIG manager partition the group's GPUs, which nodegen does not model: under the MIG strategy nodegen renders (\"single\") each node would advertise one nvidia.com/gpu per MIG instance while the autoscaler sizes the group from its whole GPUs (gpu.count), and under \"mixed\" no nvidia.com/gpu at all, so the autoscaler would take every such node for an unready GPU node for ever (cluster-autoscaler-1.35.2 processors/customresources/gpu_processor.go); remove it: give pods whole GPUs, or share them with gpu.sharing.timeSlicing", k)
		case strings.HasPrefix(k, migLabelPrefix):
			c.atKey(join(base, "labels", k), "label %q is one the GPU Operator sets itself on the nodes it finds GPUs on (GPU Feature Discovery's nvidia.com/mig.capable and nvidia.com/mig.strategy, the MIG manager's nvidia.com/mig.config.state); remove it", k)
		}
	}
}

// kubeEnvSeparators are the characters kube-env splits its variables,
// lists, pairs and taint values at.
const kubeEnvSeparators = ",;=:"

// label checks a user label.
func (c *checker) label(p []cue.Selector, k, v string) {
	if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
		c.atKey(p, "label key %q: %s%s", k, strings.Join(msgs, "; "), kubeEnvNote(k))
	}
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		c.at(p, "label value %q: %s%s", v, strings.Join(msgs, "; "), kubeEnvNote(v))
	}
	if model.DerivedLabel(k) {
		c.atKey(p, "label %q is set by nodegen; remove it", k)
		return
	}
	if msg := model.LabelProblem(k); msg != "" {
		c.atKey(p, "%s", msg)
		return
	}
	if !model.KubeletMaySetLabel(k) {
		c.atKey(p, "label %q is in a kubernetes.io/k8s.io namespace the kubelet may not set on itself: the kubelet refuses to start with it (and NodeRestriction rejects it); use your own prefix, e.g. %q", k, suggestPrefix(k))
	}
}

// kubeEnvNote explains, for a value that has one, why a kube-env separator
// cannot be carried.
func kubeEnvNote(s string) string {
	i := strings.IndexAny(s, kubeEnvSeparators)
	if i < 0 {
		return ""
	}
	return fmt.Sprintf(" (kube-env cannot carry %q: the autoscaler splits node_labels and node_taints at ';', ',', '=' and ':')", s[i:i+1])
}

func suggestPrefix(key string) string {
	_, name, _ := strings.Cut(key, "/")
	return "example.com/" + name
}

func (c *checker) taint(p []cue.Selector, t model.Taint) {
	if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
		c.at(join(p, "key"), "taint key %q: %s%s", t.Key, strings.Join(msgs, "; "), kubeEnvNote(t.Key))
	}
	if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
		c.at(join(p, "value"), "taint value %q: %s%s", t.Value, strings.Join(msgs, "; "), kubeEnvNote(t.Value))
	}
	// The schema allows only these effects; checked here too so that a
	// source built in Go (tests, fuzzing, other callers) is held to it.
	switch corev1.TaintEffect(t.Effect) {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		c.at(join(p, "effect"), "taint effect %q: must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect)
	}
}

func (c *checker) cloudGroup(g *model.NodeGroup, base []cue.Selector, taintKeys map[string]int) {
	switch {
	case g.Min > g.Max:
		c.at(join(base, "min"), "min %d is greater than max %d", g.Min, g.Max)
	case g.Kind == model.KindGCE && g.Max < 1:
		c.at(join(base, "max"), "max must be at least 1 for an autoscaled group (the autoscaler rejects max 0)")
	case g.Kind == model.KindGCEStatic && g.Min != g.Max:
		c.at(join(base, "max"), "a gce-static group has a fixed size: min (%d) and max (%d) must be equal", g.Min, g.Max)
	}
	seen := map[string]int{}
	for i, z := range g.Zones {
		if j, dup := seen[z]; dup {
			c.at(join(base, "zones", i), "zone %s repeats zones[%d]: one zonal MIG per zone", z, j)
		}
		seen[z] = i
	}
	if !c.broken.Cluster {
		c.names(g, base)
	}
	c.gpu(g, base)
	if !c.broken.Cluster {
		c.acceleratorZones(g, base)
	}
	c.kubelet(g, base)
	c.joinDeadline(g, base)
	if st := g.StartupTaint; st != nil {
		p := join(base, "startupTaint")
		c.taint(p, *st)
		if _, dup := taintKeys[st.Key]; dup {
			c.at(join(p, "key"), "startup taint %q is also a regular taint of the group; the remover would delete a taint the group must keep", st.Key)
		}
		if msg := model.StartupTaintProblem(st.Key); msg != "" {
			c.at(join(p, "key"), "%s", msg)
		} else if fix, ok := nearMissStartupPrefix(st.Key); ok {
			c.at(join(p, "key"), "the autoscaler would not treat %q as a startup taint; did you mean %q?", st.Key, fix)
		}
		if st.Effect == "PreferNoSchedule" {
			c.at(join(p, "effect"), "a PreferNoSchedule startup taint does not keep pods off the node until its GPUs are ready; use NoSchedule")
		}
		if g.GPU == nil {
			c.at(p, "a startup taint needs a GPU group: the taint remover removes it once the GPU Operator has validated the GPUs")
		}
	}
}

// names checks the GCE names nodegen derives from the cluster and group
// names, and that the group's zones lie in the cluster's region.
func (c *checker) names(g *model.NodeGroup, base []cue.Selector) {
	cl := &c.src.Cluster
	region := cl.GCP.Region
	_, known := gce.RegionZones(region) // an unknown region is reported at cluster.gcp.region
	for i, z := range g.Zones {
		if !known {
			break
		}
		if gce.ZoneRegion(z) != region {
			c.at(join(base, "zones", i), "zone %s is not in region %s", z, region)
		} else {
			c.zoneExists(join(base, "zones", i), z)
		}
	}
	// GCE names: MIG <cluster>-<group>-<zone> ≤ 63; base instance name ≤ 58;
	// instance template name_prefix <cluster>-<group>- ≤ 54. One finding
	// for all: the fix is the same.
	var long []string
	for _, z := range g.Zones {
		if n := cl.MIGName(g, z); len(n) > 63 {
			long = append(long, fmt.Sprintf("MIG name %s is %d characters (GCE allows 63)", n, len(n)))
			break
		}
	}
	if n := cl.BaseInstanceName(g); len(n) > 58 {
		long = append(long, fmt.Sprintf("base instance name %s is %d characters (GCE allows 58)", n, len(n)))
	}
	if n := cl.TemplatePrefix(g); len(n) > 54 {
		long = append(long, fmt.Sprintf("instance template name prefix %s is %d characters (Terraform's name_prefix allows 54)", n, len(n)))
	}
	if len(long) > 0 {
		c.atKey(base, "%s: shorten the cluster or group name", strings.Join(long, "; "))
	}
}

// gpu checks a cloud group's GPUs against its machine type.
func (c *checker) gpu(g *model.NodeGroup, base []cue.Selector) {
	m := g.Shape.Machine
	if g.GPU == nil {
		if m != nil && m.HasBuiltInGPUs() {
			c.at(join(base, "machineType"), "machine type %s comes with %d %s GPU(s); declare them with gpu: {type: %q, count: %d} so that the autoscaler, the GPU label and the startup taint know about them",
				m.Name, m.GPUCount, m.GPUType, m.GPUType, m.GPUCount)
		}
		return
	}
	if _, ok := gce.Accelerator(g.GPU.Type); !ok {
		if s := diag.SuggestNames(g.GPU.Type, gce.AcceleratorNames()); len(s) > 0 {
			c.at(join(base, "gpu", "type"), "unknown accelerator type %q; did you mean %s?", g.GPU.Type, diag.QuotedOrList(s))
		} else {
			c.at(join(base, "gpu", "type"), "unknown accelerator type %q; known: %s", g.GPU.Type, strings.Join(gce.AcceleratorNames(), ", "))
		}
		return
	}
	if m == nil {
		return // reported by machine()
	}
	err := m.CheckGPU(g.GPU.Type, g.GPU.Count)
	if err == nil {
		return
	}
	// When another count would do on this machine type, the count is wrong;
	// otherwise the type does not fit the machine.
	field := "type"
	for n := 1; n <= 16; n++ {
		if m.CheckGPU(g.GPU.Type, n) == nil {
			field = "count"
			break
		}
	}
	c.at(join(base, "gpu", field), "%v", err)
}

// percentage matches a kubelet eviction threshold given as a percentage.
var percentage = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?%$`)

// kubelet checks that the reservations are quantities: they go into the
// kubelet's configuration and, summed, into kube-env's kube_reserved.
func (c *checker) kubelet(g *model.NodeGroup, base []cue.Selector) {
	if g.Kubelet == nil {
		return
	}
	for _, part := range []struct {
		name string
		m    map[string]string
	}{{"kubeReserved", g.Kubelet.KubeReserved}, {"systemReserved", g.Kubelet.SystemReserved}} {
		for _, k := range model.SortedKeys(part.m) {
			v := part.m[k]
			q, err := resource.ParseQuantity(v)
			switch {
			case err != nil:
				c.at(join(base, "kubelet", part.name, k), "%q is not a Kubernetes quantity (e.g. 100m, 512Mi, 1Gi)", v)
			case q.Sign() < 0:
				c.at(join(base, "kubelet", part.name, k), "a reservation cannot be negative: %s", v)
			}
		}
	}
	for _, k := range model.SortedKeys(g.Kubelet.EvictionHard) {
		v := g.Kubelet.EvictionHard[k]
		p := join(base, "kubelet", "evictionHard", k)
		if _, ok := model.DefaultEvictionHard[k]; !ok {
			c.at(p, "not a hard eviction signal nodegen sets: use one of %s", strings.Join(model.SortedKeys(model.DefaultEvictionHard), ", "))
			continue
		}
		if _, err := resource.ParseQuantity(v); err != nil && !percentage.MatchString(v) {
			c.at(p, "%q is neither a quantity (e.g. 100Mi) nor a percentage (e.g. 10%%)", v)
		}
	}
}

// instanceNamePrefixes reports two groups sharing a zone where one's base
// instance name is a prefix of the other's. The autoscaler finds the MIG
// of a VM it has not cached by that prefix (GceCache.GetMigForInstance:
// same project and zone, strings.HasPrefix(instance, baseInstanceName)),
// so it could take one group's VMs for the other's.
func (c *checker) instanceNamePrefixes() {
	cl := &c.src.Cluster
	// Every base instance name is the cluster's name, "-" and the group's
	// name, so one base name is a prefix of another exactly when the
	// group names are. In the groups sorted by name, the names that start
	// with a's name are the ones right after a: no pairwise loop.
	groups := c.src.CloudGroups()
	for i, a := range groups {
		an := cl.BaseInstanceName(a)
		for _, b := range groups[i+1:] {
			if !strings.HasPrefix(b.Name, a.Name) {
				break
			}
			shared := sharedZones(a, b)
			if len(shared) == 0 {
				continue
			}
			c.atKey(sel("nodeGroups", b.Name), "the VMs of this group (%s-xxxx) start with %s, the base instance name of node group %s, in %s: the autoscaler maps VMs to MIGs by that prefix and could count them in %s's MIG; rename one of the groups so neither name is a prefix of the other",
				cl.BaseInstanceName(b), an, a.Name, andList(shared), a.Name)
		}
	}
}

// sharedZones returns the zones of b that a has too, once each, in b's
// order: where VMs of the two groups can meet.
func sharedZones(a, b *model.NodeGroup) []string {
	var shared []string
	for _, z := range b.Zones {
		if slices.Contains(a.Zones, z) && !slices.Contains(shared, z) {
			shared = append(shared, z)
		}
	}
	return shared
}

// startupTaintFlags reports a startup taint that needs the autoscaler's
// --startup-taint flag when another group has a regular taint with the
// same key: the flag applies to every group, so the autoscaler would drop
// that regular taint from the other group's template node.
func (c *checker) startupTaintFlags() {
	type use struct {
		group *model.NodeGroup
		index int
	}
	var byKey map[string][]use // built on first need, in the groups' order
	for _, g := range c.src.CloudGroups() {
		st := g.StartupTaint
		if st == nil || kubeenv.IsStartupTaint(st.Key) {
			continue
		}
		if byKey == nil {
			byKey = map[string][]use{}
			for _, o := range c.src.Groups() {
				for i, t := range o.Taints {
					byKey[t.Key] = append(byKey[t.Key], use{o, i})
				}
			}
		}
		for _, u := range byKey[st.Key] {
			if u.group != g {
				c.at(sel("nodeGroups", g.Name, "startupTaint", "key"),
					"startup taint %q needs the autoscaler's --startup-taint flag, which applies to every node: the nodes of group %s, whose taints[%d] has that key, would count as not ready; use a key under %s", st.Key, u.group.Name, u.index, model.StartupTaintPrefix)
			}
		}
	}
}

// nearMissStartupPrefix reports a key whose prefix is one slip away from
// the autoscaler's startup-taint prefix, and the corrected key.
func nearMissStartupPrefix(key string) (string, bool) {
	prefix, name, ok := strings.Cut(key, "/")
	if !ok || model.ClassifyTaint(key) != model.TaintPlain || strings.HasPrefix(prefix, "status-taint.") {
		return "", false
	}
	want := strings.TrimSuffix(model.StartupTaintPrefix, "/")
	if strings.HasPrefix(prefix, "startup-taint.") || strings.Contains(prefix, "cluster-autoscaler") ||
		diag.Distance(prefix, want) <= 3 {
		return model.StartupTaintPrefix + name, true
	}
	return "", false
}

// andList formats "a", "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
