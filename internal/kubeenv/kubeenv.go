// Package kubeenv writes the kube-env instance-template metadata value and
// reads it back the way the Cluster Autoscaler's GCE provider does.
//
// The reading side follows the autoscaler's GCE provider (kubernetes/autoscaler,
// tag cluster-autoscaler-1.36.1, commit 35e8a280425c; cluster-autoscaler/
// cloudprovider/gce/kube_env.go ParseKubeEnv and templates.go
// extractAutoscalerVarFromKubeEnv, parseKeyValueListToMap, buildTaints;
// master's templates.go reads kube-env the same way): a YAML map of strings
// (sigs.k8s.io/yaml into map[string]string); the
// AUTOSCALER_ENV_VARS value split on ';' into name=value segments (trimmed,
// split at the first '=', values trimmed of spaces and quotes, a segment
// without '=' an error for every variable not found before it); lists split
// on ',' without trimming, items split at the first '='; taint values split
// into value and effect at the first ':'.
package kubeenv

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
)

// Key is the instance-template metadata key the autoscaler reads.
const Key = "kube-env"

// AutoscalerEnvVars is the kube-env key holding the autoscaler's variables.
const AutoscalerEnvVars = "AUTOSCALER_ENV_VARS"

// The variables of AUTOSCALER_ENV_VARS that nodegen writes and the
// autoscaler reads (templates.go at the tag above: the node's labels and
// taints, the reservations and thresholds its allocatable is computed
// from, the extended resources, the per-group autoscaling options, the
// OS, distribution and architecture, and the local SSDs that hold
// ephemeral storage).
const (
	VarOS                     = "os"
	VarOSDistribution         = "os_distribution"
	VarArch                   = "arch"
	VarNodeLabels             = "node_labels"
	VarNodeTaints             = "node_taints"
	VarKubeReserved           = "kube_reserved"
	VarEvictionHard           = "evictionHard"
	VarExtendedResources      = "extended_resources"
	VarAutoscalingOptions     = "autoscaling_options"
	VarLocalSSDCount          = "ephemeral_storage_local_ssd_count"
	VarBlockEphemeralBootDisk = "BLOCK_EPH_STORAGE_BOOT_DISK"
)

// Var is one name=value variable of AUTOSCALER_ENV_VARS.
type Var struct{ Name, Value string }

// Marshal renders a kube-env value holding AUTOSCALER_ENV_VARS built from
// vars in order, preceded by header (comment lines, each starting with '#').
// It refuses anything the autoscaler could not read back: an empty name or
// value, or a name or value containing ';', or a name containing '='.
func Marshal(header string, vars []Var) ([]byte, error) {
	joined, err := JoinVars(vars)
	if err != nil {
		return nil, err
	}
	body, err := yamlout.Marshal(map[string]string{AutoscalerEnvVars: joined})
	if err != nil {
		return nil, err
	}
	return append([]byte(header), body...), nil
}

// JoinVars is the AUTOSCALER_ENV_VARS value Marshal writes for vars, with
// Marshal's errors.
func JoinVars(vars []Var) (string, error) {
	segs := make([]string, 0, len(vars))
	for _, v := range vars {
		if v.Name == "" || strings.ContainsAny(v.Name, ";= \"'") {
			return "", fmt.Errorf("kube-env: invalid variable name %q", v.Name)
		}
		if v.Value == "" {
			return "", fmt.Errorf("kube-env: variable %s is empty", v.Name)
		}
		if strings.Contains(v.Value, ";") {
			return "", fmt.Errorf("kube-env: variable %s contains ';': %q", v.Name, v.Value)
		}
		if strings.TrimSpace(v.Value) != v.Value || strings.Trim(v.Value, `"'`) != v.Value {
			return "", fmt.Errorf("kube-env: variable %s starts or ends with a space or quote: %q", v.Name, v.Value)
		}
		segs = append(segs, v.Name+"="+v.Value)
	}
	return strings.Join(segs, ";"), nil
}

