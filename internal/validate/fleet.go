package validate

import (
	"cmp"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// Fleet checks what spans the clusters of a fleet source: that the
// mesh's clusters are clusters of the fleet, and that clusters in one GCP
// project do not share GCE and IAM names (MIGs, instance templates, VM
// names, service accounts, the join token's secret or metadata key), nor
// declare one VPC network's subnetworks or HA VPN addresses in ways that
// cannot all hold (fleetNetworks), nor route one's on-prem prefixes
// into another's subnetwork (fleetOnpremRoutes), nor build one image
// family into different images (familyImages); and that no cluster's
// IAM condition on its name's prefix covers another cluster of the
// fleet (iamPrefixFleet). It returns nothing for a one-cluster source
// (whose mesh, if any, the loader already rejected).
func Fleet(l *source.Loaded) diag.List {
	if l.Fleet == nil || l.Fleet.Single {
		return nil
	}
	var list diag.List
	list = append(list, meshClusters(l)...)
	list = append(list, fleetGCENames(l)...)
	list = append(list, secretRoles(fleetSecretMembers(l), true)...)
	list = append(list, familyImages(fleetSecretMembers(l), true)...)
	list = append(list, iamPrefixFleet(l)...)
	list = append(list, fleetOnpremRoutes(l)...)
	return list.Sorted()
}

// meshClusters reports the mesh's clusters that are not clusters of the
// fleet.
func meshClusters(l *source.Loaded) diag.List {
	m := l.Fleet.Mesh
	if m == nil {
		return nil
	}
	c := &checker{pos: l}
	keys := make([]string, 0, len(l.Members))
	for _, mb := range l.Members {
		keys = append(keys, mb.Key)
	}
	for _, name := range model.SortedKeys(m.Clusters) {
		if l.Member(name) != nil || l.Broken.Clusters[name] {
			continue
		}
		p := sel("mesh", "clusters", name)
		if s := diag.SuggestNames(name, keys); len(s) > 0 {
			c.atKey(p, "no cluster %q in clusters; did you mean %s?", name, diag.QuotedOrList(s))
		} else {
			c.atKey(p, "no cluster %q in clusters: every cluster of the mesh must be a cluster of the fleet", name)
		}
	}
	return c.list
}

// cloudGroup is a cloud node group of a fleet's cluster.
type cloudGroup struct {
	m    *source.Member
	g    *model.NodeGroup
	base string // base instance name
}

func (a cloudGroup) cluster() *model.Cluster { return &a.m.Source.Cluster }

// fleetGCENames reports GCE and IAM names that two clusters in one GCP
// project share. Names are indexed (sorted, or by map), never compared
// pair by pair: a fleet may have many clusters and groups.
func fleetGCENames(l *source.Loaded) diag.List {
	var list diag.List
	list = append(list, baseNameCollisions(l)...)
	list = append(list, projectNameCollisions(l)...)
	list = append(list, sharedEndpoints(l)...)
	list = append(list, fleetNetworks(l)...)
	return list
}

// baseNameCollisions reports VM, MIG and instance-template names two
// clusters in one project share: all start with the group's base instance
// name ("<cluster>-<group>"). Per project, in sorted order, every name
// that starts with another follows it directly or after other names that
// also start with it.
func baseNameCollisions(l *source.Loaded) diag.List {
	var list diag.List
	at := func(m *source.Member) *checker { return &checker{pos: m} }
	report := func(c *checker) { list = append(list, c.list...) }
	byProject := map[string][]cloudGroup{}
	for _, m := range l.Members {
		if m.Broken.Cluster {
			continue
		}
		for _, g := range m.Source.Groups() {
			if g.Cloud() && !m.Broken.Groups[g.Name] {
				p := m.Source.Cluster.GCP.Project
				byProject[p] = append(byProject[p], cloudGroup{m, g, m.Source.Cluster.BaseInstanceName(g)})
			}
		}
	}
	for _, project := range model.SortedKeys(byProject) {
		groups := byProject[project]
		slices.SortFunc(groups, func(a, b cloudGroup) int {
			return cmp.Or(strings.Compare(a.base, b.base), strings.Compare(a.m.Key, b.m.Key))
		})
		for i, a := range groups {
			for _, b := range groups[i+1:] {
				if !strings.HasPrefix(b.base, a.base) {
					break
				}
				if a.m == b.m {
					continue // one cluster's own groups: its own checks say it
				}
				if a.base == b.base {
					for _, x := range [][2]cloudGroup{{a, b}, {b, a}} {
						c := at(x[0].m)
						c.atKey(sel("nodeGroups", x[0].g.Name), "GCE names collide in project %s: this group and node group %s of cluster %s both have VMs named %s-xxxx, instance templates named %s* and MIGs named %s-<zone>; rename one of the groups (or of the clusters)",
							project, x[1].g.Name, x[1].cluster().Name, a.base, x[0].cluster().TemplatePrefix(x[0].g), a.base)
						report(c)
					}
					continue
				}
				shared := sharedZones(a.g, b.g)
				if len(shared) == 0 {
					continue
				}
				c := at(b.m)
				c.atKey(sel("nodeGroups", b.g.Name), "the VMs of this group (%s-xxxx) start with %s, the base instance name of node group %s of cluster %s in the same project (%s), in %s: the autoscaler maps VMs to MIGs by that prefix and could count them in the other cluster's MIG; rename one of the groups (or of the clusters) so neither name is a prefix of the other",
					b.base, a.base, a.g.Name, a.cluster().Name, project, andList(shared))
				report(c)
			}
		}
	}
	return list
}

// projectNameCollisions reports the project-wide names of each cluster
// that another cluster in its project shares: its service accounts and
// the join token's secret or metadata key.
func projectNameCollisions(l *source.Loaded) diag.List {
	var list diag.List
	at := func(m *source.Member) *checker { return &checker{pos: m} }
	report := func(c *checker) { list = append(list, c.list...) }
	type use struct {
		m    *source.Member
		path []any
		what string
	}
	names := map[string][]use{}
	for _, m := range l.Members {
		if m.Broken.Cluster {
			continue
		}
		cl := &m.Source.Cluster
		p := cl.GCP.Project
		for _, role := range []string{model.RoleNodes, model.RoleAutoscaler} {
			id := model.ServiceAccountID(cl.Name, role)
			names[p+"\x00sa\x00"+id] = append(names[p+"\x00sa\x00"+id], use{m, []any{"cluster", "name"}, "service account " + id})
		}
		if sm := cl.JoinToken.SecretManager; sm != nil {
			k := p + "\x00secret\x00" + sm.Secret
			names[k] = append(names[k], use{m, []any{"cluster", "joinToken", "secretManager", "secret"}, "Secret Manager secret " + sm.Secret})
		}
		if mk := cl.JoinToken.MetadataKey; mk != "" {
			k := p + "\x00metadata\x00" + mk
			names[k] = append(names[k], use{m, []any{"cluster", "joinToken", "metadataKey"}, "project metadata key " + mk})
		}
	}
	for _, k := range model.SortedKeys(names) {
		uses := names[k]
		if len(uses) < 2 {
			continue
		}
		project := k[:strings.IndexByte(k, 0)]
		for i, u := range uses {
			var others []string
			for j, o := range uses {
				if j != i {
					others = append(others, o.m.Source.Cluster.Name)
				}
			}
			c := at(u.m)
			switch {
			case strings.HasPrefix(u.what, "service account"):
				c.at(sel(u.path...), "cluster names collide in project %s: this cluster's %s is also cluster %s's; rename one of the clusters", project, u.what, andList(others))
			case strings.HasPrefix(u.what, "project metadata"):
				c.at(sel(u.path...), "the join token of this cluster and of cluster %s would be the same %s in project %s: a bootstrap token belongs to one cluster's control plane, so the other's nodes could not join; give each cluster its own", andList(others), u.what, project)
			default:
				c.at(sel(u.path...), "the join token of this cluster and of cluster %s would be the same %s in project %s: each cluster's renewer replaces the token with its own, which the other's nodes cannot join with; give each cluster its own", andList(others), u.what, project)
			}
			report(c)
		}
	}
	return list
}

// sharedEndpoints reports clusters that share a control-plane endpoint:
// one control plane per cluster, since two clusters with one endpoint
// would be one cluster whose nodes join with two sources' labels and
// tokens.
func sharedEndpoints(l *source.Loaded) diag.List {
	var list diag.List
	endpoints := map[string][]*source.Member{}
	var order []string
	for _, m := range l.Members {
		if m.Broken.Cluster {
			continue
		}
		e := endpointKey(m.Source.Cluster.ControlPlaneEndpoint)
		if len(endpoints[e]) == 0 {
			order = append(order, e)
		}
		endpoints[e] = append(endpoints[e], m)
	}
	for _, e := range order {
		ms := endpoints[e]
		if len(ms) < 2 {
			continue
		}
		for i, m := range ms {
			var others []string
			for j, o := range ms {
				if j != i {
					others = append(others, o.Source.Cluster.Name)
				}
			}
			c := &checker{pos: m}
			c.at(sel("cluster", "controlPlaneEndpoint"), "control-plane endpoint %s is also cluster %s's: each cluster of a fleet has its own control plane (the nodes of both would join one cluster, with two sources' labels, taints and tokens); give each cluster its own endpoint", m.Source.Cluster.ControlPlaneEndpoint, andList(others))
			list = append(list, c.list...)
		}
	}
	return list
}

// endpointKey is a control-plane endpoint as the nodes dial it: the host
// without case and the port as a number, so 10.0.0.1:6443 and
// 10.0.0.1:06443, or API.example.com and api.example.com, are one.
func endpointKey(ep string) string {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return strings.ToLower(ep)
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n)
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return strings.ToLower(host) + ":" + port
}
