package gcefake

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestThroughProxy reaches the fake as a process with ProcessEnv does:
// HTTPS to compute.googleapis.com through the proxy, the fake's CA
// trusted, the metadata server's token; other hosts are refused.
func TestThroughProxy(t *testing.T) {
	s := New("proj-a", "us-central1", []string{"us-central1-a", "us-central1-b"})
	s.MachineType = func(string) (int64, int64, bool) { return 8, 30720, true }
	s.AddTemplate(&Template{Name: "tmpl-1", MachineType: "n1-standard-8", Metadata: map[string]string{"kube-env": "A: b\n"}})
	var created []string
	s.OnCreate = func(i *Instance) { created = append(created, i.Name) }
	s.AddMIG(&MIG{Project: "proj-a", Zone: "us-central1-a", Name: "mig-1", BaseInstanceName: "base", Template: "tmpl-1", TargetSize: 2})
	if len(created) != 2 {
		t.Fatalf("AddMIG started %v, want 2 VMs", created)
	}
	e := Start(t, s)
	c, err := e.Client()
	if err != nil {
		t.Fatal(err)
	}
	get := func(url, token string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, map[string]any{"error": err.Error()}
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	base := "https://compute.googleapis.com/compute/v1/projects/proj-a/"
	if code, v := get(base+"zones/us-central1-a/instanceGroupManagers/mig-1", AccessToken); code != 200 || v["targetSize"] != float64(2) ||
		!strings.HasSuffix(v["instanceTemplate"].(string), "/global/instanceTemplates/tmpl-1") {
		t.Errorf("MIG: %d %v", code, v)
	}
	if code, _ := get(base+"zones/us-central1-a/instanceGroupManagers/mig-1", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d, want 401", code)
	}
	if code, _ := get(base+"global/instanceTemplates/tmpl-1", AccessToken); code != 200 {
		t.Errorf("template: %d", code)
	}
	if code, _ := get(base+"zones/us-central1-a/nothing", AccessToken); code != 404 || len(s.Unknown()) != 1 {
		t.Errorf("an unknown path: %d, unknown %v", code, s.Unknown())
	}
	if code, v := get("https://example.com/", ""); code != 0 || !strings.Contains(v["error"].(string), "Forbidden") {
		t.Errorf("a host the fake does not serve: %d %v, want the proxy to refuse the tunnel", code, v)
	}

	// The metadata server hands out the token the API accepts.
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.MetadataHost+"/computeMetadata/v1/instance/service-accounts/default/token", nil)
	req.Header.Set("Metadata-Flavor", "Google")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if tok.AccessToken != AccessToken {
		t.Errorf("metadata token %q", tok.AccessToken)
	}

	// Faults: a stockout leaves the new VM CREATING with its error.
	s.SetFault("stockout", "mig-1", true)
	s.Resize("us-central1-a", "mig-1", 3)
	inst := s.Instances("mig-1")
	if len(inst) != 3 || inst[2].ErrorCode == "" && inst[0].ErrorCode == "" && inst[1].ErrorCode == "" {
		t.Errorf("after a resize under stockout: %+v", inst)
	}
	if len(created) != 2 {
		t.Errorf("a VM under stockout ran: %v", created)
	}
}
