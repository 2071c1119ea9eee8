package docs_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// roleRow is a row of day0.md's role table: the role, then the resource
// types it is listed for.
var roleRow = regexp.MustCompile("(?m)^  \\| `(roles/[a-zA-Z.0-9]+)` \\| [^|]* \\| ([^|]*) \\|$")

// TestRoleTableCoversRenderedTerraform reads every .tf file rendered under
// out/terraform as Terraform does (hclparse) for the tests' copy of the
// shipped example (with its HA VPN), every cluster of the tests' fleet
// (with the mesh's load balancer) and a source whose network nodegen
// creates, and holds day0.md's role table to them: every resource,
// ephemeral resource and data source type has a role that lists it.
func TestRoleTableCoversRenderedTerraform(t *testing.T) {
	var renders []layout.Files
	for _, dir := range []string{testsrc.ShippedCopyDir(), testsrc.FleetDir(), testsrc.Copy(t, map[string]string{"network.cue": createdNetwork})} {
		l, err := source.Load(dir)
		if err != nil {
			t.Fatalf("loading %s: %v", dir, err)
		}
		for _, c := range l.Fleet.Clusters {
			out, err := render.Cluster(l.Fleet, c)
			if err != nil {
				t.Fatalf("rendering %s: %v", c.Name, err)
			}
			renders = append(renders, out.Files)
		}
	}
	seen := map[string]bool{}
	for _, files := range renders {
		covered := map[string]bool{}
		for _, m := range roleRow.FindAllStringSubmatch(string(files[layout.Day0DocsPath]), -1) {
			for _, typ := range strings.Split(m[2], ",") {
				covered[strings.Trim(typ, " `")] = true
			}
		}
		parser := hclparse.NewParser()
		for p, b := range files {
			if !strings.HasPrefix(p, layout.TerraformDir+"/") || !strings.HasSuffix(p, ".tf") {
				continue
			}
			f, diags := parser.ParseHCL(b, p)
			if diags.HasErrors() {
				t.Fatalf("%s: %v", p, diags)
			}
			for _, blk := range f.Body.(*hclsyntax.Body).Blocks {
				if blk.Type != "resource" && blk.Type != "ephemeral" && blk.Type != "data" {
					continue
				}
				seen[blk.Labels[0]] = true
				if !covered[blk.Labels[0]] {
					t.Errorf("%s: %s %q has no role in %s's role table", p, blk.Type, blk.Labels[0], layout.Day0DocsPath)
				}
			}
		}
	}
	// The sources render the network, the firewall rules, the VPN and its
	// alert policies, the mesh's load balancer and the VPN's keys read at
	// apply.
	for _, typ := range []string{gce.TFNetwork, gce.TFSubnetwork, gce.TFFirewall, gce.TFVPNTunnel, gce.TFAlertPolicy, gce.TFForwardingRule, gce.TFSecretVersion} {
		if !seen[typ] {
			t.Errorf("no source of the test renders %s", typ)
		}
	}
}

// createdNetwork is a network nodegen creates, for the tests' copy of the
// example (which has none).
const createdNetwork = `cluster: gcp: network: {
	name:       "hybrid-vpc"
	create:     true
	subnetwork: "hybrid-nodes"
	subnetworkRange: "10.128.0.0/20"
	onpremRanges: ["10.20.0.0/16"]
}
`

// TestApplyRolesRefuseUnknownType: a resource type the table lacks fails
// the render of day0.md, so it cannot be rendered without its role.
func TestApplyRolesRefuseUnknownType(t *testing.T) {
	if _, err := gce.ApplyRoles([]string{gce.TFNetwork, gce.TFSubnetwork, gce.TFFirewall, "google_compute_network_peering"}); err == nil || !strings.Contains(err.Error(), "google_compute_network_peering") {
		t.Fatalf("ApplyRoles of a type without a role: %v, want an error naming it", err)
	}
	roles, err := gce.ApplyRoles([]string{gce.TFFirewall})
	if err != nil || len(roles) != 1 || roles[0].Role != "roles/compute.securityAdmin" {
		t.Fatalf("ApplyRoles(firewall) = %v, %v; want roles/compute.securityAdmin", roles, err)
	}
}
