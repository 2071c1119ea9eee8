package model

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// How the Cluster Autoscaler's GCE provider maps a Node to a node group,
// and the providerID nodegen gives every node outside the MIGs (the
// on-prem control plane and the on-prem workers) so that the mapping
// answers "no group" instead of failing.
//
// Sources (kubernetes/autoscaler, tag cluster-autoscaler-1.35.0; the same
// code in every tag up to cluster-autoscaler-1.36.1):
//   - cluster-autoscaler/cloudprovider/gce/gce_cloud_provider.go
//     NodeGroupForNode: GceRefFromProviderId(node.Spec.ProviderID), then
//     gceManager.GetMigForInstance(ref); a parse error is returned as is.
//   - same file, GceRefFromProviderId: an empty id is the error "wrong id:
//     expected format gce://<project-id>/<zone>/<name>, got nil"; otherwise
//     id[6:] (the prefix is not read, and an id shorter than 6 bytes makes
//     the slice expression panic) is split at "/" and must give exactly 3
//     parts: project, zone, name (empty parts are accepted).
//   - cloudprovider/gce/mig_info_provider.go GetMigForInstance: an
//     instance not in the MIG-instance cache is looked up by
//     findMigWithMatchingBasename: the first registered MIG (the --nodes
//     MIGs) with the same project and zone whose base instance name is a
//     prefix of the instance name. None: nil, nil (the node belongs to no
//     group and is left alone). One: that MIG's instances are listed, and
//     the node belongs to it if the listing holds the instance.
//
// Where the autoscaler reads NodeGroupForNode on every node and fails the
// whole loop on an error: AutoscalerProviderIDBug.

// UnmanagedProject and UnmanagedZone are the project and zone of the
// providerID nodegen gives nodes outside the MIGs. No GCE project can be
// "onprem.invalid": project IDs are 6 to 30 lower-case letters, digits and
// hyphens (domain-scoped ones are "<domain>:<id>", with a colon), and
// .invalid is a reserved top-level domain (RFC 2606) no domain-scoped
// project can be under. No GCE zone is "onprem" either (zones are
// <region>-<letter>). So the GCE provider finds no MIG for such a node,
// and the node garbage collector, which considers only providerIDs in the
// cluster's own project, never takes one for its own.
const (
	UnmanagedProject = "onprem.invalid"
	UnmanagedZone    = "onprem"
	// UnmanagedProviderIDPrefix is every such providerID without the node's name.
	UnmanagedProviderIDPrefix = "gce://" + UnmanagedProject + "/" + UnmanagedZone + "/"
)

// What a source does about the providerID of the nodes outside the MIGs
// (cluster.onpremProviderID).
const (
	// OnpremProviderIDUnmanaged: nodegen renders UnmanagedProviderID for
	// the control plane and every on-prem node.
	OnpremProviderIDUnmanaged = "unmanaged"
	// OnpremProviderIDNone: the nodes keep whatever they have (kubeadm
	// gives them none).
	OnpremProviderIDNone = "none"
)

// UnmanagedProviderID is the providerID of on-prem node node: the GCE
// provider parses it and maps it to no node group.
func UnmanagedProviderID(node string) string { return UnmanagedProviderIDPrefix + node }

// IsUnmanagedProviderID reports whether id is UnmanagedProviderID of some node.
func IsUnmanagedProviderID(id string) bool {
	name, ok := strings.CutPrefix(id, UnmanagedProviderIDPrefix)
	return ok && name != "" && !strings.Contains(name, "/")
}

// GCERef is a GCE instance as a providerID names it,
// gce://<project>/<zone>/<name>: what GCERefFromProviderID (the
// autoscaler's reading) and ParseGCEProviderID (nodegen's) make of one.
type GCERef struct{ Project, Zone, Name string }

