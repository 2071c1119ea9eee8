// Package istiodtest runs istiod's own service-registry code on the
// east-west gateway Services nodegen's values make the official gateway
// chart render, in tests only: the Kubernetes service registry of
// istio.io/istio (pilot/pkg/serviceregistry/kube/controller), whose
// Service conversion (conversion.go, ConvertService) and network-gateway
// discovery (network.go, extractGatewaysInner) decide the address istiod
// gives every other network's proxies for a cluster's gateway.
//
// The module is the one go.mod pins, used by this package's tests alone:
// the nodegen binary imports none of it.
package istiodtest
