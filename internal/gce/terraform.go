package gce

// The Terraform resource types (hashicorp/terraform-provider-google) of
// the Compute Engine objects nodegen writes.
const (
	TFInstanceTemplate = "google_compute_instance_template"
	TFGroupManager     = "google_compute_instance_group_manager"
)

// The instance lifecycle policy of an autohealed group's MIGs (google
// provider v7.45.0, google_compute_instance_group_manager
// instance_lifecycle_policy): a repair recreates the VM from the group's
// current template (force_update_on_repair "YES"; with the default "NO" a
// VM made from an older template, one without the health check's network
// tag or with the kubelet's health endpoint on 127.0.0.1, would come back
// as it was and fail again, for ever). A VM that fails (stops on its own)
// is repaired; one that fails its health check is repaired, or, with
// autohealing.repair false, left as it is.
const (
	LifecycleActionRepair        = "REPAIR"
	LifecycleActionNothing       = "DO_NOTHING"
	LifecycleForceUpdateOnRepair = "YES"
)
