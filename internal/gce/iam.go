package gce

import "slices"

// The Compute Engine permissions of the Cluster Autoscaler's node: the
// calls the autoscaler's GCE provider makes with nodegen's configuration,
// and those of nodegen's own workloads on that node.

// ComputePermission is one permission of the autoscaler node's custom
// role, with the calls that need it.
type ComputePermission struct {
	Permission string
	// Calls are the Compute Engine API methods that require it (each
	// method's "Authorization requires the following IAM permission" in
	// the Compute Engine REST reference).
	Calls []string
	// Callers are the functions that make those calls.
	Callers []string
	// On is the resource the permission is checked on (each method's
	// "Authorization requires the following IAM permission on the
	// specified resource ..."): an instanceGroupManager, instanceTemplate
	// or instance can be named in an IAM condition; OnProject (the list
	// calls, machine types, zone operations) cannot.
	On string
}

// Resources a Compute permission is checked on.
const (
	OnMIG      = "instanceGroupManager"
	OnTemplate = "instanceTemplate"
	OnInstance = "instance"
	OnProject  = "project"
)

// AutoscalerPermissionsSource is where AutoscalerComputePermissions come
// from: every Compute Engine API call the Cluster Autoscaler's GCE provider
// makes with nodegen's configuration (MIGs listed with --nodes, zonal),
// read from the source at that commit.
const AutoscalerPermissionsSource = "kubernetes/autoscaler@55c37cd5eb550756c5ccc5a89e9068d77797e575 cluster-autoscaler/cloudprovider/gce/autoscaling_gce_client.go (autoscalingGceClientV1), called from gce_manager.go and mig_info_provider.go"

// AutoscalerComputePermissions is the autoscaler node's custom role, one
// entry per permission, sorted. Left out on purpose, because nodegen's
// configuration never makes the call: compute.instanceGroups.list and
// compute.regions.get (FetchMigsWithName, FetchZones: only for
// --node-group-auto-discovery, gce_manager.go findMigsNamed/getZones),
// compute.machineTypes.list, compute.zones.list, compute.diskTypes.list and
// compute.reservations.list (FetchMachineTypes, FetchAvailableCpuPlatforms,
// FetchAvailableDiskTypes, FetchReservations: no caller in the provider),
// compute.instanceTemplates.get on regional templates (nodegen's are
// global).
var AutoscalerComputePermissions = []ComputePermission{
	{"compute.instanceGroupManagers.get",
		[]string{"instanceGroupManagers.get", "instanceGroupManagers.listManagedInstances"},
		[]string{"FetchMig (mig_info_provider.go)", "FetchMigInstances (mig_info_provider.go)"}, OnMIG},
	{"compute.instanceGroupManagers.list",
		[]string{"instanceGroupManagers.list"},
		[]string{"FetchAllMigs (mig_info_provider.go)"}, OnProject},
	{"compute.instanceGroupManagers.update",
		[]string{"instanceGroupManagers.resize", "instanceGroupManagers.createInstances", "instanceGroupManagers.deleteInstances"},
		[]string{"ResizeMig (gce_manager.go)", "CreateInstances (gce_manager.go)", "DeleteInstances (gce_manager.go)"}, OnMIG},
	{"compute.instanceTemplates.get",
		[]string{"instanceTemplates.get"},
		[]string{"FetchMigTemplate (mig_info_provider.go)"}, OnTemplate},
	{"compute.instances.get",
		[]string{"instances.get"},
		[]string{"the node garbage collector and the node CSR approver on the autoscaler's node: does the VM of a Node still exist, is a joining VM a fresh instance of a MIG"}, OnInstance},
	{"compute.instances.getGuestAttributes",
		[]string{"instances.getGuestAttributes"},
		[]string{"the node CSR approver on the autoscaler's node: the hash of its kubelet's bootstrap key that a joining VM published as a guest attribute"}, OnInstance},
	{"compute.instances.list",
		[]string{"instances.list"},
		[]string{"FetchAllInstances (mig_info_provider.go)"}, OnProject},
	{"compute.machineTypes.get",
		[]string{"machineTypes.get"},
		[]string{"FetchMachineType (mig_info_provider.go)"}, OnProject},
	{"compute.projects.get",
		[]string{"projects.get"},
		[]string{"the node CSR approver on the autoscaler's node: the project's metadata (commonInstanceMetadata), whose shutdown scripts the guest agent runs on a VM whose own metadata sets none"}, OnProject},
	{"compute.zoneOperations.get",
		[]string{"zoneOperations.wait"},
		[]string{"WaitForOperation, after each resize, createInstances and deleteInstances"}, OnProject},
}

// AutoscalerScopedPermissions are the permissions checked on a named MIG,
// template or instance: the custom role bound with the condition
// model.Source.AutoscalerCondition. AutoscalerProjectPermissions are the others,
// checked on the project (listing, machine types, operations): read-only,
// in a second custom role bound without a condition, since a condition on
// resource names would deny them. Both sorted.
func AutoscalerScopedPermissions() []string  { return autoscalerPermissions(true) }
func AutoscalerProjectPermissions() []string { return autoscalerPermissions(false) }

func autoscalerPermissions(scoped bool) []string {
	var out []string
	for _, p := range AutoscalerComputePermissions {
		if (p.On != OnProject) == scoped {
			out = append(out, p.Permission)
		}
	}
	slices.Sort(out)
	return out
}
