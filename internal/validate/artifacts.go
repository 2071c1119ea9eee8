package validate

import (
	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/verify"
)

// Artifacts checks what only the rendered artifacts tell: that each cloud
// group's kube-env and startup script fit in a GCE metadata value.
func Artifacts(src *model.Source, files render.Files, pos Positioner) diag.List {
	c := &checker{src: src, pos: pos}
	for _, g := range src.Groups() {
		if !g.Cloud() {
			continue
		}
		for _, a := range []struct{ what, path string }{
			{"kube-env", render.KubeEnvPath(g.Name)},
			{"startup script", render.StartupScriptPath(g.Name)},
		} {
			if n := len(files[a.path]); n > verify.MetadataValueLimit {
				c.atKey(sel("nodeGroups", g.Name), "the group's %s is %d bytes, over GCE's metadata value limit of %d (256 KiB): use fewer or shorter labels and taints",
					a.what, n, verify.MetadataValueLimit)
			}
		}
	}
	return c.list.Sorted()
}
