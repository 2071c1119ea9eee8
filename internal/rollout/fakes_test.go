package rollout_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// fakeCompute serves, on loopback, the Compute Engine API v1 methods a
// rollout calls, with the real API's paths and JSON field names:
// instanceGroupManagers get, listManagedInstances (paginated),
// aggregatedList (paginated), createInstances and deleteInstances,
// delete (each an Operation that is RUNNING
// until zoneOperations.wait is called), regionInstanceTemplates get; and
// the OAuth token endpoint a service account's key is exchanged at. It
// refuses a call without the token it issued, a createInstances of a name
// the MIG has, and records every instance created and deleted.
type fakeCompute struct {
	t       *testing.T
	srv     *httptest.Server
	project string
	region  string
	token   string

	mu        sync.Mutex
	migs      map[string]*fakeMIG // by zone/name
	templates map[string]map[string]string
	created   []string // instance names, in order
	deleted   []string
	// deletedMIGs are the MIGs deleted (zone/name), in order.
	deletedMIGs []string
	ops         int
	failures    map[string]int // MIG method → how many of its next calls answer 503
	// racing: zone/name of a MIG → an instance the autoscaler's scale-up
	// adds to it just before the MIG's next createInstances.
	racing map[string]string
	// deleting: zone/name of a MIG → when the deletion a stopped run
	// asked for ends (the MIG is gone from then on).
	deleting map[string]time.Time
}

type fakeMIG struct {
	Zone, Name, Base string
	Template         string            // the instance template's name
	Instances        map[string]string // name → the template it was made from
	Largest          int               // the most instances it ever held
	// Refuse, when set, is the error of every creation it attempts from
	// now on ("CODE: message"): the instances createInstances asks for
	// stay CREATING, with it as their last attempt's error, and no VM
	// boots; Failing holds them.
	Refuse  string
	Failing map[string]bool
}

func newFakeCompute(t *testing.T, project, region string) *fakeCompute {
	f := &fakeCompute{t: t, project: project, region: region, token: fakeToken(),
		migs: map[string]*fakeMIG{}, templates: map[string]map[string]string{}, failures: map[string]int{},
		racing: map[string]string{}, deleting: map[string]time.Time{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// Endpoint is the API's base URL.
func (f *fakeCompute) Endpoint() string { return f.srv.URL + "/compute/v1/" }

func (f *fakeCompute) templateURL(name string) string {
	return "https://www.googleapis.com/compute/v1/projects/" + f.project + "/regions/" + f.region + "/instanceTemplates/" + name
}

func (f *fakeCompute) addTemplate(name string, metadata map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.templates[name] = metadata
}

func (f *fakeCompute) addMIG(zone, name, base, template string, instances ...string) *fakeMIG {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := &fakeMIG{Zone: zone, Name: name, Base: base, Template: template, Instances: map[string]string{}}
	for _, i := range instances {
		m.Instances[i] = template
	}
	m.Largest = len(m.Instances)
	f.migs[zone+"/"+name] = m
	return m
}

// addMissing adds, as terraform apply makes them, the MIGs of every
// cloud group and zone of src that the fake does not hold yet, empty and
// making VMs from template(g), which it adds with metadata(g) if the fake
// does not hold it yet. Rollout reads the managed instances of every MIG
// of the source holding a node, and Compute answers 404 for a MIG that
// does not exist.
func (f *fakeCompute) addMissing(src *model.Source, template func(g *model.NodeGroup) string, metadata func(g *model.NodeGroup) map[string]string) {
	cl := &src.Cluster
	for _, g := range src.CloudGroups() {
		tmpl := template(g)
		f.mu.Lock()
		_, hasTmpl := f.templates[tmpl]
		f.mu.Unlock()
		if !hasTmpl {
			f.addTemplate(tmpl, metadata(g))
		}
		for _, z := range g.Zones {
			f.mu.Lock()
			_, has := f.migs[z+"/"+cl.MIGName(g, z)]
			f.mu.Unlock()
			if !has {
				f.addMIG(z, cl.MIGName(g, z), cl.BaseInstanceName(g), tmpl)
			}
		}
	}
}

// refuseCreates makes every creation the MIG attempts from now on fail
// with code and message, as Compute reports a quota exceeded.
func (f *fakeCompute) refuseCreates(zone, name, code, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.migs[zone+"/"+name].Refuse = code + ": " + message
}

// raceCreate makes the autoscaler scale the MIG up by one instance, name,
// just before the MIG's next createInstances: after the rollout read the
// target size, before its create.
func (f *fakeCompute) raceCreate(zone, mig, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.racing[zone+"/"+mig] = name
}

// deletingMIG makes the MIG one whose deletion a run asked for before it
// was killed: Compute goes on with it, and the MIG is gone after d.
// Until then it is listed and read as before, its instances DELETING,
// and another delete is refused with 400 resourceNotReady. (Compute does
// not document its answer to a second delete; the rollout waits on any
// refusal but one for want of rights.)
func (f *fakeCompute) deletingMIG(zone, mig string, d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleting[zone+"/"+mig] = time.Now().Add(d)
}

// setTemplate points the MIG at another instance template (terraform apply).
func (f *fakeCompute) setTemplate(zone, name, template string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.migs[zone+"/"+name].Template = template
}

// instances returns the MIG's instances, sorted, with their templates.
func (f *fakeCompute) instances(zone, name string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	m := f.migs[zone+"/"+name]
	if m == nil {
		return out
	}
	for k, v := range m.Instances {
		out[k] = v
	}
	return out
}

func (f *fakeCompute) record() (created, deleted []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created), slices.Clone(f.deleted)
}

// migsDeleted is the MIGs deleted so far (zone/name), in order.
func (f *fakeCompute) migsDeleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletedMIGs)
}

