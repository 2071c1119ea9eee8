package terraform_test

import (
	"maps"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"sigs.k8s.io/yaml"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/render/terraform"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// lbModule is a parsed Terraform module: its blocks by kind.
type lbModule struct {
	resources map[string]*hclsyntax.Body // "type.name"
	locals    map[string]hcl.Expression
	variables map[string]bool
	exprs     []hcl.Expression // every attribute expression, nested ones too
}

func parseLBModule(t *testing.T, files layout.Files) *lbModule {
	t.Helper()
	m := &lbModule{resources: map[string]*hclsyntax.Body{}, locals: map[string]hcl.Expression{}, variables: map[string]bool{}}
	p := hclparse.NewParser()
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for n, a := range b.Attributes {
			if n != "ignore_changes" { // names attributes, refers to nothing
				m.exprs = append(m.exprs, a.Expr)
			}
		}
		for _, nb := range b.Blocks {
			walk(nb.Body)
		}
	}
	for _, path := range files.Paths() {
		// A module is the .tf files of one directory: the root module in
		// a subdirectory is another.
		if pathpkg.Dir(path) != layout.TerraformDir || !strings.HasSuffix(path, ".tf") {
			continue
		}
		f, diags := p.ParseHCL(files[path], path)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", path, diags.Error())
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			switch b.Type {
			case "resource":
				m.resources[b.Labels[0]+"."+b.Labels[1]] = b.Body
			case "data", "ephemeral":
				m.resources[b.Type+"."+b.Labels[0]+"."+b.Labels[1]] = b.Body
			case "locals":
				for n, a := range b.Body.Attributes {
					m.locals[n] = a.Expr
				}
			case "variable":
				m.variables[b.Labels[0]] = true
				continue // its type is a type expression, not references
			}
			walk(b.Body)
		}
	}
	return m
}

