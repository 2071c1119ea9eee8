package verify

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// sampleOnpremNode is the Node name an onprem group's join is checked
// with when the group declares no nodes.
const sampleOnpremNode = "onprem-node-1"

// onpremJoins checks the join script of every onprem group: it parses as
// bash, its constants name the group, the control plane and the group's
// declared nodes, and the JoinConfiguration it carries is safe to
// substitute (checkJoinTemplate, with no zone placeholder: the script
// fills in the Node's name and the token only) and, filled in for each
// declared node (or a sample name), decodes strictly into kubeadm's
// v1beta4 types with the cluster's discovery, the node's name and what
// agree.CheckOnprem wants of the group.
func onpremJoins(src *model.Source, files layout.Files) error {
	var errs []error
	for _, g := range src.Groups() {
		if g.Kind != model.KindOnPrem {
			continue
		}
		p := layout.OnpremJoinPath(g.Name)
		if err := onpremJoin(src, g, files[p]); err != nil {
			errs = append(errs, &diag.GroupError{Group: g.Name, Path: p, Err: err})
		}
	}
	return errors.Join(errs...)
}

func onpremJoin(src *model.Source, g *model.NodeGroup, script []byte) error {
	if script == nil {
		return fmt.Errorf("missing")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "")
	if err != nil {
		return err
	}
	cl := &src.Cluster
	consts := readonlyWords(f)
	nodes := model.SortedKeys(g.Nodes)
	for name, want := range map[string][]string{
		"NODE_GROUP":          {g.Name},
		"API_SERVER_ENDPOINT": {cl.ControlPlaneEndpoint},
		"DECLARED_NODES":      nodes,
		"NAME_PLACEHOLDER":    {model.InstancePlaceholder},
		"TOKEN_PLACEHOLDER":   {model.TokenPlaceholder},
	} {
		if got, ok := consts[name]; !ok || !slices.Equal(got, want) {
			return fmt.Errorf("%s is %q, the source says %q", name, got, want)
		}
	}
	doc, err := joinTemplate(quotedHeredocs(f))
	if err != nil {
		return err
	}
	if err := checkJoinTemplate(doc); err != nil {
		return err
	}
	if bytes.Contains(doc, []byte(model.ZonePlaceholder)) {
		return fmt.Errorf("the join configuration holds %s, which the script does not fill in", model.ZonePlaceholder)
	}
	tmpl, err := kubeadm.DecodeJoinConfiguration(doc)
	if err != nil {
		return fmt.Errorf("join configuration: %w", err)
	}
	if len(nodes) == 0 {
		nodes = []string{sampleOnpremNode}
	}
	for _, name := range nodes {
		cfg, err := fillJoin(tmpl, name, "no-zone")
		if err != nil {
			return fmt.Errorf("join configuration of node %s: %w", name, err)
		}
		if err := discovery(cl, cfg); err != nil {
			return fmt.Errorf("join configuration of node %s: %w", name, err)
		}
		if cfg.NodeRegistration.Name != name {
			return fmt.Errorf("join configuration of node %s: node name %q", name, cfg.NodeRegistration.Name)
		}
		if cfg.Patches != nil || cfg.Timeouts != nil {
			return fmt.Errorf("join configuration of node %s: patches or timeouts, which no on-prem join sets", name)
		}
		node, err := agree.FromJoinConfiguration(cfg)
		if err != nil {
			return fmt.Errorf("join configuration of node %s: %w", name, err)
		}
		if err := agree.CheckOnprem(cl, g, node); err != nil {
			return fmt.Errorf("join configuration of node %s: %w", name, err)
		}
	}
	return nil
}

// discovery checks a filled-in JoinConfiguration's discovery: the
// bootstrap token the script read, the cluster's endpoint and CA hashes.
func discovery(cl *model.Cluster, cfg *kubeadm.JoinConfiguration) error {
	bt := cfg.Discovery.BootstrapToken
	switch {
	case bt == nil:
		return fmt.Errorf("no bootstrap token discovery")
	case bt.Token != sampleToken:
		return fmt.Errorf("the token is not the one the script reads")
	case bt.APIServerEndpoint != cl.ControlPlaneEndpoint:
		return fmt.Errorf("apiServerEndpoint %q, want %q", bt.APIServerEndpoint, cl.ControlPlaneEndpoint)
	case !slices.Equal(bt.CACertHashes, cl.CACertHashes):
		return fmt.Errorf("caCertHashes %v, want %v", bt.CACertHashes, cl.CACertHashes)
	}
	return nil
}

// readonlyWords returns the top-level readonly assignments of a script
// whose value is made of literal and single-quoted parts: a scalar as
// one word, an array (readonly -a NAME=(...)) as its elements.
func readonlyWords(f *syntax.File) map[string][]string {
	out := map[string][]string{}
	for _, st := range f.Stmts {
		d, ok := st.Cmd.(*syntax.DeclClause)
		if !ok || d.Variant.Value != "readonly" {
			continue
		}
		for _, a := range d.Args {
			if a.Name == nil {
				continue
			}
			switch {
			case a.Array != nil:
				elems := []string{}
				for _, e := range a.Array.Elems {
					if v, ok := wordValue(e.Value); ok {
						elems = append(elems, v)
					}
				}
				out[a.Name.Value] = elems
			case a.Value != nil:
				if v, ok := wordValue(a.Value); ok {
					out[a.Name.Value] = []string{v}
				}
			}
		}
	}
	return out
}

// wordValue is the value of a word made only of literal and single-quoted
// parts, as bash reads it.
func wordValue(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		default:
			return "", false
		}
	}
	return b.String(), true
}