func (f *fakeCompute) fail(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": fmt.Sprintf(format, args...)}})
}

// reply400NotReady refuses an operation on a MIG another operation is
// changing, in the API's error format.
func (f *fakeCompute) reply400NotReady(w http.ResponseWriter, m *fakeMIG) {
	msg := fmt.Sprintf("The resource 'projects/%s/zones/%s/instanceGroupManagers/%s' is not ready", f.project, m.Zone, m.Name)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": 400, "message": msg,
		"errors": []map[string]string{{"message": msg, "domain": "global", "reason": "resourceNotReady"}}}})
}

func (f *fakeCompute) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func (f *fakeCompute) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		// The OAuth 2.0 JWT bearer grant a service-account key makes.
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || r.Form.Get("assertion") == "" {
			f.fail(w, 400, "bad token request")
			return
		}
		f.reply(w, map[string]any{"access_token": f.token, "token_type": "Bearer", "expires_in": 3600})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, 401, "Request is missing required authentication credential.")
		return
	}
	path, ok := strings.CutPrefix(r.URL.Path, "/compute/v1/projects/"+f.project+"/")
	if !ok {
		f.fail(w, 404, "unknown path %s", r.URL.Path)
		return
	}
	parts := strings.Split(path, "/")
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, end := range f.deleting {
		if time.Now().After(end) {
			delete(f.deleting, k)
			delete(f.migs, k)
		}
	}
	switch {
	case len(parts) == 4 && parts[0] == "regions" && parts[1] == f.region && parts[2] == "instanceTemplates" && r.Method == http.MethodGet:
		md, ok := f.templates[parts[3]]
		if !ok {
			f.fail(w, 404, "The resource 'projects/%s/regions/%s/instanceTemplates/%s' was not found", f.project, f.region, parts[3])
			return
		}
		var items []map[string]string
		for _, k := range sortedKeys(md) {
			items = append(items, map[string]string{"key": k, "value": md[k]})
		}
		f.reply(w, map[string]any{"name": parts[3], "properties": map[string]any{"metadata": map[string]any{"items": items}}})
	case len(parts) == 5 && parts[0] == "zones" && parts[2] == "operations" && parts[4] == "wait" && r.Method == http.MethodPost:
		f.reply(w, map[string]any{"name": parts[3], "zone": parts[1], "status": "DONE"})
	case len(parts) == 2 && parts[0] == "aggregated" && parts[1] == "instanceGroupManagers" && r.Method == http.MethodGet:
		// instanceGroupManagers.aggregatedList, one zone a page (so that
		// pages are read), and a region's empty scope as the API has.
		var zones []string
		for _, m := range f.migs {
			if !slices.Contains(zones, m.Zone) {
				zones = append(zones, m.Zone)
			}
		}
		slices.Sort(zones)
		start := 0
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			start, _ = strconv.Atoi(tok)
		}
		items := map[string]any{"regions/" + f.region: map[string]any{"warning": map[string]string{"code": "NO_RESULTS_ON_PAGE"}}}
		if start < len(zones) {
			var list []map[string]any
			for _, k := range sortedKeys(f.migs) {
				if m := f.migs[k]; m.Zone == zones[start] {
					list = append(list, map[string]any{"name": m.Name, "baseInstanceName": m.Base, "targetSize": len(m.Instances) + len(m.Failing), "instanceTemplate": f.templateURL(m.Template)})
				}
			}
			items["zones/"+zones[start]] = map[string]any{"instanceGroupManagers": list}
		}
		page := map[string]any{"items": items}
		if start+1 < len(zones) {
			page["nextPageToken"] = strconv.Itoa(start + 1)
		}
		f.reply(w, page)
	case len(parts) >= 4 && parts[0] == "zones" && parts[2] == "instanceGroupManagers":
		m, ok := f.migs[parts[1]+"/"+parts[3]]
		if !ok {
			f.fail(w, 404, "The resource 'projects/%s/zones/%s/instanceGroupManagers/%s' was not found", f.project, parts[1], parts[3])
			return
		}
		f.mig(w, r, m, parts[4:])
	default:
		f.fail(w, 404, "unknown path %s", r.URL.Path)
	}
}

