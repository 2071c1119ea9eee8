package gce

import (
	"fmt"
	"slices"
	"sort"
)

// The predefined IAM roles whoever runs terraform apply on out/terraform
// needs, derived from the resource types it renders.

// Google's IAM reference pages the roles of ApplyRoles are read from: each
// role's permissions as the page lists them.
const (
	IAMReferenceCompute         = "https://cloud.google.com/iam/docs/roles-permissions/compute"
	IAMReferenceIAM             = "https://cloud.google.com/iam/docs/roles-permissions/iam"
	IAMReferenceMonitoring      = "https://cloud.google.com/iam/docs/roles-permissions/monitoring"
	IAMReferenceResourceManager = "https://cloud.google.com/iam/docs/roles-permissions/resourcemanager"
	IAMReferenceSecretManager   = "https://cloud.google.com/iam/docs/roles-permissions/secretmanager"
	IAMReferenceStorage         = "https://cloud.google.com/iam/docs/roles-permissions/storage"
)

// ApplyRole is a predefined role and the permissions of the rendered
// resource types it is listed for.
type ApplyRole struct {
	Role string
	// For says what it is needed for, in a few words.
	For string
	// Permissions are the permissions of the provider's calls for the
	// resource types that need the role (Google's IAM reference: the role
	// holds each).
	Permissions []string
	// Reference is the page of Google's IAM reference that lists the
	// role's permissions.
	Reference string
}

// The roles of the apply.
var (
	roleInstanceAdmin = ApplyRole{"roles/compute.instanceAdmin.v1", "instance templates and zonal MIGs",
		[]string{"compute.instanceTemplates.create", "compute.instanceTemplates.useReadOnly", "compute.instanceGroupManagers.create", "compute.instanceGroupManagers.update", "compute.subnetworks.use", "compute.images.useReadOnly"}, IAMReferenceCompute}
	roleServiceAccountUser = ApplyRole{"roles/iam.serviceAccountUser", "run the VMs as the nodes' service accounts",
		[]string{"iam.serviceAccounts.actAs"}, IAMReferenceIAM}
	// Compute Network Admin: "create, modify, and delete networking
	// resources, except for firewall rules and SSL certificates".
	roleNetworkAdmin = ApplyRole{"roles/compute.networkAdmin", "the network: VPC, subnetwork, health checks, Cloud Router and NAT, HA VPN gateways and tunnels, addresses and load balancers",
		[]string{"compute.networks.create", "compute.subnetworks.create", "compute.healthChecks.create", "compute.regionHealthChecks.create", "compute.routers.create", "compute.routers.update", "compute.vpnGateways.create", "compute.externalVpnGateways.create", "compute.vpnTunnels.create", "compute.addresses.create", "compute.forwardingRules.create", "compute.regionBackendServices.create"}, IAMReferenceCompute}
	// Compute Security Admin: firewall rules (Network Admin only reads
	// them).
	roleSecurityAdmin = ApplyRole{"roles/compute.securityAdmin", "the firewall rules",
		[]string{"compute.firewalls.create", "compute.firewalls.update", "compute.firewalls.delete"}, IAMReferenceCompute}
	roleServiceAccountAdmin = ApplyRole{"roles/iam.serviceAccountAdmin", "the nodes' and the autoscaler node's service accounts (unless the module is given its own)",
		[]string{"iam.serviceAccounts.create"}, IAMReferenceIAM}
	roleRoleAdmin = ApplyRole{"roles/iam.roleAdmin", "the project custom roles of the autoscaler and the renewer",
		[]string{"iam.roles.create", "iam.roles.update"}, IAMReferenceIAM}
	roleProjectIAMAdmin = ApplyRole{"roles/resourcemanager.projectIamAdmin", "the service accounts' project role bindings",
		[]string{"resourcemanager.projects.setIamPolicy"}, IAMReferenceResourceManager}
	roleSecretAdmin = ApplyRole{"roles/secretmanager.admin", "the join token's secret and who may read it",
		[]string{"secretmanager.secrets.create", "secretmanager.secrets.setIamPolicy"}, IAMReferenceSecretManager}
	roleAlertPolicyEditor = ApplyRole{"roles/monitoring.alertPolicyEditor", "the VPN's Cloud Monitoring alert policies (in the VPN's project)",
		[]string{"monitoring.alertPolicies.create", "monitoring.alertPolicies.update", "monitoring.alertPolicies.delete"}, IAMReferenceMonitoring}
	roleSecretAccessor = ApplyRole{"roles/secretmanager.secretAccessor", "read the VPN tunnels' pre-shared keys at apply (on those secrets is enough)",
		[]string{"secretmanager.versions.access"}, IAMReferenceSecretManager}
)

