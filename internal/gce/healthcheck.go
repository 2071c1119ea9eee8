package gce

// HealthCheckRanges are the source ranges of Google's health-check probes
// for internal passthrough load balancers and MIG autohealing (Cloud Load
// Balancing documentation, "Health checks overview", probe IP ranges).
var HealthCheckRanges = []string{"35.191.0.0/16", "130.211.0.0/22"}

// A health check's limits (Cloud Load Balancing documentation, "Health
// checks overview", health check parameters; gcloud compute health-checks
// create, --check-interval and --unhealthy-threshold): a check interval of
// 1 to 300 seconds, an unhealthy threshold of 1 to 10 consecutive failures.
const (
	MaxCheckIntervalSec   = 300
	MaxUnhealthyThreshold = 10
)
