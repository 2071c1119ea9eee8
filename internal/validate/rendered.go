package validate

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/nodegen/nodegen/internal/model"
)

// The mesh's values nodegen renders into Kubernetes, Istio and GCE
// objects, held to what those objects' own validation refuses.

// gceNameMax is the length of a GCE resource name (RFC 1035, at most 63
// characters: Compute Engine API, "name" of every resource).
const gceNameMax = 63

// gatewayHostProblem says why Istio's validation refuses host as a host of
// a Gateway server, or "" when it takes it. Written from istio/istio
// pkg/config/validation/agent/validation.go (the release go.mod pins):
// ValidateNamespaceSlashWildcardHostname with isGateway (an optional
// "namespace/" of "*", "." or a DNS-1123 label), then
// validateSidecarOrGatewayHostnamePart: "*" or a name with a dot (no short
// names), ValidateWildcardDomain (at most 255 characters, a wildcard only
// as the first label, "*", "*foo" or a DNS-1123 label, the other labels
// DNS-1123 labels and the last not all digits) unless it is an IP address,
// and ValidatePartialWildCard ("*" only alone or as "*.").
func gatewayHostProblem(host string) string {
	if strings.Contains(host, "://") {
		return "a URL is not a host: give the host name alone"
	}
	name := host
	if ns, rest, ok := strings.Cut(host, "/"); ok {
		if ns == "" || rest == "" {
			return "a namespace/host entry needs both parts"
		}
		if ns != "*" && ns != "." && len(validation.IsDNS1123Label(strings.ToLower(ns))) > 0 {
			return fmt.Sprintf("namespace %q is not *, . or a namespace name", ns)
		}
		name = rest
	}
	switch {
	case name == "*":
		return ""
	case !strings.Contains(name, "."):
		return "Istio takes no short host names: give a fully qualified name (with a dot) or \"*\""
	}
	if a, err := netip.ParseAddr(name); err == nil && a.IsValid() {
		return ""
	}
	if strings.Contains(name, ":") {
		return "a host takes no port: the server's port is the extra port itself"
	}
	if strings.Contains(name, "*") && !strings.HasPrefix(name, "*.") {
		return "a wildcard stands only alone or as the first label (\"*.example.com\")"
	}
	if len(name) > 255 {
		return "longer than 255 characters"
	}
	first, rest, _ := strings.Cut(name, ".")
	if !wildcardLabel.MatchString(first) || len(first) > 63 {
		return fmt.Sprintf("label %q is not a DNS label", first)
	}
	labels := strings.Split(rest, ".")
	if _, err := strconv.Atoi(labels[len(labels)-1]); err == nil {
		return fmt.Sprintf("the top-level domain %q is all digits", labels[len(labels)-1])
	}
	for i, l := range labels {
		if i == len(labels)-1 && l == "" {
			break // a trailing dot, as in "example.com."
		}
		if l == "*" {
			return "a wildcard stands only alone or as the first label (\"*.example.com\")"
		}
		if len(validation.IsDNS1123Label(strings.ToLower(l))) > 0 {
			return fmt.Sprintf("label %q is not a DNS label", l)
		}
	}
	return ""
}

// wildcardLabel is Istio's wildcard first label (pkg/config/labels,
// wildcardPrefix): "*", or a DNS-1123 label with an optional "*" or "*-"
// before it.
var wildcardLabel = regexp.MustCompile(`^(\*|(\*|\*-)?[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)$`)

// rendered checks the values of one cluster's mesh entry that nodegen
// renders into objects: the network (a label value), the extra ports'
// names (Service port names), their listeners' hosts (Gateway servers),
// the loadBalancerClass, and the GCE names of the load balancer.
func (c *checker) rendered(f *model.Fleet, name string, p []cue.Selector) {
	mc := f.Mesh.Clusters[name]
	gw := &mc.EastWestGateway
	// topology.istio.io/network on the istio-system namespace, the
	// gateway's Service and pods: a label value (kubernetes v1.37.2
	// pkg/apis/core/validation/validation.go validates every object's labels
	// with apimachinery's ValidateLabels).
	if msgs := validation.IsValidLabelValue(mc.Network); len(msgs) > 0 {
		c.at(join(sel("mesh", "clusters", name), "network"), "network %q is the value of the label %s on the istio-system namespace and the gateway's Service and pods: %s", mc.Network, model.NetworkLabel, strings.Join(msgs, "; "))
	}
	for i, ep := range gw.ExtraPorts {
		ip := join(p, "extraPorts", i)
		// A Service port's name is a DNS-1123 label (validateServicePort:
		// ValidateDNS1123Label).
		if msgs := validation.IsDNS1123Label(ep.Name); len(msgs) > 0 {
			c.at(join(ip, "name"), "port name %q is the gateway Service's port name, which the API server takes only as a DNS label: %s", ep.Name, strings.Join(msgs, "; "))
		}
		if ep.Listener == nil {
			continue
		}
		for j, h := range ep.Listener.Hosts {
			if why := gatewayHostProblem(h); why != "" {
				c.at(join(ip, "listener", "hosts", j), "host %q: Istio's validation refuses the Gateway eastwest-extra-ports with it: %s", h, why)
			}
		}
	}
	r := gw.ReachedThrough
	if r != nil && r.LoadBalancerController != nil && r.LoadBalancerController.LoadBalancerClass != "" {
		// spec.loadBalancerClass: ValidateQualifiedName
		// (validateLoadBalancerClassField).
		cls := r.LoadBalancerController.LoadBalancerClass
		if msgs := validation.IsQualifiedName(cls); len(msgs) > 0 {
			c.at(join(p, "reachedThrough", "loadBalancerController", "loadBalancerClass"), "loadBalancerClass %q: the API server takes only a qualified name (e.g. \"metallb.io/metallb\"): %s", cls, strings.Join(msgs, "; "))
		}
	}
	if r != nil && r.InternalLoadBalancer != nil && f.Cluster(name) != nil {
		longest := model.MeshLBName(name, model.MeshLBHealthChecksSuffix)
		if len(longest) > gceNameMax {
			c.atKey(sel("mesh", "clusters", name), "the internal load balancer's GCE names start with the cluster's name: %s is %d characters (GCE allows %d); shorten the cluster's name to %d characters or fewer", longest, len(longest), gceNameMax, gceNameMax-(len(longest)-len(name)))
		}
	}
}
