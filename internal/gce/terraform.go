package gce

// The Terraform resource types (hashicorp/terraform-provider-google) of
// the Google Cloud objects nodegen writes.
const (
	// The node groups: their instance templates and MIGs, and the health
	// check of an autohealed group (the firewall rule that lets it reach
	// the nodes is a TFFirewall).
	TFInstanceTemplate = "google_compute_instance_template"
	TFGroupManager     = "google_compute_instance_group_manager"
	TFHealthCheck      = "google_compute_health_check"

	// The network nodegen renders from cluster.gcp.network.
	TFNetwork    = "google_compute_network"
	TFSubnetwork = "google_compute_subnetwork"
	TFFirewall   = "google_compute_firewall"
	TFRouter     = "google_compute_router"
	TFRouterNAT  = "google_compute_router_nat"

	// The HA VPN (cluster.gcp.network.vpn).
	TFHAVPNGateway       = "google_compute_ha_vpn_gateway"
	TFExternalVPNGateway = "google_compute_external_vpn_gateway"
	TFVPNTunnel          = "google_compute_vpn_tunnel"
	TFRouterInterface    = "google_compute_router_interface"
	TFRouterPeer         = "google_compute_router_peer"
	// The VPN's Cloud Monitoring alert policies.
	TFAlertPolicy = "google_monitoring_alert_policy"

	// The identity and the join secret.
	TFServiceAccount   = "google_service_account"
	TFCustomRole       = "google_project_iam_custom_role"
	TFProjectIAMMember = "google_project_iam_member"
	TFSecret           = "google_secret_manager_secret"
	TFSecretIAMMember  = "google_secret_manager_secret_iam_member"
	TFSecretVersion    = "google_secret_manager_secret_version"

	// A mesh cluster's east-west gateway load balancer.
	TFAddress           = "google_compute_address"
	TFRegionHealthCheck = "google_compute_region_health_check"
	TFRegionBackend     = "google_compute_region_backend_service"
	TFForwardingRule    = "google_compute_forwarding_rule"
)

// TFServiceAccountEmailSuffix ends the name of the Terraform local (and
// variable) that holds a role's service account email:
// <role>_service_account_email, which an instance template's
// service_account reads.
const TFServiceAccountEmailSuffix = "_service_account_email"

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
