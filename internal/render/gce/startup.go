package gce

import (
	"bytes"
	"strings"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

var tmpl = template.Must(template.New("").Option("missingkey=error").
	Funcs(template.FuncMap{"sh": shellQuote}).
	ParseFS(templates.FS, "*.tmpl"))

// shellQuote quotes s for bash as a single word: single quotes, with each
// embedded single quote written as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// startupData is the view model of startup-script.sh.tmpl.
type startupData struct {
	Header                                   string
	Group                                    string
	Cluster                                  string
	Endpoint                                 string
	Project                                  string
	Region                                   string
	TokenSecret                              string
	TokenSecretVersion                       string
	TokenMetadataKey                         string
	MaxNodeProvisionTime                     time.Duration
	Deadline, BootMargin, RegistrationMargin time.Duration
	DeadlineSeconds                          int
	StateDir                                 string
	BlockMetadata                            bool
	InstancePlaceholder                      string
	ZonePlaceholder                          string
	TokenPlaceholder                         string
	JoinDelimiter                            string
	JoinConfiguration                        string
	PatchDelimiter                           string
	KubeletPatch                             string
	LocalSSDs                                int
	KubeletKeyAttribute                      string
}

// startupScript renders a cloud group's startup script. It carries the
// JoinConfiguration rendered by joinTemplate in a quoted heredoc; the
// script fills in its placeholders.
func startupScript(src *model.Source, g *model.NodeGroup, header string) ([]byte, error) {
	c := &src.Cluster
	mnpt := c.MaxNodeProvisionTime(g)
	deadline, err := c.JoinDeadline(g)
	if err != nil {
		return nil, err
	}
	join, err := joinTemplate(src, g)
	if err != nil {
		return nil, err
	}
	patch, err := kubeletPatch(g)
	if err != nil {
		return nil, err
	}
	d := startupData{
		Header:               strings.TrimSuffix(header, "\n"),
		Group:                g.Name,
		Cluster:              c.Name,
		Endpoint:             c.ControlPlaneEndpoint,
		Project:              c.GCP.Project,
		Region:               c.GCP.Region,
		MaxNodeProvisionTime: mnpt,
		Deadline:             deadline,
		BootMargin:           model.JoinBootMargin,
		RegistrationMargin:   model.JoinRegistrationMargin,
		DeadlineSeconds:      int(deadline / time.Second),
		StateDir:             model.NodeStateDir,
		BlockMetadata:        !c.PodsMayReachMetadataServer(g),
		InstancePlaceholder:  model.InstancePlaceholder,
		ZonePlaceholder:      model.ZonePlaceholder,
		TokenPlaceholder:     model.TokenPlaceholder,
		JoinDelimiter:        model.JoinHeredocDelimiter,
		JoinConfiguration:    string(join),
		PatchDelimiter:       model.KubeletPatchHeredocDelimiter,
		KubeletPatch:         string(patch),
		LocalSSDs:            g.LocalSSDCount,
	}
	if c.BindsKubeletKey() {
		d.KubeletKeyAttribute = model.KubeletKeyAttribute
	}
	if sm := c.JoinToken.SecretManager; sm != nil {
		d.TokenSecret, d.TokenSecretVersion = sm.Secret, sm.Version
	} else {
		d.TokenMetadataKey = c.JoinToken.MetadataKey
	}
	var b bytes.Buffer
	// The script is mostly the template's text: sized from the last one
	// rendered, it is written without growing its buffer step by step.
	b.Grow(int(lastScriptSize.Load()) + len(join) + len(patch))
	if err := tmpl.ExecuteTemplate(&b, "startup-script.sh.tmpl", d); err != nil {
		return nil, err
	}
	lastScriptSize.Store(int64(b.Len() - len(join) - len(patch)))
	return b.Bytes(), nil
}

// lastScriptSize is the size of the last startup script rendered, less
// its join configuration and kubelet patch.
var lastScriptSize atomic.Int64
