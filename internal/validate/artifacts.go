package validate

import (
	"errors"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// Artifacts checks what only the rendered artifacts tell: that each cloud
// group's kube-env and startup script fit in a GCE metadata value.
func Artifacts(src *model.Source, files layout.Files, pos Positioner) diag.List {
	c := &checker{src: src, pos: pos}
	for _, g := range src.CloudGroups() {
		for _, a := range []struct{ what, path string }{
			{"kube-env", layout.KubeEnvPath(g.Name)},
			{"startup script", layout.StartupScriptPath(g.Name)},
		} {
			if n := len(files[a.path]); n > gce.MetadataValueLimit {
				c.atKey(sel("nodeGroups", g.Name), "the group's %s is %d bytes, over GCE's metadata value limit of %d (256 KiB): use fewer or shorter labels and taints",
					a.what, n, gce.MetadataValueLimit)
			}
		}
	}
	return c.list.Sorted()
}

// VerificationFailures turns a verification failure of node groups'
// artifacts (diag.GroupError) into findings at each group's position,
// so that a gap in validation still points at the source. It returns nil
// unless every failure belongs to a group.
func VerificationFailures(err error, pos Positioner) diag.List {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	c := &checker{pos: pos}
	for _, e := range errs {
		var ge *diag.GroupError
		if !errors.As(e, &ge) {
			return nil
		}
		c.atKey(sel("nodeGroups", ge.Group), "the group's %s would be misread by its consumer: %v; nodegen's validation should have caught this: please report it", ge.Path, ge.Err)
	}
	return c.list.Sorted()
}
