package model

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
)

// ByHand is one thing nodegen cannot verify from the source, because it
// lies outside it (a network path, an image's content, a secret's value),
// and how to verify it by hand.
type ByHand struct {
	// Cluster is the cluster it is about.
	Cluster string
	// What must hold.
	What string
	// How to check it: a command or a place to look.
	How string
}

// ByHand lists, for every cluster of f, what nodegen cannot verify and how
// to verify it by hand, in cluster order. vet checks the values (an
// address is an address another machine can be sent to, in the declared
// ranges); it cannot see whether the machines answer there, or what an
// image holds.
func (f *Fleet) ByHand() []ByHand {
	var out []ByHand
	for _, src := range f.Clusters {
		out = append(out, src.byHand(f.MeshCluster(src), f.Mesh)...)
	}
	return out
}

func (src *Source) byHand(mc *MeshCluster, mesh *Mesh) []ByHand {
	cl := &src.Cluster
	var out []ByHand
	add := func(what, how string, args ...any) {
		out = append(out, ByHand{Cluster: cl.Name, What: what, How: fmt.Sprintf(how, args...)})
	}
	host, _, err := net.SplitHostPort(cl.ControlPlaneEndpoint)
	if err != nil {
		host = cl.ControlPlaneEndpoint
	}
	var zones []string
	for _, g := range src.Groups() {
		if g.Cloud() {
			for _, z := range g.Zones {
				if !slices.Contains(zones, z) {
					zones = append(zones, z)
				}
			}
		}
	}
	slices.Sort(zones)
	if len(zones) > 0 {
		add(fmt.Sprintf("the control plane answers at %s from the cloud nodes' subnetwork in every zone (%s): the VPN, the on-prem routes and firewalls carry it", cl.ControlPlaneEndpoint, strings.Join(zones, ", ")),
			"from a VM of each zone: curl -ks https://%s/healthz (prints ok)", cl.ControlPlaneEndpoint)
		add("the API server reaches each cloud node's kubelet on TCP 10250 (kubectl logs, exec, metrics): the on-prem side routes the cloud subnetwork",
			"kubectl logs on a pod of a cloud node; or from a control-plane node: nc -vz <a cloud node's internal IP> 10250")
		egress := "Cloud NAT"
		if n := cl.GCP.Network; n != nil && n.Egress == EgressPrivateGoogleAccess {
			egress = "Private Google Access (no internet: every image from Artifact Registry)"
		}
		add(fmt.Sprintf("the cloud nodes, which have no external IP, reach the image registries and Google APIs through %s", egress),
			"from a VM of each zone: curl -sI https://registry.k8s.io/v2/ and curl -sI https://secretmanager.googleapis.com/ (any HTTP status, no timeout)")
	}
	if len(cl.CACertHashes) > 0 {
		add(fmt.Sprintf("caCertHashes pin the control plane's CA (%s): kubeadm join refuses a control plane whose CA key has another hash", host),
			"on a control-plane node: openssl x509 -pubkey -in /etc/kubernetes/pki/ca.crt | openssl pkey -pubin -outform der | openssl dgst -sha256 (sha256:<that> is in caCertHashes)")
	}
	if sm := cl.JoinToken.SecretManager; sm != nil {
		add(fmt.Sprintf("Secret Manager secret %s in project %s holds a valid bootstrap token at version %s", sm.Secret, cl.GCP.Project, sm.Version),
			"gcloud secrets versions describe %s --secret %s --project %s (state ENABLED); kubeadm token list on the control plane shows its id, not expired", sm.Version, sm.Secret, cl.GCP.Project)
	}
	if n := cl.GCP.Network; n != nil && n.VPN != nil {
		v := n.VPN
		region := cl.GCP.Region
		if len(v.HAVPNAddresses) > 0 {
			add(fmt.Sprintf("haVpnAddresses %s are the addresses Google gave the HA VPN gateway's interfaces: the on-prem gateways dial them and take them as the tunnels' IKE IDs", strings.Join(v.HAVPNAddresses, ", ")),
				"in out/terraform/root: terraform output "+layout.VPNAddressesOutput+" (the same addresses, interface 0 first)")
		}
		var secrets []string
		for _, t := range v.Tunnels {
			if s := fmt.Sprintf("%s (version %d)", t.SharedSecret.Secret, t.SharedSecret.Version); !slices.Contains(secrets, s) {
				secrets = append(secrets, s)
			}
		}
		add(fmt.Sprintf("Secret Manager secret(s) %s in project %s hold each tunnel's pre-shared key, and each on-prem gateway's install.sh ran after the key's last rotation", strings.Join(secrets, ", "), cl.GCP.Project),
			"gcloud secrets versions describe <version> --secret <secret> --project %s (state ENABLED) for each; on each on-prem gateway: swanctl --list-sas (its tunnels ESTABLISHED)", cl.GCP.Project)
		var tunnels []string
		for i := range v.Tunnels {
			tunnels = append(tunnels, cl.VPNTunnelName(i))
		}
		add(fmt.Sprintf("both HA VPN tunnels (%s) are up and their BGP sessions established, each side learning the other's prefixes", strings.Join(tunnels, ", ")),
			"gcloud compute vpn-tunnels describe <tunnel> --region %s --format='value(status,detailedStatus)' (ESTABLISHED) for each; gcloud compute routers get-status %s --region %s (each bgpPeerStatus UP, the on-prem prefixes among bestRoutes); on each on-prem gateway: vtysh -c 'show bgp summary'", region, cl.VPNRouterName(), region)
	}
	images := map[string][]string{}
	var order []string
	for _, g := range src.Groups() {
		if !g.Cloud() || g.Image == "" {
			continue
		}
		if images[g.Image] == nil {
			order = append(order, g.Image)
		}
		images[g.Image] = append(images[g.Image], g.Name)
	}
	for _, img := range order {
		var versions, gpus []string
		for _, name := range images[img] {
			g := src.NodeGroups[name]
			if v := cl.NodeVersion(g); !slices.Contains(versions, v) {
				versions = append(versions, v)
			}
			if g.GPU != nil && !slices.Contains(gpus, g.GPU.Type) {
				gpus = append(gpus, g.GPU.Type)
			}
		}
		what := fmt.Sprintf("image %s (groups %s) has kubeadm and the kubelet %s, a container runtime, bash and curl", img, strings.Join(images[img], ", "), strings.Join(versions, ", "))
		how := "on a VM made from it: kubeadm version -o short; kubelet --version; crictl version; command -v bash curl"
		if len(gpus) > 0 {
			what += fmt.Sprintf(", and an NVIDIA driver for %s that the GPU Operator accepts (or the Operator installs it)", strings.Join(gpus, ", "))
			how += "; nvidia-smi (or the GPU Operator's driver pod Ready on the node)"
		}
		add(what, "%s", how)
	}
	out = append(out, src.acceleratorZonesByHand()...)
	if img := cl.TaintRemover.Image; img != "" {
		add(fmt.Sprintf("the taint remover's image %s has bash, kubectl and curl", img),
			"docker run --rm --entrypoint sh %s -c 'command -v bash kubectl curl'", img)
	}
	if mc != nil && mc.EastWestGateway.Address != "" {
		ports := "15443 (cross-network mTLS)"
		if mc.Role == MeshRolePrimary && mesh != nil && len(mesh.RemotesOf(cl.Name)) > 0 {
			ports += ", 15012 (istiod) and 15017 (its webhook)"
		}
		add(fmt.Sprintf("the other clusters of the mesh reach %s's east-west gateway at %s on %s", cl.Name, mc.EastWestGateway.Address, ports),
			"from a node of each other cluster: nc -vz %s 15443 (and the other ports); istioctl remote-clusters on a primary lists every cluster synced", mc.EastWestGateway.Address)
	}
	return out
}

