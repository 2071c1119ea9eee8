package render

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"text/template"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
	"github.com/nodegen/nodegen/templates"
)

var tmpl = template.Must(template.New("").Option("missingkey=error").
	Funcs(template.FuncMap{"sh": ShellQuote, "shwords": shellWords}).
	ParseFS(templates.FS, "*.tmpl"))

// ShellQuote quotes s for bash as a single word: single quotes, with each
// embedded single quote written as '\”.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellWords quotes each word and joins them with spaces.
func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = ShellQuote(w)
	}
	return strings.Join(q, " ")
}

// startupData is the view model of startup-script.sh.tmpl.
type startupData struct {
	Header             string
	Group              string
	Cluster            string
	Endpoint           string
	CACertHashes       []string
	Project            string
	Region             string
	MachineType        string
	Labels             string
	Taints             []string
	TokenSecret        string
	TokenSecretVersion string
	TokenMetadataKey   string
	ZoneLabel          string
	RegionLabel        string
	InstanceTypeLabel  string
	KubeletPatch       string
}

// yamlSafe matches values the script may put between YAML double quotes.
var yamlSafe = regexp.MustCompile(`^[A-Za-z0-9._/:=,@%+\[\]-]*$`)

// StartupScript renders a cloud group's startup script.
func StartupScript(src *model.Source, g *model.NodeGroup, header string) ([]byte, error) {
	c := &src.Cluster
	d := startupData{
		Header:            strings.TrimSuffix(header, "\n"),
		Group:             g.Name,
		Cluster:           c.Name,
		Endpoint:          c.ControlPlaneEndpoint,
		CACertHashes:      c.CACertHashes,
		Project:           c.GCP.Project,
		Region:            c.GCP.Region,
		MachineType:       g.MachineType,
		Labels:            joinPairs(g.NodeLabels, "="),
		ZoneLabel:         model.ZoneLabel,
		RegionLabel:       model.RegionLabel,
		InstanceTypeLabel: model.InstanceTypeLabel,
	}
	for _, t := range g.JoinTaints() {
		d.Taints = append(d.Taints, t.String())
	}
	if sm := c.JoinToken.SecretManager; sm != nil {
		d.TokenSecret, d.TokenSecretVersion = sm.Secret, sm.Version
	} else {
		d.TokenMetadataKey = c.JoinToken.MetadataKey
	}
	values := append([]string{d.Group, d.Endpoint, d.Project, d.Region, d.MachineType, d.Labels,
		d.TokenSecret, d.TokenSecretVersion, d.TokenMetadataKey}, d.CACertHashes...)
	values = append(values, d.Taints...)
	for _, v := range values {
		if !yamlSafe.MatchString(v) {
			return nil, fmt.Errorf("value %q cannot be written into the join configuration", v)
		}
	}
	patch, err := KubeletPatch(g)
	if err != nil {
		return nil, err
	}
	d.KubeletPatch = string(patch)
	var b bytes.Buffer
	if err := tmpl.ExecuteTemplate(&b, "startup-script.sh.tmpl", d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// KubeletPatch renders the kubeadm patch (target kubeletconfiguration,
// JSON merge patch) that sets the group's reservations and eviction
// thresholds in the kubelet's configuration.
func KubeletPatch(g *model.NodeGroup) ([]byte, error) {
	cfg := map[string]any{
		"apiVersion": "kubelet.config.k8s.io/v1beta1",
		"kind":       "KubeletConfiguration",
	}
	if len(g.Kubelet.KubeReserved) > 0 {
		cfg["kubeReserved"] = g.Kubelet.KubeReserved
	}
	if len(g.Kubelet.SystemReserved) > 0 {
		cfg["systemReserved"] = g.Kubelet.SystemReserved
	}
	if len(g.Kubelet.EvictionHard) > 0 {
		cfg["evictionHard"] = g.Kubelet.EvictionHard
	}
	b, err := yamlout.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if bytes.Contains(b, []byte("NODEGEN_EOF")) {
		return nil, fmt.Errorf("kubelet configuration contains the heredoc delimiter")
	}
	return b, nil
}
