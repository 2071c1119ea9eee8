package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

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
		driver, modules := "none", ""
		if im.GPU {
			driver = "operator"
		}
		if im.Driver != nil {
			driver, modules = "image", im.Driver.ModulesPackage()
		}
		pulls := src.PrePulledImages(im)
		for name, want := range map[string]string{
			"IMAGE_FAMILY":           im.Family,
			"KUBERNETES_VERSION":     im.KubernetesVersion,
			"KUBERNETES_MINOR":       "v" + v.MinorString(),
			"GPU_HOST":               strconv.FormatBool(im.GPU),
			"GPU_DRIVER":             driver,
			"NVIDIA_MODULES_PACKAGE": modules,
			"PRE_PULLED_IMAGES":      strings.Join(pulls, " "),
		} {
			if got[name] != want {
				errs = append(errs, fmt.Sprintf("%s: %s is %q, the source says %q (groups %s)", p, name, got[name], want, strings.Join(im.Groups, ", ")))
			}
		}
		if pv := got["KUBERNETES_PACKAGE_VERSION"]; !strings.HasPrefix(pv, im.KubernetesVersion+"-") {
			errs = append(errs, fmt.Sprintf("%s: KUBERNETES_PACKAGE_VERSION %q is not a package of Kubernetes %s", p, pv, im.KubernetesVersion))
		}
		if im.GPU {
			errs = append(errs, gpuOperatorAgrees(src, files, p, strings.Fields(got["PRE_PULLED_IMAGES"]))...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "\n"))
}

// constantWord is a word's value when it is a literal, bare or in double
// quotes without expansions ("" otherwise).
func constantWord(w *syntax.Word) string {
	if l := w.Lit(); l != "" || len(w.Parts) != 1 {
		return l
	}
	q, ok := w.Parts[0].(*syntax.DblQuoted)
	if !ok || len(q.Parts) != 1 {
		return ""
	}
	l, ok := q.Parts[0].(*syntax.Lit)
	if !ok {
		return ""
	}
	return l.Value
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
				out[a.Name.Value] = constantWord(a.Value)
			}
		}
	}
	return out
}

// gpuOperatorAgrees checks the GPU Operator's values against a GPU
// family's build script: the driver and the toolkit are the operator's
// exactly when the images do not bake them, and every operand image the
// values pin is one the script pulls.
func gpuOperatorAgrees(src *model.Source, files layout.Files, script string, pulled []string) []string {
	b, ok := files[layout.GPUOperatorValuesPath]
	if !ok {
		return []string{fmt.Sprintf("%s: missing (GPU family %s)", layout.GPUOperatorValuesPath, script)}
	}
	var v struct {
		Driver, Toolkit struct {
			Enabled *bool `json:"enabled"`
		}
	}
	var sections map[string]struct {
		Repository string `json:"repository"`
		Image      string `json:"image"`
		Version    string `json:"version"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		return []string{fmt.Sprintf("%s: %v", layout.GPUOperatorValuesPath, err)}
	}
	if err := yaml.Unmarshal(b, &sections); err != nil {
		return []string{fmt.Sprintf("%s: %v", layout.GPUOperatorValuesPath, err)}
	}
	var errs []string
	want := !src.HostDriver()
	for name, got := range map[string]*bool{"driver.enabled": v.Driver.Enabled, "toolkit.enabled": v.Toolkit.Enabled} {
		if got == nil || *got != want {
			errs = append(errs, fmt.Sprintf("%s: %s is not %t, as the GPU image families' drivers need (%s)", layout.GPUOperatorValuesPath, name, want, script))
		}
	}
	for _, im := range model.GPUOperatorImages(!want) {
		s := sections[im.Key]
		ref := s.Repository + "/" + s.Image + ":" + s.Version
		if !slices.Contains(pulled, ref) {
			errs = append(errs, fmt.Sprintf("%s: %s runs %s, which %s does not pull (it pulls %s)", layout.GPUOperatorValuesPath, im.Key, ref, script, strings.Join(pulled, " ")))
		}
	}
	return errs
}
