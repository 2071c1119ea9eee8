package gce

// The Terraform resource types (hashicorp/terraform-provider-google) of
// the Compute Engine objects nodegen writes.
const (
	TFInstanceTemplate = "google_compute_instance_template"
	TFGroupManager     = "google_compute_instance_group_manager"
)
