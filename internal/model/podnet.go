package model

import (
	"fmt"
	"strings"
)

// PodNetwork is the CNI between the nodes (cluster.podNetwork).
type PodNetwork struct {
	CNI           string `json:"cni"`
	Encapsulation string `json:"encapsulation"`
	PodCIDR       string `json:"podCIDR"`
	ServiceCIDR   string `json:"serviceCIDR"`
	// MTU is the source's pod MTU, 0 when it leaves it to nodegen (see
	// Cluster.PodMTU).
	MTU int `json:"mtu,omitempty"`
}

// CNIs and encapsulations of PodNetwork. The encapsulations are the
// tigera-operator's names (Installation spec.calicoNetwork.ipPools[].encapsulation);
// only the two that encapsulate every pod packet between nodes are ones
// nodegen renders.
const (
	CNICalico = "calico"

	EncapVXLAN = "VXLAN"
	EncapIPIP  = "IPIP"
)

// IPFamily is the IP version of a packet's outer header.
type IPFamily int

// IP families.
const (
	IPv4 IPFamily = 4
	IPv6 IPFamily = 6
)

func (f IPFamily) String() string { return fmt.Sprintf("IPv%d", int(f)) }

// CloudVPNGatewayMTU is Cloud VPN's gateway MTU: the largest ESP packet
// it takes (Google, Cloud VPN "MTU considerations": 1460 bytes; 1440 for
// HA VPN over Cloud Interconnect, which nodegen does not render).
const CloudVPNGatewayMTU = 1460

// Cloud VPN's payload MTU on an IPv4 gateway interface by how ESP
// authenticates (Google, Cloud VPN "MTU considerations", the payload MTU
// table): AES-GCM (AEAD) 1406; HMAC-SHA2-256-128 or HMAC-SHA1-96 1390;
// HMAC-SHA2-512-256 1374. An IPv6 gateway interface carries 20 bytes
// less (its header is 40 bytes, not 20), NAT-T 8 less (the UDP header
// ESP travels in). The keys are strongSwan's names; an ESP proposal with
// another integrity algorithm (sha384: HMAC-SHA2-384-192) has no entry in
// Google's table, and vet refuses it.
var espPayloadMTUv4 = map[string]int{
	"gcm":    1406,
	"sha256": 1390,
	"sha1":   1390,
	"sha512": 1374,
}

// Payload MTU costs of the tunnel's outer header.
const (
	ipv6TunnelCost = 20
	natTCost       = 8
)

// ESPAuth is how an ESP proposal in strongSwan's syntax authenticates
// its packets, as espPayloadMTUv4 names it: "gcm" for an AES-GCM cipher,
// else its integrity algorithm ("" when it has none).
func ESPAuth(proposal string) string {
	for _, a := range strings.Split(proposal, "-") {
		if strings.HasPrefix(a, "aes") && strings.Contains(a, "gcm") {
			return "gcm"
		}
	}
	for _, a := range strings.Split(proposal, "-") {
		if strings.HasPrefix(a, "sha") || a == "md5" || a == "aesxcbc" || a == "aescmac" {
			return a
		}
	}
	return ""
}

// ESPPayloadMTU is the payload MTU of a Cloud VPN tunnel (the largest
// inner packet it carries) with the ESP proposal, on a gateway interface
// of the family, with or without NAT-T. ok is false when Google's table
// has no entry for the proposal's authentication.
func ESPPayloadMTU(proposal string, family IPFamily, natT bool) (mtu int, ok bool) {
	mtu, ok = espPayloadMTUv4[ESPAuth(proposal)]
	if !ok {
		return 0, false
	}
	if family == IPv6 {
		mtu -= ipv6TunnelCost
	}
	if natT {
		mtu -= natTCost
	}
	return mtu, true
}

// EncapOverhead is what the encapsulation adds to each pod packet between
// nodes whose addresses are of the family (Calico's MTU page,
// docs.tigera.io networking/configuring/mtu: VXLAN 50 bytes over IPv4, 70
// over IPv6; IP in IP 20, IPv4 only). ok is false for an encapsulation
// nodegen does not render.
func EncapOverhead(encap string, family IPFamily) (overhead int, ok bool) {
	switch {
	case encap == EncapVXLAN && family == IPv4:
		return 50, true
	case encap == EncapVXLAN && family == IPv6:
		return 70, true
	case encap == EncapIPIP && family == IPv4:
		return 20, true
	}
	return 0, false
}

// MTUPath is one path a pod packet can take and the largest packet it
// carries.
type MTUPath struct {
	What string `json:"what"`
	MTU  int    `json:"mtu"`
}