func (f *fakeCompute) mig(w http.ResponseWriter, r *http.Request, m *fakeMIG, rest []string) {
	op := func() {
		f.ops++
		f.reply(w, map[string]any{"name": "operation-" + strconv.Itoa(f.ops), "zone": m.Zone, "status": "RUNNING"})
	}
	switch {
	case len(rest) == 0 && r.Method == http.MethodGet:
		f.reply(w, map[string]any{"name": m.Name, "baseInstanceName": m.Base, "targetSize": len(m.Instances) + len(m.Failing),
			"instanceTemplate": f.templateURL(m.Template),
			"versions":         []map[string]string{{"name": "v", "instanceTemplate": f.templateURL(m.Template)}},
			"status":           map[string]any{"isStable": true}})
	case len(rest) == 0 && r.Method == http.MethodDelete && !f.deleting[m.Zone+"/"+m.Name].IsZero():
		f.reply400NotReady(w, m)
	case len(rest) == 0 && r.Method == http.MethodDelete:
		// instanceGroupManagers.delete: the MIG goes with its instances.
		for name := range m.Instances {
			f.deleted = append(f.deleted, name)
		}
		delete(f.migs, m.Zone+"/"+m.Name)
		f.deletedMIGs = append(f.deletedMIGs, m.Zone+"/"+m.Name)
		op()
	case len(rest) == 1 && rest[0] == "listManagedInstances" && r.Method == http.MethodPost:
		all := maps.Clone(m.Instances)
		for n := range m.Failing {
			all[n] = m.Template
		}
		names := sortedKeys(all)
		start := 0
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			start, _ = strconv.Atoi(tok)
		}
		end := min(start+2, len(names)) // two a page, so that pages are read
		var list []map[string]any
		for _, n := range names[start:end] {
			mi := map[string]any{
				"instance":       "https://www.googleapis.com/compute/v1/projects/" + f.project + "/zones/" + m.Zone + "/instances/" + n,
				"instanceStatus": "RUNNING", "currentAction": "NONE",
				"version": map[string]string{"instanceTemplate": f.templateURL(all[n])},
			}
			if !f.deleting[m.Zone+"/"+m.Name].IsZero() {
				mi["instanceStatus"], mi["currentAction"] = "STOPPING", "DELETING"
			}
			if m.Failing[n] {
				// As Compute lists an instance it keeps failing to
				// create: no status yet, still CREATING, the error of its
				// last attempt.
				code, msg, _ := strings.Cut(m.Refuse, ": ")
				delete(mi, "instanceStatus")
				mi["currentAction"] = "CREATING"
				mi["lastAttempt"] = map[string]any{"errors": map[string]any{"errors": []map[string]string{{"code": code, "message": msg}}}}
			}
			list = append(list, mi)
		}
		page := map[string]any{"managedInstances": list}
		if end < len(names) {
			page["nextPageToken"] = strconv.Itoa(end)
		}
		f.reply(w, page)
	case len(rest) == 1 && f.failures[rest[0]] > 0:
		// A transient error of the API.
		f.failures[rest[0]]--
		f.fail(w, 503, "The service is currently unavailable.")
	case len(rest) == 1 && rest[0] == "createInstances" && r.Method == http.MethodPost:
		var body struct {
			Instances []struct{ Name string } `json:"instances"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Instances) == 0 {
			f.fail(w, 400, "bad createInstances body")
			return
		}
		for _, i := range body.Instances {
			if _, dup := m.Instances[i.Name]; dup || !strings.HasPrefix(i.Name, m.Base+"-") {
				f.fail(w, 400, "Instance '%s' cannot be created in %s", i.Name, m.Name)
				return
			}
		}
		if name, ok := f.racing[m.Zone+"/"+m.Name]; ok {
			delete(f.racing, m.Zone+"/"+m.Name)
			m.Instances[name] = m.Template
		}
		for _, i := range body.Instances {
			f.created = append(f.created, i.Name)
			if m.Refuse != "" {
				if m.Failing == nil {
					m.Failing = map[string]bool{}
				}
				m.Failing[i.Name] = true
				continue
			}
			m.Instances[i.Name] = m.Template
		}
		m.Largest = max(m.Largest, len(m.Instances))
		op()
	case len(rest) == 1 && rest[0] == "deleteInstances" && r.Method == http.MethodPost:
		var body struct {
			Instances                      []string `json:"instances"`
			SkipInstancesOnValidationError bool     `json:"skipInstancesOnValidationError"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Instances) == 0 {
			f.fail(w, 400, "bad deleteInstances body")
			return
		}
		for _, ref := range body.Instances {
			name := ref[strings.LastIndexByte(ref, '/')+1:]
			if m.Failing[name] {
				delete(m.Failing, name)
				f.deleted = append(f.deleted, name)
				continue
			}
			if _, ok := m.Instances[name]; !ok {
				if body.SkipInstancesOnValidationError {
					continue
				}
				f.fail(w, 400, "instance %s is not in %s", name, m.Name)
				return
			}
			delete(m.Instances, name)
			f.deleted = append(f.deleted, name)
		}
		op()
	default:
		f.fail(w, 404, "unknown method %s %v", r.Method, rest)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fakeToken is the access token every fake of the process issues and
// accepts, so that one service-account key (sharedCredentials) serves
// every test's fake.
func fakeToken() string { return "ya29.fake-" + strconv.Itoa(os.Getpid()) }

// writeCredentials writes, into dir, a service-account key whose
// token_uri is tokenURI, for Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS), and returns its path.
func writeCredentials(dir, project, tokenURI string) (string, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": project, "private_key_id": "k1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "rollout@" + project + ".iam.gserviceaccount.com", "client_id": "1",
		"token_uri": tokenURI,
	})
	p := filepath.Join(dir, "sa.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return "", err
	}
	return p, nil
}

