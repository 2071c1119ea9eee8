package gce

// HealthCheckRanges are the source ranges of Google's health-check probes
// for internal passthrough load balancers and MIG autohealing (Cloud Load
// Balancing documentation, "Health checks overview", probe IP ranges).
var HealthCheckRanges = []string{"35.191.0.0/16", "130.211.0.0/22"}