// unresolved returns every reference of the module that names no
// resource, local or variable of it: what terraform plan would reject.
func (m *lbModule) unresolved() []string {
	var out []string
	for _, e := range m.exprs {
		for _, tr := range e.Variables() {
			root := tr.RootName()
			switch root {
			case "var":
				if n := attrName(tr, 1); !m.variables[n] {
					out = append(out, "var."+n)
				}
			case "local":
				if n := attrName(tr, 1); m.locals[n] == nil {
					out = append(out, "local."+n)
				}
			case "path", "each", "count", "self":
			case "data", "ephemeral":
				if k := root + "." + attrName(tr, 1) + "." + attrName(tr, 2); m.resources[k] == nil {
					out = append(out, k)
				}
			default:
				if k := root + "." + attrName(tr, 1); m.resources[k] == nil {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

func attrName(tr hcl.Traversal, i int) string {
	if len(tr) <= i {
		return ""
	}
	if a, ok := tr[i].(hcl.TraverseAttr); ok {
		return a.Name
	}
	return ""
}

// literal returns the constant string value of a resource's attribute.
func (m *lbModule) literal(t *testing.T, resource, attr string) string {
	t.Helper()
	b := m.resources[resource]
	if b == nil || b.Attributes[attr] == nil {
		t.Fatalf("no %s.%s in the module", resource, attr)
	}
	v, diags := b.Attributes[attr].Expr.Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s.%s: %s", resource, attr, diags.Error())
	}
	return v.AsString()
}

// references reports whether resource's attribute refers to target
// ("type.name.attr").
func (m *lbModule) references(resource, attr, target string) bool {
	b := m.resources[resource]
	if b == nil || b.Attributes[attr] == nil {
		return false
	}
	for _, tr := range b.Attributes[attr].Expr.Variables() {
		if tr.RootName()+"."+attrName(tr, 1)+"."+attrName(tr, 2) == target {
			return true
		}
	}
	return false
}

// checkLoadBalancer checks the cloud cluster's module: every resource
// against the provider schema, every reference resolves, the load
// balancer's pieces are wired to each other and to the gateway group's
// MIGs, and its address is addr. It returns the forwarded ports.
func checkLoadBalancer(t *testing.T, files layout.Files, src *model.Source, gw *model.EastWestGateway, addr string) {
	t.Helper()
	if _, ok := files[layout.MeshLBPath]; !ok {
		t.Fatalf("no %s", layout.MeshLBPath)
	}
	for _, e := range checkProviderSchema(t, files) {
		t.Error(e)
	}
	m := parseLBModule(t, files)
	if u := m.unresolved(); len(u) > 0 {
		t.Errorf("references to nothing in the module: %v", u)
	}
	addrRes := gce.TFAddress + "." + terraform.MeshLBName
	if got := m.literal(t, addrRes, "address"); got != addr {
		t.Errorf("reserved address %s, want %s", got, addr)
	}
	if got := m.literal(t, addrRes, "address_type"); got != "INTERNAL" {
		t.Errorf("address_type %s", got)
	}
	rule := gce.TFForwardingRule + "." + terraform.MeshLBName
	backend := gce.TFRegionBackend + "." + terraform.MeshLBName
	for _, c := range []struct{ res, attr, target string }{
		{rule, "ip_address", addrRes + ".address"},
		{rule, "backend_service", backend + ".id"},
		{backend, "health_checks", gce.TFRegionHealthCheck + "." + terraform.MeshLBName + ".id"},
	} {
		if !m.references(c.res, c.attr, c.target) {
			t.Errorf("%s.%s does not refer to %s", c.res, c.attr, c.target)
		}
	}
	if got := m.literal(t, rule, "load_balancing_scheme"); got != "INTERNAL" {
		t.Errorf("forwarding rule scheme %s", got)
	}
	// One backend per MIG of the gateway group, each its instance group.
	var groups []string
	for _, b := range m.resources[backend].Blocks {
		if b.Type == "backend" {
			for _, tr := range b.Body.Attributes["group"].Expr.Variables() {
				groups = append(groups, tr.RootName()+"."+attrName(tr, 1)+"."+attrName(tr, 2))
			}
		}
	}
	var want []string
	for _, z := range src.NodeGroups[gw.NodeGroup].Zones {
		want = append(want, gce.TFGroupManager+"."+terraform.TFName(gw.NodeGroup, z)+".instance_group")
	}
	if !slices.Equal(groups, want) || len(want) == 0 {
		t.Errorf("backends %v, want the gateway group's MIGs %v", groups, want)
	}
	// Ports: the forwarded ones are the Service's, but the status port.
	v, _ := m.resources[rule].Attributes["ports"].Expr.Value(nil)
	var ports []string
	for _, p := range v.AsValueSlice() {
		ports = append(ports, p.AsString())
	}
	var wantPorts []string
	for _, p := range gw.Ports() {
		if p.Port != model.MeshPortStatus {
			wantPorts = append(wantPorts, strconv.Itoa(p.Port))
		}
	}
	if !slices.Equal(ports, wantPorts) {
		t.Errorf("forwarded ports %v, want %v", ports, wantPorts)
	}
	// The health check probes the status port, and the firewall lets
	// Google's probes reach it at the address.
	hc := m.resources[gce.TFRegionHealthCheck+"."+terraform.MeshLBName]
	for _, b := range hc.Blocks {
		if b.Type == "http_health_check" {
			pv, _ := b.Body.Attributes["port"].Expr.Value(nil)
			if n, _ := pv.AsBigFloat().Int64(); n != model.MeshPortStatus {
				t.Errorf("health check port %d", n)
			}
		}
	}
	fw := gce.TFFirewall + "." + terraform.MeshLBHealthFirewall
	rv, _ := m.resources[fw].Attributes["source_ranges"].Expr.Value(nil)
	var ranges []string
	for _, r := range rv.AsValueSlice() {
		ranges = append(ranges, r.AsString())
	}
	if !slices.Equal(ranges, []string{"35.191.0.0/16", "130.211.0.0/22"}) {
		t.Errorf("health-check firewall ranges %v", ranges)
	}
	if !m.references(fw, "destination_ranges", addrRes+".address") {
		t.Errorf("the health-check firewall is not limited to the load balancer's address")
	}
}

// The cloud cluster of the test fleet renders the internal load balancer
// of its east-west gateway: the module passes the provider schema, every
// reference resolves, and the reserved address is the remote's
// remotePilotAddress and the gateway Service's externalIPs.
func TestMeshLoadBalancer(t *testing.T) {
	l, err := source.Load(testsrc.FleetDir())
	if err != nil {
		t.Fatal(err)
	}
	f := l.Fleet
	const primary, remote, addr = "serve", "train", "10.20.1.10"
	src := f.Cluster(primary)
	out, err := render.Cluster(f, src)
	if err != nil {
		t.Fatal(err)
	}
	files := out.Files
	gw := &f.Mesh.Clusters[primary].EastWestGateway
	checkLoadBalancer(t, files, src, gw, addr)
	remoteOut, err := render.Cluster(f, f.Cluster(remote))
	if err != nil {
		t.Fatal(err)
	}
	remoteFiles := remoteOut.Files
	checkAddresses(t, files, remoteFiles, addr)

	// A remote whose gateway a router reaches renders no load balancer.
	if _, ok := remoteFiles[layout.MeshLBPath]; ok {
		t.Errorf("the remote's gateway (router) has a GCP load balancer")
	}
	// The checks can fail: a reserved address that is not the gateway's,
	// a backend on a MIG that does not exist.
	broken := maps.Clone(files)
	broken[layout.MeshLBPath] = []byte(strings.Replace(string(files[layout.MeshLBPath]), `"`+addr+`"`, `"10.20.1.99"`, 1))
	if string(broken[layout.MeshLBPath]) == string(files[layout.MeshLBPath]) {
		t.Fatal("address not found in the load balancer's file")
	}
	if parseLBModule(t, broken).literal(t, gce.TFAddress+"."+terraform.MeshLBName, "address") == addr {
		t.Error("the broken module still has the address")
	}
	broken[layout.MeshLBPath] = []byte(strings.Replace(string(files[layout.MeshLBPath]), "instance_group_manager.gateway_", "instance_group_manager.gatewa_", 1))
	if u := parseLBModule(t, broken).unresolved(); len(u) != 1 {
		t.Errorf("a backend on a MIG that does not exist: unresolved %v", u)
	}
}

// checkAddresses checks that the primary's gateway Service lists addr in
// externalIPs and the remote's istiod values point at it.
func checkAddresses(t *testing.T, primary, remote layout.Files, addr string) {
	t.Helper()
	var gwValues struct {
		Service struct {
			Type        string   `json:"type"`
			ExternalIPs []string `json:"externalIPs"`
		} `json:"service"`
	}
	if err := yaml.Unmarshal(primary[layout.EastWestGatewayValuesPath], &gwValues); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gwValues.Service.ExternalIPs, []string{addr}) || gwValues.Service.Type != "ClusterIP" {
		t.Errorf("primary's gateway Service: type %s, externalIPs %v; want ClusterIP at [%s]", gwValues.Service.Type, gwValues.Service.ExternalIPs, addr)
	}
	var istiod struct {
		Global struct {
			RemotePilotAddress string `json:"remotePilotAddress"`
		} `json:"global"`
	}
	if err := yaml.Unmarshal(remote[layout.IstiodValuesPath], &istiod); err != nil {
		t.Fatal(err)
	}
	if istiod.Global.RemotePilotAddress != addr {
		t.Errorf("remote's remotePilotAddress %q, want the load balancer's %s", istiod.Global.RemotePilotAddress, addr)
	}
}

// The shipped mesh example, as committed (examples/mesh/out, which the
// golden test keeps equal to its rendering): cloud-serve's module plans
// the load balancer at the address onprem-gpu's istiod values use.
func TestMeshExampleLoadBalancer(t *testing.T) {
	root := filepath.Join(testsrc.RepoRoot(), "examples", "mesh", "out")
	read := func(cluster string) layout.Files {
		files := layout.Files{}
		dir := filepath.Join(root, cluster)
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			files[filepath.ToSlash(rel)] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	cloud, onprem := read("cloud-serve"), read("onprem-gpu")
	var addr struct {
		Service struct {
			ExternalIPs []string `json:"externalIPs"`
		} `json:"service"`
	}
	if err := yaml.Unmarshal(cloud[layout.EastWestGatewayValuesPath], &addr); err != nil || len(addr.Service.ExternalIPs) != 1 {
		t.Fatalf("cloud-serve's gateway externalIPs %v (%v)", addr.Service.ExternalIPs, err)
	}
	a := addr.Service.ExternalIPs[0]
	checkAddresses(t, cloud, onprem, a)
	m := parseLBModule(t, cloud)
	if got := m.literal(t, gce.TFAddress+"."+terraform.MeshLBName, "address"); got != a {
		t.Errorf("load balancer at %s, gateway at %s", got, a)
	}
	for _, e := range checkProviderSchema(t, cloud) {
		t.Error(e)
	}
	if u := m.unresolved(); len(u) > 0 {
		t.Errorf("references to nothing in the module: %v", u)
	}
}