// acceleratorZonesByHand lists, per accelerator type, the zones of the
// cloud groups that nodegen's accelerator table cannot judge: no source of
// it speaks for the type in the cluster's region (where one does, vet
// refuses a zone it does not list).
func (src *Source) acceleratorZonesByHand() []ByHand {
	region := src.Cluster.GCP.Region
	if _, ok := gce.RegionZones(region); !ok {
		return nil
	}
	type unjudged struct {
		zones, groups []string
	}
	byType := map[string]*unjudged{}
	var order []string
	for _, g := range src.Groups() {
		a, ok := gce.Accelerator(g.Accelerator())
		if !g.Cloud() || !ok || a.Retired {
			continue
		}
		if _, spoken := gce.AcceleratorOffered(a.Name, region); spoken {
			continue
		}
		u := byType[a.Name]
		if u == nil {
			u = &unjudged{}
			byType[a.Name] = u
			order = append(order, a.Name)
		}
		u.groups = append(u.groups, g.Name)
		for _, z := range g.Zones {
			if gce.ZoneRegion(z) == region && !slices.Contains(u.zones, z) {
				u.zones = append(u.zones, z)
			}
		}
	}
	var out []ByHand
	for _, name := range order {
		u := byType[name]
		if len(u.zones) == 0 {
			continue
		}
		slices.Sort(u.zones)
		out = append(out, ByHand{
			Cluster: src.Cluster.Name,
			What:    fmt.Sprintf("Compute Engine offers %s in zone(s) %s (groups %s): nodegen's accelerator table has no source for it in %s", name, strings.Join(u.zones, ", "), strings.Join(u.groups, ", "), region),
			How:     fmt.Sprintf("%s (prints each zone that offers it; then refresh the table with %s)", gce.AcceleratorZonesCommand(name, u.zones), gce.RefreshCommand),
		})
	}
	return out
}
