package verify

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/nodegen/nodegen/internal/render"
)

// Terraform parses every .tf file of the rendered Terraform module as
// Terraform does (native HCL syntax) and checks that it is canonical:
// `terraform fmt` (hclwrite.Format) would leave it unchanged.
func Terraform(files render.Files) error {
	var errs []error
	p := hclparse.NewParser()
	for _, path := range files.Paths() {
		if !strings.HasPrefix(path, render.TerraformDir+"/") || !strings.HasSuffix(path, ".tf") {
			continue
		}
		if _, diags := p.ParseHCL(files[path], path); diags.HasErrors() {
			errs = append(errs, fmt.Errorf("%s: %s", path, diags.Error()))
			continue
		}
		if !bytes.Equal(hclwrite.Format(files[path]), files[path]) {
			errs = append(errs, fmt.Errorf("%s: not in canonical HCL format", path))
		}
	}
	return errors.Join(errs...)
}
