package validate

import (
	"slices"
	"strings"

	"github.com/nodegen/nodegen/internal/diag"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/source"
)

// iamCondition refuses a source whose autoscaler IAM condition
// (model.Source.AutoscalerCondition: each autoscaled MIG by name, each cloud
// group's instance prefix per zone, each autoscaled group's template
// prefix) is longer than model.AutoscalerConditionCap. A condition that fits by
// naming only the cluster's prefix, "<cluster>-", per zone would also
// grant the MIGs, instances and templates of every cluster of the project
// whose name starts with it (cluster "<cluster>-2" among them), so nodegen
// does not shorten it that way.
func (c *checker) iamCondition() {
	byPrefix := c.src.Cluster.GCP.IAMConditionByClusterPrefix
	n := 0
	if len(c.src.CloudGroups()) > 0 {
		// The condition naming each MIG and prefix, which the setting
		// replaces only when it is too long.
		per := *c.src
		per.Cluster.GCP.IAMConditionByClusterPrefix = false
		n = len(per.AutoscalerCondition())
	}
	if n <= model.AutoscalerConditionCap {
		if byPrefix {
			// The condition names each MIG and prefix: the setting, which
			// would grant every cluster named "<cluster>-…" once it takes
			// effect, changes nothing now.
			c.at(sel("cluster", "gcp", "iamConditionByClusterPrefix"), "iamConditionByClusterPrefix has no effect: the autoscaler's IAM condition naming each MIG and prefix is %d characters, within the %d nodegen renders; remove it (set it again if the condition grows over that, knowing it then grants the clusters whose names start with %q)", n, model.AutoscalerConditionCap, c.src.Cluster.Name+"-")
		}
		return
	}
	if byPrefix {
		return
	}
	name := c.src.Cluster.Name
	c.at(sel("cluster", "name"),
		"the autoscaler's IAM condition, naming each of the cluster's %d autoscaled MIGs and each cloud group's instance and template prefix, is %d characters, over the %d nodegen renders; a condition on the prefix %q would fit but also grant the MIGs, instances and templates of any other cluster in project %s whose name starts with %q (e.g. %q): use fewer cloud groups or zones, or shorter group names, or, where no such cluster exists or will, set cluster.gcp.iamConditionByClusterPrefix: true",
		len(c.src.AutoscaledMIGs()), n, model.AutoscalerConditionCap, name+"-", c.src.Cluster.GCP.Project, name+"-", name+"-2")
}

// iamPrefixFleet refuses cluster.gcp.iamConditionByClusterPrefix in a
// fleet that holds the very cluster the setting says does not exist:
// another cluster in the same project whose name starts with
// "<cluster>-". Its MIGs, instances and instance templates are all named
// "<its name>-…" (model.Cluster.MIGName, BaseInstanceName,
// TemplatePrefix), so the condition on the prefix "<cluster>-"
// (model.Source.AutoscalerCondition, which leaves out by name only this
// cluster's own autoscaler MIG) would let this cluster's autoscaler
// resize, delete and read them.
func iamPrefixFleet(l *source.Loaded) diag.List {
	var list diag.List
	for _, m := range l.Members {
		if m.Broken.All || m.Broken.Cluster || !m.Source.Cluster.GCP.IAMConditionByClusterPrefix {
			continue
		}
		cl := &m.Source.Cluster
		var covered []string
		for _, o := range l.Members {
			ocl := &o.Source.Cluster
			if o == m || o.Broken.All || o.Broken.Cluster || ocl.GCP.Project != cl.GCP.Project {
				continue
			}
			if strings.HasPrefix(ocl.Name, cl.Name+"-") {
				covered = append(covered, ocl.Name)
			}
		}
		if len(covered) == 0 {
			continue
		}
		slices.Sort(covered)
		c := &checker{pos: m}
		c.at(sel("cluster", "gcp", "iamConditionByClusterPrefix"), "the autoscaler's IAM condition on the prefix %q would also grant cluster %s of this fleet, in the same project %s, whose MIGs, instances and instance templates all start with it: this cluster's autoscaler could resize and delete them; remove the setting and use fewer cloud groups or zones, or shorter group names, or rename one of the clusters so that no name starts with %q",
			cl.Name+"-", andList(covered), cl.GCP.Project, cl.Name+"-")
		list = append(list, c.list...)
	}
	return list
}
