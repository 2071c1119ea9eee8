package k8stest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGCP serves, on loopback, the Google endpoints the join-token
// renewer and the join script call: the metadata server's service-account
// token and the VM's name, zone and project, and the Secret Manager v1
// REST API for one secret (addVersion, list with pagination, access of a
// number or "latest", disable), with the request and response shapes of
// the real API (camelCase JSON, pretty-printed, newest version first,
// numeric project in names). It checks the bearer token on every Secret
// Manager call and records every version.
type fakeGCP struct {
	t       *testing.T
	project string // the project ID the script uses in paths
	secret  string
	srv     *httptest.Server

	mu          sync.Mutex
	accessToken string
	versions    []*smVersion // by number - 1
	// offset is added to the current time for new versions' createTime,
	// so a test can place versions in the past.
	offset time.Duration
	// fail makes every call of an operation ("addVersion", "list",
	// "access", "disable", "token") answer this HTTP status.
	fail     map[string]int
	requests []string
	// instance and zone are what the metadata server says about the VM
	// a join script runs on (setVM).
	instance, zone string
	// vms are the zones of the VMs that have a metadata server of their
	// own, under /vm/<name>/computeMetadata/v1 (addVM), by name.
	vms map[string]string
	// guest holds the guest attributes the VMs wrote, by
	// "<instance>/<namespace>/<key>".
	guest map[string]string
}

type smVersion struct {
	Num     int
	Payload []byte
	Created time.Time
	State   string // ENABLED, DISABLED
}

// projectNumber is what the real API puts in resource names.
const projectNumber = "123456789012"

// pageLimit caps pageSize, so that even a few versions span pages.
const pageLimit = 2

func newFakeGCP(t *testing.T, project, secret string) *fakeGCP {
	f := &fakeGCP{t: t, project: project, secret: secret, accessToken: "ya29.fake-" + strconv.FormatInt(time.Now().UnixNano(), 36), fail: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// MetadataURL and SecretManagerURL are the fakes' endpoints, the base URLs
// of the metadata server and Secret Manager.
func (f *fakeGCP) MetadataURL() string      { return f.srv.URL + "/computeMetadata/v1" }
func (f *fakeGCP) SecretManagerURL() string { return f.srv.URL + "/v1" }

func (f *fakeGCP) resource() string { return "projects/" + projectNumber + "/secrets/" + f.secret }

// add stores a version as if added at created, and returns its number.
func (f *fakeGCP) add(payload []byte, created time.Time) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := &smVersion{Num: len(f.versions) + 1, Payload: payload, Created: created.UTC(), State: "ENABLED"}
	f.versions = append(f.versions, v)
	return v.Num
}

// snapshot returns copies of the versions.
func (f *fakeGCP) snapshot() []smVersion {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]smVersion, len(f.versions))
	for i, v := range f.versions {
		out[i] = *v
	}
	return out
}

func (f *fakeGCP) setFail(op string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if code == 0 {
		delete(f.fail, op)
	} else {
		f.fail[op] = code
	}
}

// setVM sets the VM the metadata server describes.
func (f *fakeGCP) setVM(instance, zone string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.instance, f.zone = instance, zone
}

// addVM gives VM instance of zone a metadata server of its own, at
// MetadataURLOf(instance), so that VMs boot side by side.
func (f *fakeGCP) addVM(instance, zone string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.vms == nil {
		f.vms = map[string]string{}
	}
	f.vms[instance] = zone
}

// MetadataURLOf is the metadata server of a VM added with addVM.
func (f *fakeGCP) MetadataURLOf(instance string) string {
	return f.srv.URL + "/vm/" + instance + "/computeMetadata/v1"
}

// count returns how many requests so far contain s.
func (f *fakeGCP) count(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

func (f *fakeGCP) setOffset(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offset = d
}

// shift moves every version's createTime back by d.
func (f *fakeGCP) shift(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.versions {
		v.Created = v.Created.Add(-d)
	}
}

func (f *fakeGCP) versionJSON(v *smVersion) map[string]any {
	m := map[string]any{
		"name":              f.resource() + "/versions/" + strconv.Itoa(v.Num),
		"createTime":        v.Created.Format(time.RFC3339Nano),
		"state":             v.State,
		"replicationStatus": map[string]any{"automatic": map[string]any{}},
		"etag":              fmt.Sprintf("\"%x\"", v.Created.UnixNano()),
	}
	return m
}

// reply writes v as the real API does: pretty-printed JSON.
func reply(w http.ResponseWriter, code int, v any) {
	b, _ := json.MarshalIndent(v, "", "  ")
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}

func apiError(w http.ResponseWriter, code int, status, msg string) {
	reply(w, code, map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status}})
}