// Parse reads a kube-env value as the autoscaler does: a flat YAML map
// whose scalar values are taken as strings.
func Parse(data []byte) (map[string]string, error) {
	env := map[string]string{}
	if err := yaml.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("error unmarshalling kubeEnv: %w", err)
	}
	return env, nil
}

// LookupVar finds name in AUTOSCALER_ENV_VARS the way the autoscaler does.
// Segments are scanned in order; a malformed segment reached before name is
// found is an error.
func LookupVar(env map[string]string, name string) (string, bool, error) {
	all, ok := env[AutoscalerEnvVars]
	if !ok {
		return "", false, nil
	}
	for _, seg := range strings.Split(all, ";") {
		seg = strings.TrimSpace(seg)
		n, v, found := strings.Cut(seg, "=")
		if !found {
			return "", false, fmt.Errorf("malformed autoscaler var: %s", seg)
		}
		if strings.TrimSpace(n) == name {
			return strings.Trim(v, ` "'`), true, nil
		}
	}
	return "", false, nil
}

// ParseList splits a k=v,k2=v2 list as the autoscaler does: no trimming,
// items split at the first '=', an empty or '='-less item an error.
// Duplicate keys: the last one wins.
func ParseList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		k, v, found := strings.Cut(item, "=")
		if !found {
			return nil, fmt.Errorf("error while parsing key-value list, val: %s", item)
		}
		out[k] = v
	}
	return out, nil
}

// Taint is a taint as the autoscaler reads it from kube-env.
type Taint struct{ Key, Value, Effect string }

// Template is what the autoscaler takes from a kube-env for its template node.
type Template struct {
	Labels            map[string]string
	Taints            []Taint // sorted by key; startup taints not yet removed
	KubeReserved      map[string]string
	EvictionHard      map[string]string
	ExtendedResources map[string]string
	AutoscalingOpts   map[string]string
	OS                string
	OSDistribution    string
	Arch              string
	// LocalSSDCount is ephemeral_storage_local_ssd_count (0 when absent
	// or not an integer, as the autoscaler reads it), and
	// BlockBootDiskEphemeral whether BLOCK_EPH_STORAGE_BOOT_DISK is "true".
	LocalSSDCount          int64
	BlockBootDiskEphemeral bool
}

// ReadTemplate parses a kube-env value into what the autoscaler uses:
// node_labels (fallback NODE_LABELS), node_taints (fallback NODE_TAINTS),
// kube_reserved, evictionHard, extended_resources, autoscaling_options, os,
// os_distribution and arch, applying the autoscaler's defaults for os
// ("linux"), os_distribution ("cos") and arch ("amd64").
func ReadTemplate(data []byte) (*Template, error) {
	env, err := Parse(data)
	if err != nil {
		return nil, err
	}
	t := &Template{}
	list := func(name, fallback string) (map[string]string, error) { return readList(env, name, fallback) }
	if t.Labels, err = list(VarNodeLabels, "NODE_LABELS"); err != nil {
		return nil, err
	}
	taints, err := list(VarNodeTaints, "NODE_TAINTS")
	if err != nil {
		return nil, err
	}
	for _, k := range model.SortedKeys(taints) {
		value, effect, _ := strings.Cut(taints[k], ":")
		t.Taints = append(t.Taints, Taint{Key: k, Value: value, Effect: effect})
	}
	if t.KubeReserved, err = list(VarKubeReserved, ""); err != nil {
		return nil, err
	}
	if t.EvictionHard, err = list(VarEvictionHard, ""); err != nil {
		return nil, err
	}
	if t.ExtendedResources, err = list(VarExtendedResources, ""); err != nil {
		return nil, err
	}
	if t.AutoscalingOpts, err = list(VarAutoscalingOptions, ""); err != nil {
		return nil, err
	}
	scalar := func(name, def string, allowed ...string) (string, error) {
		return readScalar(env, name, def, allowed...)
	}
	if t.OS, err = scalar(VarOS, "linux", "linux", "windows"); err != nil {
		return nil, err
	}
	if t.OSDistribution, err = scalar(VarOSDistribution, "cos", "cos", "ubuntu", "windows_ltsc", "windows_sac", "cos_containerd", "ubuntu_containerd"); err != nil {
		return nil, err
	}
	if t.Arch, err = scalar(VarArch, "amd64", "amd64", "arm64"); err != nil {
		return nil, err
	}
	if v, ok, err := LookupVar(env, VarLocalSSDCount); err == nil && ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			t.LocalSSDCount = n
		}
	}
	if v, ok, err := LookupVar(env, VarBlockEphemeralBootDisk); err == nil && ok && v == "true" {
		t.BlockBootDiskEphemeral = true
	}
	return t, nil
}

