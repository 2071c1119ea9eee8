package render

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/templates"
)

// OnpremNodeNamePlaceholder stands for a node's name in the kubelet setting
// out/docs shows for on-prem nodes that join later.
const OnpremNodeNamePlaceholder = "<node-name>"

// OnpremProviderIDScript renders out/onprem/set-provider-id.sh, which gives
// every existing node outside the MIGs model.UnmanagedProviderID; nil when
// the source sets cluster.onpremProviderID to "none".
func OnpremProviderIDScript(src *model.Source, header string) ([]byte, error) {
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

// OnpremNodeRegistration is the part of a kubeadm JoinConfiguration (or
// InitConfiguration, for a control-plane node) that gives an on-prem node
// its providerID when it registers: the kubelet's --provider-id, which it
// writes into the Node it creates.
func OnpremNodeRegistration(node string) kubeadm.NodeRegistrationOptions {
	return kubeadm.NodeRegistrationOptions{
		KubeletExtraArgs: []kubeadm.Arg{{Name: "provider-id", Value: model.UnmanagedProviderID(node)}},
	}
}

// OnpremJoinSnippet is OnpremNodeRegistration with the node name's
// placeholder, as YAML under nodeRegistration: what out/docs shows.
func OnpremJoinSnippet() ([]byte, error) {
	r := OnpremNodeRegistration(OnpremNodeNamePlaceholder)
	return yaml.Marshal(map[string]any{"nodeRegistration": map[string]any{"kubeletExtraArgs": r.KubeletExtraArgs}})
}
