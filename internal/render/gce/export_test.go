package gce

// The renderers of one artifact, for the tests of package gce_test.
var (
	KubeEnvVars   = kubeEnvVars
	StartupScript = startupScript
	ShellQuote    = shellQuote
)
