package onprem

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/yamlout"
	"github.com/nodegen/nodegen/templates"
)

var joinTmpl = template.Must(template.New("").Option("missingkey=error").
	Funcs(template.FuncMap{"sh": shellQuote}).
	ParseFS(templates.FS, "onprem-join.sh.tmpl"))

// shellQuote quotes s for bash as a single word: single quotes, with each
// embedded single quote ended, escaped and begun again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// JoinScripts renders out/onprem/join/<group>.sh for each onprem group:
// run as root on a new server of the group, it joins it with kubeadm.
func JoinScripts(src *model.Source, files layout.Files) error {
	for _, g := range src.Groups() {
		if g.Kind != model.KindOnPrem {
			continue
		}
		// The group's name is the script's file name: the schema holds it to
		// an RFC 1035 label; anything else is refused rather than written
		// elsewhere.
		if g.Name == "" || g.Name == "." || g.Name == ".." || strings.ContainsAny(g.Name, "/\\\x00") {
			return fmt.Errorf("node group %q: not a file name, so no %s", g.Name, layout.OnpremJoinPath("<group>"))
		}
		origin := src.Origins[g.Name]
		if origin == "" {
			origin = src.Name
		}
		b, err := joinScript(src, g, layout.HashHeader(origin))
		if err != nil {
			return fmt.Errorf("node group %s: %s: %w", g.Name, layout.OnpremJoinPath(g.Name), err)
		}
		files[layout.OnpremJoinPath(g.Name)] = b
	}
	return nil
}

// onpremJoin is the JoinConfiguration of a new server of the onprem group
// g, with the Node's name and the token as placeholders: the group's
// taints, its labels a kubelet may set on itself, and the kubelet's
// provider-id.
func onpremJoin(src *model.Source, g *model.NodeGroup) *kubeadm.JoinConfiguration {
	c := &src.Cluster
	taints := []corev1.Taint{}
	for _, t := range g.Taints {
		taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	return kubeadm.NewJoin(kubeadm.Join{
		Token:             model.TokenPlaceholder,
		APIServerEndpoint: c.ControlPlaneEndpoint,
		CACertHashes:      c.CACertHashes,
		Name:              model.InstancePlaceholder,
		Taints:            taints,
		Labels:            g.OnpremJoinLabels(),
		ProviderID:        c.OnpremJoinProviderID(model.InstancePlaceholder),
	})
}

// joinData is the view model of onprem-join.sh.tmpl.
type joinData struct {
	Header            string
	Group, Cluster    string
	Endpoint          string
	Usage             string
	Nodes             []string
	NodeList          string
	ProviderID        string
	Restricted        string
	NamePlaceholder   string
	TokenPlaceholder  string
	JoinDelimiter     string
	JoinConfiguration string
}

// joinScript renders the join script of the onprem group g.
func joinScript(src *model.Source, g *model.NodeGroup, header string) ([]byte, error) {
	doc, err := yamlout.Marshal(onpremJoin(src, g))
	if err != nil {
		return nil, err
	}
	if bytes.Contains(doc, []byte(model.JoinHeredocDelimiter)) {
		return nil, fmt.Errorf("the join configuration contains its heredoc delimiter %s", model.JoinHeredocDelimiter)
	}
	// The script substitutes the placeholders with bash's ${doc//...}: no
	// '@' may be anything else (package verify checks the rest of what
	// makes the substitution safe, model.JoinPlaceholders).
	rest := string(doc)
	for _, p := range model.JoinPlaceholders {
		rest = strings.ReplaceAll(rest, p, "")
	}
	if strings.Contains(rest, "@") {
		return nil, fmt.Errorf("the join configuration has an '@' outside its placeholders, which the script's substitution cannot tell from one")
	}
	var restricted []string
	for _, k := range model.SortedKeys(g.NodeLabels) {
		if !model.KubeletMaySetLabel(k) {
			restricted = append(restricted, k)
		}
	}
	nodes := model.SortedKeys(g.Nodes)
	d := joinData{
		Header:            strings.TrimSuffix(header, "\n"),
		Group:             g.Name,
		Cluster:           src.Cluster.Name,
		Endpoint:          src.Cluster.ControlPlaneEndpoint,
		Usage:             layout.OnpremJoinPath(g.Name),
		Nodes:             nodes,
		NodeList:          strings.Join(nodes, " "),
		Restricted:        strings.Join(restricted, ", "),
		NamePlaceholder:   model.InstancePlaceholder,
		TokenPlaceholder:  model.TokenPlaceholder,
		JoinDelimiter:     model.JoinHeredocDelimiter,
		JoinConfiguration: string(doc),
	}
	if src.Cluster.SetsOnpremProviderID() {
		d.ProviderID = model.UnmanagedProviderIDPrefix
	}
	var b bytes.Buffer
	if err := joinTmpl.ExecuteTemplate(&b, "onprem-join.sh.tmpl", d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
