// Package onprem renders out/onprem: the command that gives the nodes
// outside the MIGs their providerID, and the files of each on-prem VPN
// gateway host.
package onprem

import (
	"bytes"
	"fmt"
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
