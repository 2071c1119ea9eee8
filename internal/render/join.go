package render

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// The per-VM values of the JoinConfiguration, left as placeholders in the
// document the startup script carries and substituted by the script once
// it has checked each value against a strict pattern (instance name and
// zone [a-z0-9-], token [a-z0-9.]).
//
// Why the substitution cannot change the document's structure:
//   - '@' occurs in no value nodegen renders into the document (label
//     and taint syntax, GCE names, the endpoint's host:port, sha256 CA
//     hashes, paths and durations exclude it), and JoinTemplate checks
//     that every '@' of the rendered document belongs to a placeholder.
//     So bash's ${doc//"@NODEGEN_X@"/...} replaces placeholders and
//     nothing else, and no substituted value contains '@'.
//   - JoinTemplate checks that a placeholder is either a whole scalar
//     written in quotes (the YAML encoder quotes a scalar starting with
//     '@'), or inside a plain scalar that also holds '/' or '=' outside
//     placeholders. Inside quotes the characters [a-z0-9.-] are literal;
//     a plain scalar holding '/' or '=' resolves to a string whatever
//     [a-z0-9.-] text is put into it, and such text adds no ": ", " #",
//     leading or trailing space that could end the scalar.
const (
	InstancePlaceholder = "@NODEGEN_INSTANCE_NAME@"
	ZonePlaceholder     = "@NODEGEN_ZONE@"
	TokenPlaceholder    = "@NODEGEN_JOIN_TOKEN@"
)

// Placeholders lists the placeholders in the order above.
var Placeholders = []string{InstancePlaceholder, ZonePlaceholder, TokenPlaceholder}

// JoinHeredocDelimiter ends the quoted heredoc that holds the
// JoinConfiguration in the startup script. A YAML line the encoder writes
// is a key followed by ':', a list item starting with '-', or indented;
// this word is none of these, and JoinTemplate checks it does not occur.
const JoinHeredocDelimiter = "NODEGEN_JOIN_CONFIGURATION"

// KubeletPatchHeredocDelimiter ends the heredoc of the kubelet patch.
const KubeletPatchHeredocDelimiter = "NODEGEN_KUBELET_PATCH"

// StateDir is where the startup script keeps its files on the VM: the
// join configuration (removed at every boot and on exit) and the kubeadm
// patches directory.
const StateDir = "/var/lib/nodegen"

// PatchesDir is the kubeadm patches directory the JoinConfiguration names.
const PatchesDir = StateDir + "/patches"

// JoinTimeouts are kubeadm's own timeouts of one join attempt for a
// script with the given deadline: kubeadm's defaults (discovery and TLS
// bootstrap 5m, API calls 1m), each cut to a third of the deadline so
// that an attempt that times out leaves room for another.
func JoinTimeouts(deadline time.Duration) *kubeadm.Timeouts {
	third := (deadline / 3).Truncate(time.Second)
	d := func(def time.Duration) *metav1.Duration {
		return &metav1.Duration{Duration: min(def, third)}
	}
	return &kubeadm.Timeouts{
		Discovery:         d(5 * time.Minute),
		TLSBootstrap:      d(5 * time.Minute),
		KubernetesAPICall: d(time.Minute),
	}
}

