package vpnlab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/gocty"
)

// CloudVPN is the cloud side of the VPN as the rendered Terraform
// declares it: what Cloud VPN and Cloud Router are told to do.
type CloudVPN struct {
	// ASN and Keepalive (seconds) of the Cloud Router's bgp block.
	ASN       int64
	Keepalive int64
	// Advertised are the ranges of a CUSTOM advertise mode.
	AdvertiseMode string
	Advertised    []netip.Prefix
	Tunnels       []CloudTunnel
}

// CloudTunnel is one HA VPN tunnel with its Cloud Router interface and
// BGP peer.
type CloudTunnel struct {
	// Resource is the tunnel's Terraform address.
	Resource string
	// Interface is the HA VPN gateway's interface (vpn_gateway_interface).
	Interface int64
	// PeerAddress is the external VPN gateway's interface address the
	// tunnel ends at.
	PeerAddress netip.Addr
	IKEVersion  int64
	// Secret is the Secret Manager secret of the pre-shared key, as the
	// secret version the tunnel's shared secret is read from names it.
	Secret string
	// Phase1 and Phase2 are the tunnel's cipher_suite lists, by name
	// (encryption, integrity, prf, dh; encryption, integrity, pfs); empty
	// when the tunnel leaves them to Cloud VPN.
	Phase1, Phase2 map[string][]string
	// Inside is the Cloud Router interface's ip_range (its own address
	// and the link's length); PeerInside and PeerASN the BGP peer's.
	Inside     netip.Prefix
	PeerInside netip.Addr
	PeerASN    int64
	// Priority is the peer's advertised_route_priority (MED).
	Priority int64
	// BFD of the peer: intervals in milliseconds.
	BFDMode                    string
	BFDMinTransmit, BFDMinRecv int64
	BFDMultiplier              int64
}

type tfResource struct {
	kind, name string // type and name labels
	block      *hcl.Block
	file       string
}

func (r tfResource) addr() string { return r.kind + "." + r.name }

