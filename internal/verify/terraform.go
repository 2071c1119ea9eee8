package verify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/par"
)

// terraform parses every .tf file of the rendered Terraform module as
// Terraform does (native HCL syntax: hclsyntax.ParseConfig, which is what
// hclparse.Parser.ParseHCL calls), one file per CPU, taking the result of
// the files parsed already (path → diagnostics; nil for none) instead of
// parsing them again. That the files are canonical is render's job (it
// ends each with hclwrite.Format) and the tests' to prove; formatting
// every file a second time here would double the cost of the largest
// stage of gen.
func terraform(files layout.Files, parsed map[string]hcl.Diagnostics) error {
	var paths []string
	for _, path := range files.Paths() {
		if strings.HasPrefix(path, layout.TerraformDir+"/") && strings.HasSuffix(path, ".tf") {
			paths = append(paths, path)
		}
	}
	errs := make([]error, len(paths))
	par.Do(len(paths), func(i int) {
		path := paths[i]
		diags, ok := parsed[path]
		if !ok {
			_, diags = hclsyntax.ParseConfig(files[path], path, hcl.InitialPos)
		}
		if diags.HasErrors() {
			errs[i] = fmt.Errorf("%s: %s", path, diags.Error())
		}
	})
	return errors.Join(errs...)
}