// readList reads the list variable name of env (key=value pairs, as
// ParseList reads them) as the autoscaler does, or its fallback variable
// when it is unset and fallback is not "": nil when neither is set.
func readList(env map[string]string, name, fallback string) (map[string]string, error) {
	v, ok, err := LookupVar(env, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		if fallback == "" {
			return nil, nil
		}
		fv, fok := env[fallback]
		if !fok {
			return nil, nil
		}
		v = fv
	}
	m, err := ParseList(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// readScalar reads the variable name of env, one of allowed, or def when
// it is unset.
func readScalar(env map[string]string, name, def string, allowed ...string) (string, error) {
	v, ok, err := LookupVar(env, name)
	if err != nil {
		return "", err
	}
	if !ok {
		return def, nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s: unsupported value %q", name, v)
}

// IsStartupTaint reports whether the autoscaler treats key as a startup
// taint: model.IsStartupTaint, the one predicate nodegen has.
func IsStartupTaint(key string, flagged ...string) bool {
	return model.IsStartupTaint(key, flagged...)
}

// SanitizedTaints returns the template taints the autoscaler keeps on its
// template node: without startup, status, condition and its own taints
// (model.SanitizedByAutoscaler, after utils/taints SanitizeTaints).
func (t *Template) SanitizedTaints(flagged ...string) []Taint {
	var out []Taint
	for _, tt := range t.Taints {
		if !model.SanitizedByAutoscaler(tt.Key, flagged...) {
			out = append(out, tt)
		}
	}
	return out
}

// MatchesSource reports, as an error, where the template node the
// autoscaler builds from this kube-env differs from the group in the
// source: its labels must be the group's TemplateLabels, and the taints it
// keeps after sanitising the group's taints (the startup taint is dropped
// by the autoscaler, so kube-env may carry it or not). This is the one
// comparison of kube-env with the source; gen's verification, the
// agreement check and the tests all use it.
func (t *Template) MatchesSource(g *model.NodeGroup, flagged ...string) error {
	// The revision label is the artifacts' digest, not the source's:
	// package revision checks it.
	labels := t.Labels
	if _, ok := labels[model.RevisionLabel]; ok {
		labels = maps.Clone(labels)
		delete(labels, model.RevisionLabel)
	}
	if want := g.TemplateLabels(); !maps.Equal(labels, want) {
		return fmt.Errorf("the autoscaler would read labels %v, want %v", labels, want)
	}
	got := t.SanitizedTaints(flagged...)
	want := make([]Taint, 0, len(g.Taints))
	for _, tt := range g.Taints {
		want = append(want, Taint{Key: tt.Key, Value: tt.Value, Effect: tt.Effect})
	}
	slices.SortFunc(want, func(a, b Taint) int { return strings.Compare(a.Key, b.Key) })
	if !slices.Equal(got, want) {
		return fmt.Errorf("the autoscaler would read taints %v, want %v", got, want)
	}
	return nil
}