// JoinConfiguration is the group's JoinConfiguration with the per-VM
// values as placeholders.
func JoinConfiguration(src *model.Source, g *model.NodeGroup) (*kubeadm.JoinConfiguration, error) {
	c := &src.Cluster
	deadline, err := c.JoinDeadline(g)
	if err != nil {
		return nil, err
	}
	labels := c.JoinLabels(g, ZonePlaceholder)
	taints := []corev1.Taint{}
	for _, t := range g.JoinTaints() {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return &kubeadm.JoinConfiguration{
		APIVersion: kubeadm.APIVersion,
		Kind:       kubeadm.JoinKind,
		Discovery: kubeadm.Discovery{BootstrapToken: &kubeadm.BootstrapTokenDiscovery{
			Token:             TokenPlaceholder,
			APIServerEndpoint: c.ControlPlaneEndpoint,
			CACertHashes:      c.CACertHashes,
		}},
		NodeRegistration: kubeadm.NodeRegistrationOptions{
			Name:   InstancePlaceholder,
			Taints: taints,
			KubeletExtraArgs: []kubeadm.Arg{
				{Name: "node-labels", Value: joinPairs(labels, "=")},
				{Name: "provider-id", Value: ProviderIDTemplate(c)},
			},
		},
		Patches:  &kubeadm.Patches{Directory: PatchesDir},
		Timeouts: JoinTimeouts(deadline),
	}, nil
}

// ProviderIDTemplate is the kubelet --provider-id with placeholders:
// gce://<project>/<zone>/<instance>, the form the autoscaler's GCE
// provider maps to a MIG instance.
func ProviderIDTemplate(c *model.Cluster) string {
	return "gce://" + c.GCP.Project + "/" + ZonePlaceholder + "/" + InstancePlaceholder
}

// JoinTemplate renders the group's JoinConfiguration as the YAML document
// the startup script carries. That the script's substitution of the
// placeholders is safe in it (CheckJoinTemplate) is checked where every
// artifact is re-read, by package verify, on every run.
func JoinTemplate(src *model.Source, g *model.NodeGroup) ([]byte, error) {
	cfg, err := JoinConfiguration(src, g)
	if err != nil {
		return nil, err
	}
	return yamlout.Marshal(cfg)
}

// CheckJoinTemplate checks that a JoinConfiguration document is safe to
// carry in the script's heredoc and to substitute placeholders in: no
// line is the heredoc's delimiter, every '@' belongs to a placeholder, and
// every placeholder sits in a quoted scalar of its own or in a plain
// scalar that holds '/' or '=' besides.
func CheckJoinTemplate(doc []byte) error {
	if bytes.Contains(doc, []byte(JoinHeredocDelimiter)) {
		return fmt.Errorf("the join configuration contains its heredoc delimiter %s", JoinHeredocDelimiter)
	}
	rest := string(doc)
	for _, p := range Placeholders {
		rest = strings.ReplaceAll(rest, p, "")
	}
	if strings.Contains(rest, "@") {
		return fmt.Errorf("the join configuration has an '@' outside its placeholders")
	}
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc, &root); err != nil {
		return err
	}
	var walk func(n *yamlv3.Node) error
	walk = func(n *yamlv3.Node) error {
		if n.Kind == yamlv3.ScalarNode && strings.Contains(n.Value, "@") {
			bare := n.Value
			for _, p := range Placeholders {
				bare = strings.ReplaceAll(bare, p, "")
			}
			quoted := n.Style&(yamlv3.SingleQuotedStyle|yamlv3.DoubleQuotedStyle) != 0
			switch {
			case quoted && bare == "":
			case n.Style == 0 && strings.ContainsAny(bare, "/="):
			default:
				return fmt.Errorf("line %d: placeholder in %q, neither a quoted scalar of its own nor a plain one holding '/' or '='", n.Line, n.Value)
			}
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&root)
}

// KubeletPatch renders the kubeadm patch (target kubeletconfiguration,
// JSON merge patch) that sets the group's reservations and eviction
// thresholds in the kubelet's configuration.
func KubeletPatch(g *model.NodeGroup) ([]byte, error) {
	p := kubeadm.KubeletConfigurationPatch{APIVersion: kubeadm.KubeletAPIVersion, Kind: kubeadm.KubeletKind}
	if g.Kubelet != nil {
		p.KubeReserved, p.SystemReserved = g.Kubelet.KubeReserved, g.Kubelet.SystemReserved
	}
	if err := kubeletCapacity(g, &p); err != nil {
		return nil, err
	}
	b, err := yamlout.Marshal(p)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte(KubeletPatchHeredocDelimiter)) {
		return nil, fmt.Errorf("the kubelet configuration contains its heredoc delimiter %s", KubeletPatchHeredocDelimiter)
	}
	return b, nil
}
