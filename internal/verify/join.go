package verify

import (
	"bytes"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/agree"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
)

// Values joinConfiguration puts in place of the placeholders, as the
// script does on a VM.
const (
	sampleInstanceSuffix = "-x7k2"
	sampleToken          = "abcdef.0123456789abcdef"
)

// joinConfiguration checks the JoinConfiguration a group's startup script
// carries: it is the one heredoc the script names, safe to substitute
// (checkJoinTemplate), and once filled in for a VM in each of the
// group's zones it decodes strictly into kubeadm's v1beta4 types and
// registers exactly the labels and taints of the source and of the
// group's kube-env as the autoscaler reads it (startup taints aside), with
// the instance's name, its providerID and the cluster's discovery.
//
// The document is decoded once, placeholders and all, and each zone's
// configuration is the decoded one with the zone's values in place of the
// placeholders (fillJoin). That is what decoding each zone's filled
// document gives: checkJoinTemplate holds every placeholder inside one
// scalar that stays a string (quoted on its own, or plain with a '/' or
// '='), and the values put in are of letters, digits, '-' and '.' only,
// which change neither a quoted nor such a plain scalar's meaning.
func joinConfiguration(src *model.Source, g *model.NodeGroup, script heredocs, env *kubeEnv, flagged []string) error {
	doc, err := joinTemplate(script)
	if err != nil {
		return fmt.Errorf("group %s: %w", g.Name, err)
	}
	if err := checkJoinTemplate(doc); err != nil {
		return fmt.Errorf("group %s: %w", g.Name, err)
	}
	tmpl, err := kubeadm.DecodeJoinConfiguration(doc)
	if err != nil {
		return fmt.Errorf("group %s: join configuration: %w", g.Name, err)
	}
	cl := &src.Cluster
	if pid, _ := tmpl.ExtraArg("provider-id"); pid != cl.ProviderIDTemplate() {
		return fmt.Errorf("group %s: join configuration: provider-id %q, want %q", g.Name, pid, cl.ProviderIDTemplate())
	}
	instance := cl.BaseInstanceName(g) + sampleInstanceSuffix
	for _, zone := range g.Zones {
		cfg, err := fillJoin(tmpl, instance, zone)
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
// model.JoinHeredocDelimiter, so that bash expands nothing in it,
// found with a bash parser.
func JoinTemplateOf(script []byte) ([]byte, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(bytes.NewReader(script), "")
	if err != nil {
		return nil, err
	}
	return joinTemplate(quotedHeredocs(f))
}

// joinTemplate is JoinTemplateOf on the script's quoted heredocs.
func joinTemplate(h heredocs) ([]byte, error) {
	docs := h[model.JoinHeredocDelimiter]
	if len(docs) != 1 {
		return nil, fmt.Errorf("the script carries %d quoted heredocs delimited by %s, want 1", len(docs), model.JoinHeredocDelimiter)
	}
	return []byte(docs[0]), nil
}

// heredocs are the bodies of a script's heredocs (<<, not <<-) whose
// delimiter is a single-quoted word, by delimiter.
type heredocs map[string][]string

// quotedHeredocs finds the quoted heredocs of a parsed script, in one walk
// of its syntax tree for every check that reads one.
func quotedHeredocs(f *syntax.File) heredocs {
	h := heredocs{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if r, ok := n.(*syntax.Redirect); ok && r.Op == syntax.Hdoc && r.Hdoc != nil && len(r.Word.Parts) == 1 {
			if sq, ok := r.Word.Parts[0].(*syntax.SglQuoted); ok {
				h[sq.Value] = append(h[sq.Value], literal(r.Hdoc))
			}
		}
		return true
	})
	return h
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

// safeValue is what fillJoin may put in place of a placeholder: characters
// that mean the same in any YAML scalar checkJoinTemplate lets hold one.
var safeValue = regexp.MustCompile(`^[a-z0-9.-]+$`)

// fillJoin returns a copy of the decoded template tmpl with the instance
// name, the zone and the sample token in place of the placeholders, as
// the script puts them in on a VM of the zone.
func fillJoin(tmpl *kubeadm.JoinConfiguration, instance, zone string) (*kubeadm.JoinConfiguration, error) {
	for _, v := range []string{instance, zone, sampleToken} {
		if !safeValue.MatchString(v) {
			return nil, fmt.Errorf("%q cannot stand for a placeholder: not only letters, digits, '-' and '.'", v)
		}
	}
	r := strings.NewReplacer(model.InstancePlaceholder, instance, model.ZonePlaceholder, zone, model.TokenPlaceholder, sampleToken)
	return fillStrings(reflect.ValueOf(tmpl), r).Interface().(*kubeadm.JoinConfiguration), nil
}

// fillStrings returns a deep copy of v with r applied to every string in
// it (map keys included); unexported fields are copied as they are.
func fillStrings(v reflect.Value, r *strings.Replacer) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		n := reflect.New(v.Type()).Elem()
		n.SetString(r.Replace(v.String()))
		return n
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		n := reflect.New(v.Type().Elem())
		n.Elem().Set(fillStrings(v.Elem(), r))
		return n
	case reflect.Struct:
		n := reflect.New(v.Type()).Elem()
		n.Set(v)
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				n.Field(i).Set(fillStrings(v.Field(i), r))
			}
		}
		return n
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			n.Index(i).Set(fillStrings(v.Index(i), r))
		}
		return n
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		n := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			n.SetMapIndex(fillStrings(it.Key(), r), fillStrings(it.Value(), r))
		}
		return n
	}
	return v
}

// checkJoinTemplate checks that a JoinConfiguration document is safe to
// carry in the script's heredoc and to substitute placeholders in: no
// line is the heredoc's delimiter, every '@' belongs to a placeholder, and
// every placeholder sits in a quoted scalar of its own or in a plain
// scalar that holds '/' or '=' besides.
func checkJoinTemplate(doc []byte) error {
	if bytes.Contains(doc, []byte(model.JoinHeredocDelimiter)) {
		return fmt.Errorf("the join configuration contains its heredoc delimiter %s", model.JoinHeredocDelimiter)
	}
	rest := string(doc)
	for _, p := range model.JoinPlaceholders {
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
			for _, p := range model.JoinPlaceholders {
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
