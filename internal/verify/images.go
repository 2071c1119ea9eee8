package verify

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// images checks every image family's build script: it parses as bash,
// and the constants it builds with (readonly NAME=value at the top
// level) agree with the source: the family, the groups' Kubernetes
// version and its minor, and whether its hosts have GPUs.
func images(src *model.Source, files layout.Files) error {
	var errs []string
	buildable, _ := model.BuildableImages(src.NodeImages())
	for _, im := range buildable {
		p := layout.ImageBuildPath(im.Family)
		b, ok := files[p]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s: missing (groups %s boot from family %s)", p, strings.Join(im.Groups, ", "), im.Family))
			continue
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(string(b)), p)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		got := readonlyConstants(f)
		v, err := model.ParseKubeVersion(im.KubernetesVersion)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p, err))
			continue
		}
		for name, want := range map[string]string{
			"IMAGE_FAMILY":       im.Family,
			"KUBERNETES_VERSION": im.KubernetesVersion,
			"KUBERNETES_MINOR":   "v" + v.MinorString(),
			"GPU_HOST":           strconv.FormatBool(im.GPU),
		} {
			if got[name] != want {
				errs = append(errs, fmt.Sprintf("%s: %s is %q, the source says %q (groups %s)", p, name, got[name], want, strings.Join(im.Groups, ", ")))
			}
		}
		if pv := got["KUBERNETES_PACKAGE_VERSION"]; !strings.HasPrefix(pv, im.KubernetesVersion+"-") {
			errs = append(errs, fmt.Sprintf("%s: KUBERNETES_PACKAGE_VERSION %q is not a package of Kubernetes %s", p, pv, im.KubernetesVersion))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "\n"))
}

// readonlyConstants returns the top-level `readonly NAME=literal`
// assignments of a script.
func readonlyConstants(f *syntax.File) map[string]string {
	out := map[string]string{}
	for _, st := range f.Stmts {
		d, ok := st.Cmd.(*syntax.DeclClause)
		if !ok || d.Variant.Value != "readonly" {
			continue
		}
		for _, a := range d.Args {
			if a.Name != nil && a.Value != nil {
				out[a.Name.Value] = a.Value.Lit()
			}
		}
	}
	return out
}