func (f *fakeGCP) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	path, instance, zone := r.URL.Path, f.instance, f.zone
	if rest, ok := strings.CutPrefix(path, "/vm/"); ok {
		name, p, _ := strings.Cut(rest, "/")
		z, ok := f.vms[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		path, instance, zone = "/"+p, name, z
	}
	if path == "/computeMetadata/v1/instance/service-accounts/default/token" {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
			return
		}
		if code := f.fail["token"]; code != 0 {
			http.Error(w, "metadata server failure", code)
			return
		}
		reply(w, http.StatusOK, map[string]any{"access_token": f.accessToken, "expires_in": 3599, "token_type": "Bearer"})
		return
	}
	if p, ok := strings.CutPrefix(path, "/computeMetadata/v1/"); ok {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
			return
		}
		w.Header().Set("Metadata-Flavor", "Google")
		if r.Method == http.MethodPut {
			f.putGuestAttribute(w, r, instance, p)
			return
		}
		switch {
		case p == "instance/id" && instance != "":
			fmt.Fprint(w, instanceID(instance))
		case p == "instance/name" && instance != "":
			fmt.Fprint(w, instance)
		case p == "instance/zone" && zone != "":
			fmt.Fprintf(w, "projects/%s/zones/%s", projectNumber, zone)
		case p == "project/project-id":
			fmt.Fprint(w, f.project)
		default:
			http.NotFound(w, r)
		}
		return
	}
	base := "/v1/projects/" + f.project + "/secrets/" + f.secret
	if r.Header.Get("Authorization") != "Bearer "+f.accessToken {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, base)
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "Secret ["+r.URL.Path+"] not found.")
		return
	}
	op := ""
	var v *smVersion
	switch {
	case rest == ":addVersion" && r.Method == http.MethodPost:
		op = "addVersion"
	case rest == "/versions" && r.Method == http.MethodGet:
		op = "list"
	case strings.HasPrefix(rest, "/versions/"):
		num, action, _ := strings.Cut(strings.TrimPrefix(rest, "/versions/"), ":")
		if num == "latest" {
			// The alias names the newest version, whatever its state; a
			// secret without versions has nothing to access.
			if len(f.versions) == 0 {
				apiError(w, http.StatusNotFound, "NOT_FOUND", "Secret ["+f.resource()+"] not found or has no versions.")
				return
			}
			num = strconv.Itoa(len(f.versions))
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || n > len(f.versions) {
			apiError(w, http.StatusNotFound, "NOT_FOUND", "Secret Version ["+rest+"] not found.")
			return
		}
		v = f.versions[n-1]
		switch {
		case action == "access" && r.Method == http.MethodGet:
			op = "access"
		case action == "disable" && r.Method == http.MethodPost:
			op = "disable"
		}
	}
	if op == "" {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "no such method "+r.Method+" "+r.URL.Path)
		return
	}
	if code := f.fail[op]; code != 0 {
		status := map[int]string{403: "PERMISSION_DENIED", 503: "UNAVAILABLE", 500: "INTERNAL"}[code]
		apiError(w, code, status, fmt.Sprintf("Permission or availability failure injected for %s", op))
		return
	}
	switch op {
	case "addVersion":
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Content-Type "+ct)
			return
		}
		var body struct {
			Payload struct {
				Data string `json:"data"`
			} `json:"payload"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
			return
		}
		data, err := base64.StdEncoding.DecodeString(body.Payload.Data)
		if err != nil || len(data) == 0 {
			apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "payload.data must be base64 and not empty")
			return
		}
		v := &smVersion{Num: len(f.versions) + 1, Payload: data, Created: time.Now().Add(f.offset).UTC(), State: "ENABLED"}
		f.versions = append(f.versions, v)
		reply(w, http.StatusOK, f.versionJSON(v))
	case "list":
		size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
		if size <= 0 || size > pageLimit {
			size = pageLimit
		}
		start := 0
		if tok := r.URL.Query().Get("pageToken"); tok != "" {
			b, err := base64.StdEncoding.DecodeString(tok)
			if err != nil {
				apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "bad page token")
				return
			}
			start, _ = strconv.Atoi(strings.TrimPrefix(string(b), "offset="))
		}
		newest := slices.Clone(f.versions)
		slices.Reverse(newest)
		var page []map[string]any
		for i := start; i < len(newest) && i < start+size; i++ {
			page = append(page, f.versionJSON(newest[i]))
		}
		resp := map[string]any{"totalSize": len(newest)}
		if len(page) > 0 {
			resp["versions"] = page
		}
		if start+size < len(newest) {
			// base64 with padding: the script must URL-encode it.
			resp["nextPageToken"] = base64.StdEncoding.EncodeToString([]byte("offset=" + strconv.Itoa(start+size)))
		}
		reply(w, http.StatusOK, resp)
	case "access":
		if v.State != "ENABLED" {
			apiError(w, http.StatusBadRequest, "FAILED_PRECONDITION", "Secret Version "+strconv.Itoa(v.Num)+" is in DISABLED state.")
			return
		}
		crc := crc32.Checksum(v.Payload, crc32.MakeTable(crc32.Castagnoli))
		reply(w, http.StatusOK, map[string]any{
			"name":    f.resource() + "/versions/" + strconv.Itoa(v.Num),
			"payload": map[string]any{"data": base64.StdEncoding.EncodeToString(v.Payload), "dataCrc32c": strconv.FormatUint(uint64(crc), 10)},
		})
	case "disable":
		v.State = "DISABLED"
		reply(w, http.StatusOK, f.versionJSON(v))
	}
}

// instanceID is the numeric id the fake gives the VM named instance: a
// stable number per name, as Compute gives each VM one at its creation.
func instanceID(instance string) string {
	h := fnv.New64a()
	h.Write([]byte(instance))
	return strconv.FormatUint(h.Sum64()>>1, 10)
}

// putGuestAttribute stores a guest attribute of instance, as the metadata
// server does for a PUT of instance/guest-attributes/<namespace>/<key>
// with the value as the body (Compute Engine documentation, "Set and
// query guest attributes"); no other path may be written. f.mu is held.
func (f *fakeGCP) putGuestAttribute(w http.ResponseWriter, r *http.Request, instance, p string) {
	rest, ok := strings.CutPrefix(p, "instance/guest-attributes/")
	ns, key, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || ns == "" || key == "" || strings.Contains(key, "/") {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, 1024))
	if err != nil || len(b) > 256 {
		http.Error(w, "value too long", http.StatusBadRequest)
		return
	}
	if f.guest == nil {
		f.guest = map[string]string{}
	}
	f.guest[instance+"/"+ns+"/"+key] = string(b)
}