// cloudFromTerraform reads the VPN resources of the Terraform in tfDir
// with hclparse: google_compute_ha_vpn_gateway, _external_vpn_gateway,
// _vpn_tunnel, _router (the one the tunnels name), _router_interface and
// _router_peer, and the Secret Manager secret versions the tunnels' shared
// secrets come from. References between them are followed by resource
// address; variables and locals are unknown, so every attribute read here
// must be a literal or a reference to another resource.
func cloudFromTerraform(tfDir string) (CloudVPN, error) {
	var v CloudVPN
	entries, err := os.ReadDir(tfDir)
	if err != nil {
		return v, err
	}
	p := hclparse.NewParser()
	var res []tfResource
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		f, diags := p.ParseHCLFile(filepath.Join(tfDir, e.Name()))
		if diags.HasErrors() {
			return v, diags
		}
		content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
			{Type: "resource", LabelNames: []string{"type", "name"}},
			{Type: "data", LabelNames: []string{"type", "name"}},
			{Type: "ephemeral", LabelNames: []string{"type", "name"}},
		}})
		if diags.HasErrors() {
			return v, diags
		}
		for _, b := range content.Blocks {
			kind := b.Labels[0]
			if b.Type != "resource" {
				kind = b.Type + "." + kind
			}
			res = append(res, tfResource{kind: kind, name: b.Labels[1], block: b, file: e.Name()})
		}
	}
	ctx := evalContext(res)
	byKind := map[string][]tfResource{}
	for _, r := range res {
		byKind[r.kind] = append(byKind[r.kind], r)
	}

	// Secret versions: address → secret name.
	secrets := map[string]string{}
	for _, kind := range []string{"data.google_secret_manager_secret_version", "ephemeral.google_secret_manager_secret_version"} {
		for _, r := range byKind[kind] {
			attrs, err := attributes(r, ctx, "secret")
			if err != nil {
				return v, err
			}
			secrets[r.addr()] = attrs["secret"].AsString()
		}
	}
	// External gateways: address → interface id → address.
	peers := map[string]map[int64]netip.Addr{}
	for _, r := range byKind["google_compute_external_vpn_gateway"] {
		body, _, diags := r.block.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "interface"}}})
		if diags.HasErrors() {
			return v, diags
		}
		peers[r.addr()] = map[int64]netip.Addr{}
		for _, ib := range body.Blocks {
			attrs, err := attributes(tfResource{kind: r.kind, name: r.name, block: ib, file: r.file}, ctx, "id", "ip_address")
			if err != nil {
				return v, err
			}
			var id int64
			if err := gocty.FromCtyValue(attrs["id"], &id); err != nil {
				return v, fmt.Errorf("%s: %s interface id: %w", r.file, r.addr(), err)
			}
			a, err := netip.ParseAddr(attrs["ip_address"].AsString())
			if err != nil {
				return v, fmt.Errorf("%s: %s: %w", r.file, r.addr(), err)
			}
			peers[r.addr()][id] = a
		}
	}
	// Tunnels.
	tunnels := map[string]*CloudTunnel{}
	routerOf := ""
	for _, r := range byKind["google_compute_vpn_tunnel"] {
		attrs, err := attributes(r, ctx, "vpn_gateway_interface", "peer_external_gateway", "peer_external_gateway_interface", "ike_version", "router", "shared_secret", "shared_secret_wo")
		if err != nil {
			return v, err
		}
		t := &CloudTunnel{Resource: r.addr()}
		if err := gocty.FromCtyValue(attrs["vpn_gateway_interface"], &t.Interface); err != nil {
			return v, fmt.Errorf("%s: %s vpn_gateway_interface: %w", r.file, r.addr(), err)
		}
		var pi int64
		if err := gocty.FromCtyValue(attrs["peer_external_gateway_interface"], &pi); err != nil {
			return v, fmt.Errorf("%s: %s peer_external_gateway_interface: %w", r.file, r.addr(), err)
		}
		gw := refAddr(attrs["peer_external_gateway"])
		a, ok := peers[gw][pi]
		if !ok {
			return v, fmt.Errorf("%s: %s: peer_external_gateway %q has no interface %d", r.file, r.addr(), gw, pi)
		}
		t.PeerAddress = a
		t.IKEVersion = 2
		if iv := attrs["ike_version"]; iv.IsKnown() && !iv.IsNull() {
			if err := gocty.FromCtyValue(iv, &t.IKEVersion); err != nil {
				return v, err
			}
		}
		for _, k := range []string{"shared_secret_wo", "shared_secret"} {
			if s := attrs[k]; s.IsKnown() && !s.IsNull() {
				name, ok := secrets[strings.TrimSuffix(refAddr(s), ".secret_data")]
				if !ok {
					return v, fmt.Errorf("%s: %s: %s is not a Secret Manager secret version's secret_data", r.file, r.addr(), k)
				}
				t.Secret = name
			}
		}
		if t.Secret == "" {
			return v, fmt.Errorf("%s: %s: no shared secret from Secret Manager", r.file, r.addr())
		}
		routerOf = refAddr(attrs["router"])
		cs, _, diags := r.block.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "cipher_suite"}}})
		if diags.HasErrors() {
			return v, diags
		}
		for _, b := range cs.Blocks {
			phases, _, diags := b.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "phase1"}, {Type: "phase2"}}})
			if diags.HasErrors() {
				return v, diags
			}
			for _, pb := range phases.Blocks {
				lists := map[string][]string{}
				as, diags := pb.Body.JustAttributes()
				if diags.HasErrors() {
					return v, diags
				}
				for name, a := range as {
					val, diags := a.Expr.Value(ctx)
					if diags.HasErrors() {
						return v, diags
					}
					var l []string
					if err := gocty.FromCtyValue(val, &l); err != nil {
						return v, fmt.Errorf("%s: %s cipher_suite %s.%s: %w", r.file, r.addr(), pb.Type, name, err)
					}
					lists[name] = l
				}
				if pb.Type == "phase1" {
					t.Phase1 = lists
				} else {
					t.Phase2 = lists
				}
			}
		}
		tunnels[r.addr()] = t
	}
	if len(tunnels) == 0 {
		return v, fmt.Errorf("%s: no google_compute_vpn_tunnel", tfDir)
	}
	// The router.
	for _, r := range byKind["google_compute_router"] {
		if r.addr() != routerOf {
			continue
		}
		bgp, _, diags := r.block.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "bgp"}}})
		if diags.HasErrors() {
			return v, diags
		}
		if len(bgp.Blocks) != 1 {
			return v, fmt.Errorf("%s: %s: %d bgp blocks", r.file, r.addr(), len(bgp.Blocks))
		}
		b := bgp.Blocks[0]
		attrs, err := attributes(tfResource{kind: r.kind, name: r.name, block: b, file: r.file}, ctx, "asn", "keepalive_interval", "advertise_mode")
		if err != nil {
			return v, err
		}
		if err := gocty.FromCtyValue(attrs["asn"], &v.ASN); err != nil {
			return v, fmt.Errorf("%s: %s asn: %w", r.file, r.addr(), err)
		}
		v.Keepalive = 20 // the provider's and Cloud Router's default
		if k := attrs["keepalive_interval"]; k.IsKnown() && !k.IsNull() {
			if err := gocty.FromCtyValue(k, &v.Keepalive); err != nil {
				return v, err
			}
		}
		v.AdvertiseMode = "DEFAULT"
		if m := attrs["advertise_mode"]; m.IsKnown() && !m.IsNull() {
			v.AdvertiseMode = m.AsString()
		}
		ranges, _, diags := b.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "advertised_ip_ranges"}}})
		if diags.HasErrors() {
			return v, diags
		}
		for _, rb := range ranges.Blocks {
			a, err := attributes(tfResource{kind: r.kind, name: r.name, block: rb, file: r.file}, ctx, "range")
			if err != nil {
				return v, err
			}
			pfx, err := netip.ParsePrefix(a["range"].AsString())
			if err != nil {
				return v, fmt.Errorf("%s: %s advertised range: %w", r.file, r.addr(), err)
			}
			v.Advertised = append(v.Advertised, pfx)
		}
	}
	if v.ASN == 0 {
		return v, fmt.Errorf("%s: the tunnels' router %q has no bgp asn", tfDir, routerOf)
	}
	// Interfaces: address → tunnel.
	ifaces := map[string]*CloudTunnel{}
	for _, r := range byKind["google_compute_router_interface"] {
		attrs, err := attributes(r, ctx, "ip_range", "vpn_tunnel")
		if err != nil {
			return v, err
		}
		t := tunnels[refAddr(attrs["vpn_tunnel"])]
		if t == nil {
			continue
		}
		pfx, err := netip.ParsePrefix(attrs["ip_range"].AsString())
		if err != nil {
			return v, fmt.Errorf("%s: %s ip_range: %w", r.file, r.addr(), err)
		}
		t.Inside = pfx
		ifaces[r.addr()] = t
	}
	for _, r := range byKind["google_compute_router_peer"] {
		attrs, err := attributes(r, ctx, "interface", "peer_ip_address", "peer_asn", "advertised_route_priority")
		if err != nil {
			return v, err
		}
		t := ifaces[refAddr(attrs["interface"])]
		if t == nil {
			continue
		}
		if t.PeerInside, err = netip.ParseAddr(attrs["peer_ip_address"].AsString()); err != nil {
			return v, fmt.Errorf("%s: %s peer_ip_address: %w", r.file, r.addr(), err)
		}
		if err := gocty.FromCtyValue(attrs["peer_asn"], &t.PeerASN); err != nil {
			return v, fmt.Errorf("%s: %s peer_asn: %w", r.file, r.addr(), err)
		}
		if pr := attrs["advertised_route_priority"]; pr.IsKnown() && !pr.IsNull() {
			if err := gocty.FromCtyValue(pr, &t.Priority); err != nil {
				return v, err
			}
		}
		bfd, _, diags := r.block.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "bfd"}}})
		if diags.HasErrors() {
			return v, diags
		}
		t.BFDMode = "DISABLED"
		for _, b := range bfd.Blocks {
			a, err := attributes(tfResource{kind: r.kind, name: r.name, block: b, file: r.file}, ctx, "session_initialization_mode", "min_transmit_interval", "min_receive_interval", "multiplier")
			if err != nil {
				return v, err
			}
			t.BFDMode = a["session_initialization_mode"].AsString()
			// Cloud Router's defaults (the provider's): 1000 ms, 5.
			t.BFDMinTransmit, t.BFDMinRecv, t.BFDMultiplier = 1000, 1000, 5
			for k, dst := range map[string]*int64{"min_transmit_interval": &t.BFDMinTransmit, "min_receive_interval": &t.BFDMinRecv, "multiplier": &t.BFDMultiplier} {
				if x := a[k]; x.IsKnown() && !x.IsNull() {
					if err := gocty.FromCtyValue(x, dst); err != nil {
						return v, fmt.Errorf("%s: %s bfd %s: %w", r.file, r.addr(), k, err)
					}
				}
			}
		}
	}
	for _, t := range tunnels {
		if !t.Inside.IsValid() || !t.PeerInside.IsValid() {
			return v, fmt.Errorf("%s: tunnel %s has no router interface or BGP peer", tfDir, t.Resource)
		}
		v.Tunnels = append(v.Tunnels, *t)
	}
	sort.Slice(v.Tunnels, func(i, j int) bool { return v.Tunnels[i].Interface < v.Tunnels[j].Interface })
	return v, nil
}

