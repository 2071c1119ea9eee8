package verify

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
)

// Values JoinConfiguration puts in place of the placeholders, as the
// script does on a VM.
const (
	sampleInstanceSuffix = "-x7k2"
	sampleToken          = "abcdef.0123456789abcdef"
)

// joinConfiguration checks the JoinConfiguration a group's startup script
// carries: it is the one heredoc the script names, safe to substitute
// (render.CheckJoinTemplate), and once filled in for a VM in each of the
// group's zones it decodes strictly into kubeadm's v1beta4 types and
// registers exactly the labels and taints of the source and of the
// group's kube-env as the autoscaler reads it (startup taints aside), with
// the instance's name, its providerID and the cluster's discovery.
func joinConfiguration(src *model.Source, g *model.NodeGroup, script *syntax.File, env *kubeEnv, flagged []string) error {
	doc, err := joinTemplateOf(script)
	if err != nil {
		return fmt.Errorf("group %s: %w", g.Name, err)
	}
	if err := render.CheckJoinTemplate(doc); err != nil {
		return fmt.Errorf("group %s: %w", g.Name, err)
	}
	tmpl, err := kubeadm.DecodeJoinConfiguration(doc)
	if err != nil {
		return fmt.Errorf("group %s: join configuration: %w", g.Name, err)
	}
	cl := &src.Cluster
	if pid, _ := tmpl.ExtraArg("provider-id"); pid != render.ProviderIDTemplate(cl) {
		return fmt.Errorf("group %s: join configuration: provider-id %q, want %q", g.Name, pid, render.ProviderIDTemplate(cl))
	}
	instance := cl.BaseInstanceName(g) + sampleInstanceSuffix
	for _, zone := range g.Zones {
		filled := doc
		for p, v := range map[string]string{render.InstancePlaceholder: instance, render.ZonePlaceholder: zone, render.TokenPlaceholder: sampleToken} {
			filled = bytes.ReplaceAll(filled, []byte(p), []byte(v))
		}
		cfg, err := kubeadm.DecodeJoinConfiguration(filled)
		if err != nil {
			return fmt.Errorf("group %s: join configuration in zone %s: %w", g.Name, zone, err)
		}
		bt := cfg.Discovery.BootstrapToken
		switch {
		case bt == nil:
			return fmt.Errorf("group %s: join configuration: no bootstrap token discovery", g.Name)
		case bt.Token != sampleToken:
			return fmt.Errorf("group %s: join configuration: the token is not the one read at boot", g.Name)
		case bt.APIServerEndpoint != cl.ControlPlaneEndpoint:
			return fmt.Errorf("group %s: join configuration: apiServerEndpoint %q, want %q", g.Name, bt.APIServerEndpoint, cl.ControlPlaneEndpoint)
		case !slices.Equal(bt.CACertHashes, cl.CACertHashes):
			return fmt.Errorf("group %s: join configuration: caCertHashes %v, want %v", g.Name, bt.CACertHashes, cl.CACertHashes)
		case cfg.NodeRegistration.Name != instance:
			return fmt.Errorf("group %s: join configuration: node name %q, want the instance name", g.Name, cfg.NodeRegistration.Name)
		}
		node, err := agree.FromJoinConfiguration(cfg)
		if err != nil {
			return fmt.Errorf("group %s: join configuration: %w", g.Name, err)
		}
		if env.err != nil {
			return fmt.Errorf("join configuration in zone %s: kube-env: %w", zone, env.err)
		}
		if err := agree.CheckTemplate(cl, g, env.tmpl, flagged, node, zone); err != nil {
			return fmt.Errorf("join configuration in zone %s: %w", zone, err)
		}
	}
	return nil
}

// JoinTemplateOf returns the JoinConfiguration a startup script carries:
// the body of its one heredoc (<<, not <<-) delimited by the quoted word
// render.JoinHeredocDelimiter, so that bash expands nothing in it,
// found with a bash parser.
func JoinTemplateOf(script []byte) ([]byte, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	return joinTemplateOf(f)
}

// joinTemplateOf is JoinTemplateOf on a parsed script.
func joinTemplateOf(f *syntax.File) ([]byte, error) {
	var docs []string
	syntax.Walk(f, func(n syntax.Node) bool {
		if r, ok := n.(*syntax.Redirect); ok && r.Op == syntax.Hdoc {
			if r.Word.Lit() == "" && len(r.Word.Parts) == 1 {
				if sq, ok := r.Word.Parts[0].(*syntax.SglQuoted); ok && sq.Value == render.JoinHeredocDelimiter && r.Hdoc != nil {
					docs = append(docs, literal(r.Hdoc))
				}
			}
		}
		return true
	})
	if len(docs) != 1 {
		return nil, fmt.Errorf("the script carries %d quoted heredocs delimited by %s, want 1", len(docs), render.JoinHeredocDelimiter)
	}
	return []byte(docs[0]), nil
}

// literal is the text of a quoted heredoc's body.
func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			b.WriteString(l.Value)
		}
	}
	return b.String()
}
