//go:build linux

package vpnlab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/yaml"
)

// PodNetwork is the pod network the rendered Calico objects declare.
type PodNetwork struct {
	// MTU is the pods' MTU (Calico gives it to their veth pairs and to
	// vxlan.calico).
	MTU int
	// Pool is the IP pool's range.
	Pool netip.Prefix
}

// renderedPodNetwork reads the Calico objects in out/calico/: the
// tigera-operator's Installation (spec.calicoNetwork.mtu, its one IP
// pool) and a manifest install's FelixConfiguration (vxlanMTU) and
// IPPool. Both must say the same MTU and pool, with VXLAN always (the
// encapsulation the lab builds).
func renderedPodNetwork(out string) (PodNetwork, error) {
	var pn PodNetwork
	files, _ := filepath.Glob(filepath.Join(out, "calico", "*.yaml"))
	sort.Strings(files)
	if len(files) == 0 {
		return pn, fmt.Errorf("%s: no Calico objects", filepath.Join(out, "calico"))
	}
	type obj struct {
		Kind string `json:"kind"`
		Spec struct {
			// Installation
			CalicoNetwork *struct {
				MTU     int `json:"mtu"`
				IPPools []struct {
					CIDR          string `json:"cidr"`
					Encapsulation string `json:"encapsulation"`
				} `json:"ipPools"`
			} `json:"calicoNetwork"`
			// FelixConfiguration
			VXLANMTU int `json:"vxlanMTU"`
			// IPPool
			CIDR      string `json:"cidr"`
			VXLANMode string `json:"vxlanMode"`
		} `json:"spec"`
	}
	seen := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return pn, err
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var o obj
			if err := yaml.Unmarshal(doc, &o); err != nil {
				return pn, fmt.Errorf("%s: document %d: %w", f, i+1, err)
			}
			where := fmt.Sprintf("%s (%s)", filepath.Base(f), o.Kind)
			switch o.Kind {
			case "Installation":
				seen[o.Kind] = true
				n := o.Spec.CalicoNetwork
				if n == nil || len(n.IPPools) != 1 {
					return pn, fmt.Errorf("%s: want spec.calicoNetwork with one IP pool", where)
				}
				if n.IPPools[0].Encapsulation != "VXLAN" {
					return pn, fmt.Errorf("%s: encapsulation %q: the lab builds VXLAN", where, n.IPPools[0].Encapsulation)
				}
				if err := pn.set(n.MTU, n.IPPools[0].CIDR); err != nil {
					return pn, fmt.Errorf("%s: %w", where, err)
				}
			case "FelixConfiguration":
				seen[o.Kind] = true
				if err := pn.set(o.Spec.VXLANMTU, ""); err != nil {
					return pn, fmt.Errorf("%s: %w", where, err)
				}
			case "IPPool":
				seen[o.Kind] = true
				if o.Spec.VXLANMode != "Always" {
					return pn, fmt.Errorf("%s: vxlanMode %q: the lab builds VXLAN between every pair of nodes", where, o.Spec.VXLANMode)
				}
				if err := pn.set(0, o.Spec.CIDR); err != nil {
					return pn, fmt.Errorf("%s: %w", where, err)
				}
			}
		}
	}
	if !seen["Installation"] {
		return pn, fmt.Errorf("%s: no Installation", filepath.Join(out, "calico"))
	}
	return pn, nil
}

// set records an MTU (0: none) and a pool ("": none), which must agree
// with those recorded before.
func (pn *PodNetwork) set(mtu int, pool string) error {
	if mtu != 0 {
		if mtu < 576 || mtu > 9000 {
			return fmt.Errorf("pod MTU %d", mtu)
		}
		if pn.MTU != 0 && pn.MTU != mtu {
			return fmt.Errorf("pod MTU %d, elsewhere %d", mtu, pn.MTU)
		}
		pn.MTU = mtu
	}
	if pool != "" {
		p, err := netip.ParsePrefix(pool)
		if err != nil {
			return err
		}
		if pn.Pool.IsValid() && pn.Pool != p {
			return fmt.Errorf("pool %s, elsewhere %s", p, pn.Pool)
		}
		pn.Pool = p
	}
	return nil
}