// PodMTU is the pod MTU and how it was derived: the smallest MTU of the
// paths a pod packet can take, less the encapsulation's overhead.
type PodMTU struct {
	Paths []MTUPath
	// Limit is the smallest of Paths' MTUs.
	Limit int
	// Encapsulation and Overhead are the pod network's encapsulation and
	// what it costs.
	Encapsulation string
	Overhead      int
	// Computed is Limit - Overhead, the largest pod MTU that carries.
	Computed int
	// MTU is the pod MTU nodegen renders: the source's, or Computed.
	MTU int
	// Unknown lists what has no MTU nodegen knows (an ESP proposal outside
	// Google's table, an encapsulation nodegen does not render): vet
	// refuses such a source, and Computed is 0.
	Unknown []string
}

// TunnelPayloadMTU is tunnel i's payload MTU (ESPPayloadMTU for the VPN's
// ESP proposal, an IPv4 gateway interface, and NAT-T when the peer
// gateway it ends on is behind NAT): the MTU of its on-prem XFRM
// interface, so that the gateway fragments before it encrypts, as Cloud
// VPN requires. ok is false when the proposal is not in Google's table.
func (v *VPN) TunnelPayloadMTU(i int) (int, bool) {
	if len(v.PeerGateways) == 0 {
		// vet refuses a VPN without a peer gateway (its topology).
		return 0, false
	}
	return ESPPayloadMTU(v.ESPProposal, IPv4, v.PeerGateways[v.PeerGatewayOf(i)].NATTraversal)
}

// TCPMSS is the largest TCP segment an IPv4 packet of the MTU carries (a
// 20-byte IP and a 20-byte TCP header).
func TCPMSS(mtu int) int { return mtu - 40 }

// PodMTU derives the pod MTU from the source: the cloud nodes' NIC (the
// VPC's MTU), the on-prem nodes' NIC and each tunnel's payload MTU, the
// smallest of them less the encapsulation's overhead (nodes and tunnels
// are IPv4). nil without a pod network or a VPC network.
func (c *Cluster) PodMTU() *PodMTU {
	pn, n := c.PodNetwork, c.GCP.Network
	if pn == nil || n == nil {
		return nil
	}
	m := &PodMTU{Encapsulation: pn.Encapsulation}
	m.Paths = append(m.Paths,
		MTUPath{"the cloud nodes' NIC (cluster.gcp.network.mtu, the VPC's MTU)", n.MTU},
		MTUPath{"the on-prem nodes' NIC (cluster.gcp.network.onpremNodeMTU)", n.OnpremNodeMTU})
	if v := n.VPN; v != nil {
		for i := range v.Tunnels {
			if len(v.PeerGateways) == 0 {
				// The topology's finding says so; without a gateway a
				// tunnel has no payload MTU.
				m.Unknown = append(m.Unknown, fmt.Sprintf("the payload MTU of %s, which ends on no peer gateway", TunnelName(i)))
				break
			}
			gw := v.PeerGateways[v.PeerGatewayOf(i)]
			nat := "no NAT-T"
			if gw.NATTraversal {
				nat = "NAT-T"
			}
			mtu, ok := v.TunnelPayloadMTU(i)
			if !ok {
				m.Unknown = append(m.Unknown, fmt.Sprintf("the payload MTU of ESP proposal %q (Google's table has none)", v.ESPProposal))
				break
			}
			m.Paths = append(m.Paths, MTUPath{fmt.Sprintf("%s's payload MTU (Cloud VPN's table: ESP %s, IPv4 gateway interfaces, %s)", TunnelName(i), v.ESPProposal, nat), mtu})
		}
	}
	m.Limit = m.Paths[0].MTU
	for _, p := range m.Paths[1:] {
		m.Limit = min(m.Limit, p.MTU)
	}
	o, ok := EncapOverhead(pn.Encapsulation, IPv4)
	if !ok {
		m.Unknown = append(m.Unknown, fmt.Sprintf("the overhead of encapsulation %q", pn.Encapsulation))
	}
	m.Overhead = o
	if len(m.Unknown) == 0 {
		m.Computed = m.Limit - m.Overhead
	}
	m.MTU = m.Computed
	if pn.MTU != 0 {
		m.MTU = pn.MTU
	}
	return m
}

// Derivation says how the computed pod MTU was derived, in one line:
// "1356 = min(1460, 1500, 1406, 1406) - 50 (VXLAN over IPv4)".
func (m *PodMTU) Derivation() string {
	mtus := make([]string, len(m.Paths))
	for i, p := range m.Paths {
		mtus[i] = fmt.Sprint(p.MTU)
	}
	return fmt.Sprintf("%d = min(%s) - %d (%s over IPv4)", m.Computed, strings.Join(mtus, ", "), m.Overhead, m.Encapsulation)
}

// Stated says the pod MTU nodegen renders and where it comes from: the
// derivation, or the source's mtu beside it.
func (m *PodMTU) Stated() string {
	if m.MTU != m.Computed {
		return fmt.Sprintf("%d (cluster.podNetwork.mtu; computed: %s)", m.MTU, m.Derivation())
	}
	return m.Derivation()
}
