// Package templates embeds the text/template files nodegen renders and the
// static scripts it ships inside generated manifests.
package templates

import "embed"

// FS holds every template and script in this directory.
//
//go:embed *.tmpl *.sh *.patch
var FS embed.FS