// evalContext gives every resource, data source and ephemeral resource
// an object whose name, id, self_link and secret_data evaluate to its
// address (so references can be followed); variables and locals are
// unknown.
func evalContext(res []tfResource) *hcl.EvalContext {
	kinds := map[string]map[string]cty.Value{}
	for _, r := range res {
		if kinds[r.kind] == nil {
			kinds[r.kind] = map[string]cty.Value{}
		}
		a := cty.StringVal(r.addr())
		kinds[r.kind][r.name] = cty.ObjectVal(map[string]cty.Value{
			"name": a, "id": a, "self_link": a, "secret_data": cty.StringVal(r.addr() + ".secret_data"),
		})
	}
	vars := map[string]cty.Value{
		"var":   cty.DynamicVal,
		"local": cty.DynamicVal,
		"path":  cty.DynamicVal,
	}
	nested := map[string]map[string]cty.Value{}
	for kind, byName := range kinds {
		if prefix, rest, ok := strings.Cut(kind, "."); ok {
			if nested[prefix] == nil {
				nested[prefix] = map[string]cty.Value{}
			}
			nested[prefix][rest] = cty.ObjectVal(byName)
			continue
		}
		vars[kind] = cty.ObjectVal(byName)
	}
	for prefix, m := range nested {
		vars[prefix] = cty.ObjectVal(m)
	}
	return &hcl.EvalContext{Variables: vars}
}

// attributes evaluates the named attributes of r's block (a missing one
// is null).
func attributes(r tfResource, ctx *hcl.EvalContext, names ...string) (map[string]cty.Value, error) {
	var schema hcl.BodySchema
	for _, n := range names {
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: n})
	}
	c, _, diags := r.block.Body.PartialContent(&schema)
	if diags.HasErrors() {
		return nil, fmt.Errorf("%s: %s: %s", r.file, r.addr(), diags.Error())
	}
	out := map[string]cty.Value{}
	for _, n := range names {
		a := c.Attributes[n]
		if a == nil {
			out[n] = cty.NullVal(cty.DynamicPseudoType)
			continue
		}
		val, diags := a.Expr.Value(ctx)
		if diags.HasErrors() {
			return nil, fmt.Errorf("%s: %s: %s: %s", r.file, r.addr(), n, diags.Error())
		}
		out[n] = val
	}
	return out, nil
}

// refAddr returns the resource address a reference evaluated to.
func refAddr(v cty.Value) string {
	if !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.String) {
		return ""
	}
	return v.AsString()
}