// sharedCredentials is the service-account key TestMain puts in
// GOOGLE_APPLICATION_CREDENTIALS for the whole test binary: its token
// endpoint is a fake's of its own, whose token every test's fake accepts.
// One key for all lets the tests run in parallel (t.Setenv cannot).
var sharedCredentials string

// startTokenServer serves the OAuth token endpoint of sharedCredentials
// until stop is called.
func startTokenServer() (creds string, stop func(), err error) {
	f := &fakeCompute{project: "nodegen-tests", token: fakeToken(), migs: map[string]*fakeMIG{}, templates: map[string]map[string]string{}, failures: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	dir, err := os.MkdirTemp("", "nodegen-rollout-creds-")
	if err != nil {
		f.srv.Close()
		return "", nil, err
	}
	stop = func() { f.srv.Close(); os.RemoveAll(dir) }
	creds, err = writeCredentials(dir, f.project, f.srv.URL+"/token")
	if err != nil {
		stop()
		return "", nil, err
	}
	return creds, stop, nil
}

// largest is the most instances the MIG ever held.
func (f *fakeCompute) largest(zone, name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.migs[zone+"/"+name].Largest
}

// failNext makes the next n calls of a MIG method (createInstances,
// deleteInstances, ...) answer HTTP 503.
func (f *fakeCompute) failNext(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = n
}
