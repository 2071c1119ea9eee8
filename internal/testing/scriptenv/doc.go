// Package scriptenv runs a shipped script with the inputs it has in
// production, so that the script needs no override meant for tests: the
// host names it dials resolve through /etc/hosts to servers the test runs
// on their real ports (an address it dials by number, such as the
// metadata server's 169.254.169.254, is on the namespace's loopback),
// curl trusts the test's CA through the system CA bundle, and files sit
// at their production paths. The script runs in a network namespace of
// its own (nothing but loopback: an address the test did not serve is
// unreachable) and a mount namespace of its own (the bind mounts of
// /etc/hosts, the CA bundle and any other file are seen by the script
// alone), so tests run side by side and the machine is left as it was.
// It needs root, unshare, nsenter and ip (util-linux, iproute2).
//
// Elsewhere New skips the test.
package scriptenv
