package istiotest

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// The gateway chart's schema is enforced: a key it does not know and a
// value of the wrong type fail the rendering, as they fail `helm install`.
func TestRenderValidatesGatewaySchema(t *testing.T) {
	for name, values := range map[string]map[string]any{
		"unknown key":     {"replicaCount": 1, "notAKey": true},
		"wrong type":      {"replicaCount": "two"},
		"bad ipFamilies":  {"service": map[string]any{"ipFamilies": []any{"IPv5"}}},
		"bad kind":        {"kind": "StatefulSet"},
		"port not number": {"service": map[string]any{"ports": []any{map[string]any{"name": "x", "port": "80"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := RenderChart(Gateway, "istio-eastwestgateway", "istio-system", values)
			if err == nil || !strings.Contains(err.Error(), "schema") {
				t.Fatalf("error = %v, want a schema violation", err)
			}
		})
	}
	objs, err := RenderChart(Gateway, "istio-eastwestgateway", "istio-system", map[string]any{"networkGateway": "net1"})
	if err != nil {
		t.Fatal(err)
	}
	svc := objs.Find("Service", "istio-eastwestgateway")
	if svc == nil {
		t.Fatalf("no Service istio-eastwestgateway among %d objects", len(objs))
	}
	if got := svc.GetLabels()["topology.istio.io/network"]; got != "net1" {
		t.Errorf("Service network label = %q, want net1", got)
	}
}

// Every chart renders, and the objects come in Helm's install order.
func TestRenderCharts(t *testing.T) {
	base := Render(t, Base, "istio-base", "istio-system", nil)
	if len(base.OfKind("CustomResourceDefinition")) == 0 {
		t.Error("base chart rendered no CRD")
	}
	istiod := Render(t, Istiod, "istiod", "istio-system", map[string]any{"global": map[string]any{"meshID": "m1"}})
	if istiod.Find("Deployment", "istiod") == nil {
		t.Error("istiod chart rendered no Deployment istiod")
	}
	first := map[string]int{}
	for i, o := range istiod {
		if _, ok := first[o.GetKind()]; !ok {
			first[o.GetKind()] = i
		}
	}
	if first["ServiceAccount"] > first["Deployment"] {
		t.Errorf("ServiceAccount after Deployment: not in install order")
	}
	if _, err := RenderChart(Istiod, "istiod", "istio-system", map[string]any{"profile": "no-such-profile"}); err == nil {
		t.Error("an unknown profile rendered")
	}
}

// The CRDs install into the real API server and serve their kinds: a
// Gateway passes a strict server-side dry run, a misspelt field does not.
func TestInstallCRDs(t *testing.T) {
	cp := testcp.Start(t)
	InstallCRDs(t, cp)
	if _, _, err := cp.Kubectl(t, "create", "namespace", "istio-system"); err != nil {
		t.Fatal(err)
	}
	gw := `apiVersion: networking.istio.io/v1
kind: Gateway
metadata:
  name: probe
  namespace: istio-system
spec:
  selector:
    istio: eastwestgateway
  servers:
  - port: {number: 15443, name: tls, protocol: TLS}
    tls: {mode: AUTO_PASSTHROUGH}
    hosts: ["*.local"]
`
	if err := DryRun(t, cp, "", gw); err != nil {
		t.Fatalf("valid Gateway rejected: %v", err)
	}
	bad := strings.Replace(gw, "hosts:", "hostz:", 1)
	if err := DryRun(t, cp, "", bad); err == nil || !strings.Contains(err.Error(), "hostz") {
		t.Fatalf("Gateway with unknown field hostz: error = %v, want a strict-validation error naming it", err)
	}
}