// applyRoles are the roles each resource type nodegen renders needs to be
// created, by type (resource and ephemeral blocks of the
// hashicorp/google provider). A type missing here makes ApplyRoles fail,
// and with it nodegen gen.
var applyRoles = map[string][]ApplyRole{
	TFInstanceTemplate:   {roleInstanceAdmin, roleServiceAccountUser},
	TFGroupManager:       {roleInstanceAdmin},
	TFHealthCheck:        {roleNetworkAdmin},
	TFNetwork:            {roleNetworkAdmin},
	TFSubnetwork:         {roleNetworkAdmin},
	TFFirewall:           {roleSecurityAdmin},
	TFRouter:             {roleNetworkAdmin},
	TFRouterNAT:          {roleNetworkAdmin},
	TFHAVPNGateway:       {roleNetworkAdmin},
	TFExternalVPNGateway: {roleNetworkAdmin},
	TFVPNTunnel:          {roleNetworkAdmin},
	TFRouterInterface:    {roleNetworkAdmin},
	TFRouterPeer:         {roleNetworkAdmin},
	TFAlertPolicy:        {roleAlertPolicyEditor},
	TFServiceAccount:     {roleServiceAccountAdmin},
	TFCustomRole:         {roleRoleAdmin},
	TFProjectIAMMember:   {roleProjectIAMAdmin},
	TFSecret:             {roleSecretAdmin},
	TFSecretIAMMember:    {roleSecretAdmin},
	TFSecretVersion:      {roleSecretAccessor},
	TFAddress:            {roleNetworkAdmin},
	TFRegionHealthCheck:  {roleNetworkAdmin},
	TFRegionBackend:      {roleNetworkAdmin},
	TFForwardingRule:     {roleNetworkAdmin},
}

// RoleCovering is a role with the rendered resource types it is needed
// for.
type RoleCovering struct {
	ApplyRole
	Types []string
}

// ApplyRoles returns the roles the given resource types need, each with
// the types it is listed for (sorted), in a fixed order of roles; an
// error names a type without a role.
func ApplyRoles(types []string) ([]RoleCovering, error) {
	byRole := map[string]*RoleCovering{}
	for _, typ := range types {
		roles, ok := applyRoles[typ]
		if !ok {
			return nil, fmt.Errorf("resource type %s has no role in the day-0 role table (gce.applyRoles): add the predefined role that creates it, from Google's IAM reference", typ)
		}
		for _, r := range roles {
			rc := byRole[r.Role]
			if rc == nil {
				rc = &RoleCovering{ApplyRole: r}
				byRole[r.Role] = rc
			}
			if !slices.Contains(rc.Types, typ) {
				rc.Types = append(rc.Types, typ)
			}
		}
	}
	out := make([]RoleCovering, 0, len(byRole))
	for _, rc := range byRole {
		sort.Strings(rc.Types)
		out = append(out, *rc)
	}
	order := []ApplyRole{roleInstanceAdmin, roleServiceAccountUser, roleNetworkAdmin, roleSecurityAdmin, roleServiceAccountAdmin, roleRoleAdmin, roleProjectIAMAdmin, roleSecretAdmin, roleSecretAccessor, roleAlertPolicyEditor}
	rank := func(role string) int {
		return slices.IndexFunc(order, func(r ApplyRole) bool { return r.Role == role })
	}
	sort.Slice(out, func(i, j int) bool { return rank(out[i].Role) < rank(out[j].Role) })
	return out, nil
}

// HasApplyRole reports whether resource type typ has its roles in the
// table.
func HasApplyRole(typ string) bool {
	_, ok := applyRoles[typ]
	return ok
}
