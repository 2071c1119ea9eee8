// Package onprem renders out/onprem: the command that gives the nodes
// outside the MIGs their providerID, and the files of each on-prem VPN
// gateway host.
package onprem

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// ProviderIDScript renders out/onprem/set-provider-id.sh, which gives
// every existing node outside the MIGs model.UnmanagedProviderID; nil when
// the source sets cluster.onpremProviderID to "none".
func ProviderIDScript(src *model.Source, header string) ([]byte, error) {
	if !src.Cluster.SetsOnpremProviderID() {
		return nil, nil
	}
	body, err := templates.FS.ReadFile("set-provider-id.sh")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("#!/usr/bin/env bash\n")
	b.WriteString(header)
	// Group names are RFC 1035 labels and the prefix is a constant: neither
	// holds a quote.
	fmt.Fprintf(&b, "readonly CLOUD_GROUPS='%s'\n", strings.Join(src.CloudGroupNames(), ","))
	fmt.Fprintf(&b, "readonly PREFIX='%s'\n", model.UnmanagedProviderIDPrefix)
	b.Write(body)
	return b.Bytes(), nil
}

// LabelNodesScript renders out/onprem/label-onprem-nodes.sh, which
// gives each declared node of an onprem group the group's labels
// (NodeLabels: its labels, the identity label, the GPU label) and taints;
// nil when no onprem group declares nodes.
func LabelNodesScript(src *model.Source, header string) ([]byte, error) {
	var calls strings.Builder
	for _, d := range src.DeclaredNodes() {
		g := src.NodeGroups[d.Group]
		if g == nil {
			continue // a control-plane node
		}
		// Node names, label keys and values and taints are validated
		// Kubernetes names and values: none holds a quote or a space.
		fmt.Fprintf(&calls, "node %s %s", d.Name, g.Name)
		for _, k := range slices.Sorted(maps.Keys(g.NodeLabels)) {
			fmt.Fprintf(&calls, " '%s=%s'", k, g.NodeLabels[k])
		}
		calls.WriteString(" --")
		for _, t := range g.Taints {
			fmt.Fprintf(&calls, " '%s'", t.String())
		}
		calls.WriteString("\n")
	}
	if calls.Len() == 0 {
		return nil, nil
	}
	body, err := templates.FS.ReadFile("label-onprem-nodes.sh")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("#!/usr/bin/env bash\n")
	b.WriteString(header)
	b.Write(body)
	b.WriteString("\n")
	b.WriteString(calls.String())
	b.WriteString("finish\n")
	return b.Bytes(), nil
}