// ParseGCEProviderID is nodegen's own reading of a providerID, for drift
// and rollout: a gce:// prefix and three non-empty parts, else ok is
// false. It is stricter than the autoscaler's GCERefFromProviderID, which
// takes any 6-byte prefix and empty parts: what matters there is what the
// autoscaler does with a node, here whether the node is a GCE instance.
func ParseGCEProviderID(id string) (ref GCERef, ok bool) {
	rest, ok := strings.CutPrefix(id, "gce://")
	if !ok {
		return GCERef{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return GCERef{}, false
	}
	return GCERef{Project: parts[0], Zone: parts[1], Name: parts[2]}, true
}

// ErrProviderIDEmpty is GceRefFromProviderId's error for an empty providerID.
var ErrProviderIDEmpty = errors.New("wrong id: expected format gce://<project-id>/<zone>/<name>, got nil")

// GCERefFromProviderID parses id as the GCE provider's GceRefFromProviderId
// does, with the same error text; an id the provider would panic on (1 to
// 5 bytes) is an error here.
func GCERefFromProviderID(id string) (GCERef, error) {
	if id == "" {
		return GCERef{}, ErrProviderIDEmpty
	}
	if len(id) < len("gce://") {
		return GCERef{}, fmt.Errorf("providerID %q is shorter than 6 bytes: the GCE provider's id[6:] panics on it", id)
	}
	parts := strings.Split(id[6:], "/")
	if len(parts) != 3 {
		return GCERef{}, fmt.Errorf("wrong id: expected format gce://<project-id>/<zone>/<name>, got %v", id)
	}
	return GCERef{Project: parts[0], Zone: parts[1], Name: parts[2]}, nil
}

// MIGByBasename is findMigWithMatchingBasename over the MIGs nodegen
// registers with the autoscaler (--nodes): the first, in flags.txt's
// order, in ref's project and zone whose base instance name is a prefix of
// ref's name. ok is false when none is.
func (s *Source) MIGByBasename(ref GCERef) (mig MIG, ok bool) {
	for _, m := range s.AutoscaledMIGs() {
		if s.Cluster.GCP.Project == ref.Project && m.Zone == ref.Zone && strings.HasPrefix(ref.Name, s.Cluster.BaseInstanceName(m.Group)) {
			return m, true
		}
	}
	return MIG{}, false
}

// AutoscalerNodeGroup is what the GCE provider's NodeGroupForNode answers
// for a node with this providerID, given that a MIG's instance listing
// holds every instance named after its base name: the MIG, or ok false
// for none. err is the provider's error, which stops the autoscaler's
// loop in the releases AutoscalerProviderIDBug lists.
func (s *Source) AutoscalerNodeGroup(providerID string) (mig MIG, ok bool, err error) {
	ref, err := GCERefFromProviderID(providerID)
	if err != nil {
		return MIG{}, false, err
	}
	mig, ok = s.MIGByBasename(ref)
	return mig, ok, nil
}

// SetsOnpremProviderID reports whether nodegen renders the providerID of
// the nodes outside the MIGs.
func (c *Cluster) SetsOnpremProviderID() bool {
	return c.OnpremProviderID != OnpremProviderIDNone
}

// instanceSuffix is what a MIG appends to its base instance name.
var instanceSuffix = regexp.MustCompile(`^-[a-z0-9]{4}$`)

// GroupOfInstance finds the cloud group whose MIG owns a GCE instance: the
// cluster's project, one of the group's zones, and a name made of the
// group's base instance name, '-' and four characters.
func (s *Source) GroupOfInstance(ref GCERef) *NodeGroup {
	if ref.Project != s.Cluster.GCP.Project {
		return nil
	}
	for _, g := range s.CloudGroups() {
		if !slices.Contains(g.Zones, ref.Zone) {
			continue
		}
		rest, ok := strings.CutPrefix(ref.Name, s.Cluster.BaseInstanceName(g))
		if ok && instanceSuffix.MatchString(rest) {
			return g
		}
	}
	return nil
}
