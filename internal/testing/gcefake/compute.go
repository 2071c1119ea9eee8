// Package gcefake is a fake of the parts of Google Compute Engine that the
// Cluster Autoscaler's GCE provider and nodegen's own tools call: the
// Compute API's zonal managed instance groups, instance templates, machine
// types and operations, the metadata server's token and identity, and the
// way a process reaches them in production (HTTPS through a proxy, a
// certificate it trusts).
//
// The calls served are those of the GCE provider at kubernetes/autoscaler
// tag cluster-autoscaler-1.35.2, cluster-autoscaler/cloudprovider/gce/
// autoscaling_gce_client.go (each method names its request), with the JSON
// field names of the Compute API v1 (google.golang.org/api/compute/v1),
// and those nodegen rollout adds for a MIG leaving the source
// (instanceGroupManagers aggregatedList and delete). The MIGs and
// templates come from a rendered out/ (FromOut), never from a second
// description of the source.
//
// A MIG's instances live in the fake only: a test learns of them through
// Server.OnCreate and Server.OnDelete (to register or remove the Node a VM
// would) and drives their state with SetRunning, Fail and the faults in
// Faults.
package gcefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Hosts are the Google API host names the fake answers for. The GCE
// provider builds instance and MIG URLs on www.googleapis.com and calls
// compute.googleapis.com.
var Hosts = []string{"compute.googleapis.com", "www.googleapis.com"}

// URLBase is the prefix of every self link the fake returns, as the real
// API returns them.
const URLBase = "https://www.googleapis.com/compute/v1/"

// Template is an instance template as the Compute API returns it, reduced
// to what the GCE provider reads (cloudprovider/gce/templates.go).
type Template struct {
	Name        string
	MachineType string
	Metadata    map[string]string
	// Accelerators is the template's guest accelerators: type → count.
	Accelerators map[string]int64
	Spot         bool
	DiskSizeGb   int64
	DiskType     string
	Labels       map[string]string
	// Tags are the VMs' network tags.
	Tags []string
	// HealthzOpen: the kubelet the template's startup script configures
	// serves its health endpoint beyond the VM itself (healthzBindAddress
	// not a loopback address), where Google's health checkers reach it.
	HealthzOpen bool
}

// Autohealing is a MIG's autohealing as its Terraform declares it: the
// health check of auto_healing_policies and the MIG's
// instance_lifecycle_policy.
type Autohealing struct {
	InitialDelay       time.Duration
	CheckInterval      time.Duration
	UnhealthyThreshold int
	// Repair: an unhealthy VM is repaired (on_failed_health_check
	// REPAIR, or DEFAULT_ACTION with default_action_on_failure REPAIR).
	Repair bool
	// ForceUpdateOnRepair: a repair recreates the VM from the MIG's
	// current template; otherwise from the template it was made from, as
	// GCE does by default.
	ForceUpdateOnRepair bool
	// Tags are the network tags a firewall rule opens the health check's
	// port to: a VM without one of them fails every check.
	Tags []string
}

// MIG is a zonal managed instance group.
type MIG struct {
	Project, Zone, Name string
	BaseInstanceName    string
	Template            string // the instance template's name
	TargetSize          int64
	Autohealing         *Autohealing

	instances []*Instance
}

// Instance is a VM of a MIG.
type Instance struct {
	Name, Zone, Project, MIG string
	ID                       uint64
	Template                 string
	// Status is the VM's status (PROVISIONING, RUNNING, ...); Action the
	// MIG's current action on it (CREATING, NONE, DELETING).
	Status, Action string
	// ErrorCode, when set, is the error of the MIG's last attempt to
	// create it (for example ZONE_RESOURCE_POOL_EXHAUSTED).
	ErrorCode string
	// Created is when the VM was made, or last recreated by a repair.
	Created time.Time
	// Repairs counts the MIG's repairs of the VM (each recreates it under
	// its name).
	Repairs int

	failures int // consecutive failed health checks
}

// ProviderID is the instance's Kubernetes providerID.
func (i *Instance) ProviderID() string {
	return "gce://" + i.Project + "/" + i.Zone + "/" + i.Name
}

// Faults are injectable failures, keyed by MIG name.
type Faults struct {
	// Stockout: creating a VM in the MIG fails with
	// ZONE_RESOURCE_POOL_EXHAUSTED (reported on the managed instance, as
	// GCE does).
	Stockout map[string]bool
	// Quota: creating a VM fails with QUOTA_EXCEEDED.
	Quota map[string]bool
	// Stuck: VMs stay CREATING with no error.
	Stuck map[string]bool
}

// Call is one request the fake served.
type Call struct {
	Method, Path string
	// Op names what a mutating call did: "resize", "createInstances",
	// "deleteInstances", "delete" (of the MIG); empty for reads.
	Op string
	// MIG is the MIG the call was about, Names the instances, Size the
	// requested size.
	MIG   string
	Names []string
	Size  int64
	At    time.Time
}

// Server is the fake Compute API; serve it with Handler.
type Server struct {
	Project string
	Region  string
	// Zones of the region, served by regions.get and zones.list.
	Zones []string
	// MachineType returns the vCPUs and memory (MiB) of a machine type,
	// false when unknown.
	MachineType func(name string) (cpus int64, memoryMiB int64, ok bool)
	// OnCreate is called (without the lock) for each VM that reaches
	// RUNNING; OnDelete for each VM deleted.
	OnCreate, OnDelete func(*Instance)
	// CreateDelay is how long a VM stays PROVISIONING before it runs
	// (unless a fault holds it).
	CreateDelay time.Duration

	mu        sync.Mutex
	templates map[string]*Template
	migs      map[string]*MIG // by zone/name
	faults    Faults
	calls     []Call
	unknown   []string
	nextID    uint64
	opSeq     int
	now       func() time.Time
	// kubeletDown names the VMs whose kubelet does not answer (SetKubelet).
	kubeletDown map[string]bool
}

// New returns an empty fake for a project and region.
func New(project, region string, zones []string) *Server {
	return &Server{
		Project: project, Region: region, Zones: zones,
		templates:   map[string]*Template{},
		migs:        map[string]*MIG{},
		faults:      Faults{Stockout: map[string]bool{}, Quota: map[string]bool{}, Stuck: map[string]bool{}},
		nextID:      1000,
		now:         time.Now,
		kubeletDown: map[string]bool{},
	}
}

// SetClock replaces the fake's clock (time.Now by default).
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// SetKubelet says whether the kubelet of VM name answers its health
// endpoint (it does unless told otherwise): a reboot, or a dead kubelet.
func (s *Server) SetKubelet(name string, up bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kubeletDown[name] = !up
}

// CheckHealth runs one round of every autohealed MIG's health check at
// the fake's clock, as GCE does every CheckInterval: a RUNNING VM past its
// initial delay passes when it carries a tag the health check's firewall
// rule opens, its template's kubelet serves the health endpoint beyond
// the VM, and its kubelet answers; UnhealthyThreshold failures in a row
// make it unhealthy, and with Repair the MIG recreates it under its name,
// from the MIG's current template with ForceUpdateOnRepair, from its own
// otherwise. It returns the VMs repaired.
func (s *Server) CheckHealth() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var repaired []string
	for _, k := range sortedKeys(s.migs) {
		m := s.migs[k]
		h := m.Autohealing
		if h == nil {
			continue
		}
		for _, i := range m.instances {
			if i.Status != "RUNNING" || now.Sub(i.Created) < h.InitialDelay {
				i.failures = 0
				continue
			}
			t := s.templates[i.Template]
			if t != nil && t.HealthzOpen && !s.kubeletDown[i.Name] && slices.ContainsFunc(t.Tags, func(tag string) bool { return slices.Contains(h.Tags, tag) }) {
				i.failures = 0
				continue
			}
			i.failures++
			if i.failures < h.UnhealthyThreshold || !h.Repair {
				continue
			}
			if h.ForceUpdateOnRepair {
				i.Template = m.Template
			}
			s.nextID++
			i.ID, i.Created, i.failures = s.nextID, now, 0
			i.Repairs++
			// A new VM: a new boot disk, a kubelet that starts.
			delete(s.kubeletDown, i.Name)
			repaired = append(repaired, i.Name)
		}
	}
	return repaired
}

// AddTemplate adds an instance template.
func (s *Server) AddTemplate(t *Template) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.templates[t.Name] = t
}

// Template returns an instance template, nil if there is none.
func (s *Server) Template(name string) *Template {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.templates[name]
}

// AddMIG adds a MIG; its TargetSize VMs are created at once, RUNNING.
func (s *Server) AddMIG(m *MIG) {
	s.mu.Lock()
	size := m.TargetSize
	m.TargetSize = 0
	mm := *m
	mm.instances = nil
	s.migs[m.Zone+"/"+m.Name] = &mm
	s.mu.Unlock()
	s.grow(&mm, size, nil, true)
}

// Resize sets a MIG's target size as a user (or Terraform) would, with
// new VMs started or the newest deleted.
func (s *Server) Resize(zone, name string, size int64) {
	s.mu.Lock()
	m := s.migs[zone+"/"+name]
	s.mu.Unlock()
	if m == nil {
		panic("gcefake: no MIG " + zone + "/" + name)
	}
	s.resize(m, size)
}

func (s *Server) resize(m *MIG, size int64) {
	s.mu.Lock()
	cur := int64(len(m.instances))
	var names []string
	if size < cur {
		for _, i := range m.instances[size:] {
			names = append(names, i.Name)
		}
	}
	s.mu.Unlock()
	switch {
	case size > cur:
		s.grow(m, size-cur, nil, false)
	case size < cur:
		s.remove(m, names)
	}
}

// DeleteMIG deletes a MIG and its VMs, as instanceGroupManagers.delete
// (or a user) does.
func (s *Server) DeleteMIG(zone, name string) {
	s.mu.Lock()
	m := s.migs[zone+"/"+name]
	s.mu.Unlock()
	if m == nil {
		panic("gcefake: no MIG " + zone + "/" + name)
	}
	s.resize(m, 0)
	s.mu.Lock()
	delete(s.migs, zone+"/"+name)
	s.mu.Unlock()
}

// SetTemplate makes a MIG's new VMs from another template, as a
// terraform apply of a new template does; its VMs keep theirs.
func (s *Server) SetTemplate(zone, name, template string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.migs[zone+"/"+name]
	if m == nil {
		panic("gcefake: no MIG " + zone + "/" + name)
	}
	m.Template = template
}

// MIGs returns a copy of the MIGs, sorted by zone and name.
func (s *Server) MIGs() []MIG {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []MIG
	for _, m := range s.migs {
		c := *m
		c.instances = nil
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Zone+out[i].Name < out[j].Zone+out[j].Name })
	return out
}

// Instances returns copies of a MIG's VMs (all MIGs for ""), sorted by name.
func (s *Server) Instances(mig string) []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Instance
	for _, m := range s.migs {
		if mig != "" && m.Name != mig {
			continue
		}
		for _, i := range m.instances {
			out = append(out, *i)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SetFault turns a fault on or off for a MIG: "stockout", "quota" or "stuck".
func (s *Server) SetFault(kind, mig string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]map[string]bool{"stockout": s.faults.Stockout, "quota": s.faults.Quota, "stuck": s.faults.Stuck}[kind]
	if m == nil {
		panic("gcefake: unknown fault " + kind)
	}
	m[mig] = on
}

// Calls returns the requests served so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Mutations returns the resize, createInstances, deleteInstances and
// delete calls.
func (s *Server) Mutations() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Op != "" {
			out = append(out, c)
		}
	}
	return out
}

// Unknown lists the requests the fake did not know, "METHOD path".
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.unknown)
}

// instanceName makes a new VM name as a MIG does: the base name and a
// random-looking suffix of four characters, unique in the MIG.
func (s *Server) instanceName(m *MIG) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	for {
		s.nextID++
		n := s.nextID * 2654435761
		var b [4]byte
		for i := range b {
			b[i] = letters[n%uint64(len(letters))]
			n /= uint64(len(letters))
		}
		name := m.BaseInstanceName + "-" + string(b[:])
		if !slices.ContainsFunc(m.instances, func(i *Instance) bool { return i.Name == name }) {
			return name
		}
	}
}

// grow adds VMs to a MIG: named ones, or n new names. Their creation
// follows the MIG's faults; running ones are reported to OnCreate after
// CreateDelay (at once when now is set).
func (s *Server) grow(m *MIG, n int64, names []string, now bool) {
	s.mu.Lock()
	if names == nil {
		for range n {
			names = append(names, s.instanceName(m))
		}
	}
	var started []*Instance
	for _, name := range names {
		s.nextID++
		inst := &Instance{
			Name: name, Zone: m.Zone, Project: m.Project, MIG: m.Name, ID: s.nextID,
			Template: m.Template, Status: "PROVISIONING", Action: "CREATING", Created: s.now(),
		}
		switch {
		case s.faults.Stockout[m.Name]:
			inst.ErrorCode = "ZONE_RESOURCE_POOL_EXHAUSTED"
		case s.faults.Quota[m.Name]:
			inst.ErrorCode = "QUOTA_EXCEEDED"
		case s.faults.Stuck[m.Name]:
		default:
			started = append(started, inst)
		}
		m.instances = append(m.instances, inst)
	}
	m.TargetSize = int64(len(m.instances))
	s.mu.Unlock()
	for _, inst := range started {
		if now || s.CreateDelay == 0 {
			s.run(inst)
			continue
		}
		time.AfterFunc(s.CreateDelay, func() { s.run(inst) })
	}
}

// run turns a VM RUNNING, unless it was deleted meanwhile, and tells OnCreate.
func (s *Server) run(inst *Instance) {
	s.mu.Lock()
	m := s.migs[inst.Zone+"/"+inst.MIG]
	alive := m != nil && slices.Contains(m.instances, inst)
	if alive {
		inst.Status, inst.Action = "RUNNING", "NONE"
	}
	c := *inst
	s.mu.Unlock()
	if alive && s.OnCreate != nil {
		s.OnCreate(&c)
	}
}

// remove deletes named VMs of a MIG (instance URLs or names) and lowers its
// target size by the number removed, as deleteInstances does.
func (s *Server) remove(m *MIG, names []string) {
	s.mu.Lock()
	var gone []*Instance
	m.instances = slices.DeleteFunc(m.instances, func(i *Instance) bool {
		for _, n := range names {
			if path.Base(n) == i.Name {
				gone = append(gone, i)
				return true
			}
		}
		return false
	})
	m.TargetSize = int64(len(m.instances))
	s.mu.Unlock()
	for _, i := range gone {
		if s.OnDelete != nil {
			c := *i
			s.OnDelete(&c)
		}
	}
}

// Handler serves the Compute API under /compute/v1/ and the
// errors the real API gives for an unknown path.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(s.serve)
}

func (s *Server) record(r *http.Request, c Call) {
	c.Method, c.Path, c.At = r.Method, r.URL.Path, s.now()
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+AccessToken {
		apiError(w, http.StatusUnauthorized, "Request had invalid authentication credentials.")
		return
	}
	p, ok := strings.CutPrefix(r.URL.Path, "/compute/v1/projects/")
	if !ok {
		s.notFound(w, r)
		return
	}
	parts := strings.Split(p, "/")
	if parts[0] != s.Project {
		apiError(w, http.StatusForbidden, "Permission denied on project "+parts[0])
		return
	}
	parts = parts[1:]
	s.record(r, Call{})
	switch {
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "global" && parts[1] == "instanceTemplates":
		s.getTemplate(w, r, parts[2])
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "regions":
		s.getRegion(w, r, parts[1])
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "zones":
		var items []map[string]any
		for _, z := range s.Zones {
			items = append(items, map[string]any{"name": z, "selfLink": URLBase + "projects/" + s.Project + "/zones/" + z,
				"availableCpuPlatforms": []string{"Intel Cascade Lake", "Intel Ice Lake", "AMD Milan"}})
		}
		reply(w, map[string]any{"kind": "compute#zoneList", "items": items})
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "aggregated" && parts[1] == "reservations":
		reply(w, map[string]any{"kind": "compute#reservationAggregatedList", "items": map[string]any{}})
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "aggregated" && parts[1] == "instanceGroupManagers":
		// One page: a scope per zone, "zones/<zone>", a zone without a
		// MIG with the warning the API gives it.
		items := map[string]any{}
		for _, z := range s.Zones {
			var list []any
			for _, m := range s.MIGs() {
				if m.Zone == z {
					list = append(list, s.igm(&m))
				}
			}
			if len(list) == 0 {
				items["zones/"+z] = map[string]any{"warning": map[string]any{"code": "NO_RESULTS_ON_PAGE"}}
				continue
			}
			items["zones/"+z] = map[string]any{"instanceGroupManagers": list}
		}
		reply(w, map[string]any{"kind": "compute#instanceGroupManagerAggregatedList", "items": items})
	case len(parts) >= 3 && parts[0] == "zones":
		s.zonal(w, r, parts[1], parts[2:])
	default:
		s.notFound(w, r)
	}
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.unknown = append(s.unknown, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	apiError(w, http.StatusNotFound, "The resource '"+r.URL.Path+"' was not found")
}

func (s *Server) zonal(w http.ResponseWriter, r *http.Request, zone string, parts []string) {
	if !slices.Contains(s.Zones, zone) {
		apiError(w, http.StatusBadRequest, "Invalid value for field 'zone': '"+zone+"'. Unknown zone.")
		return
	}
	zoneURL := URLBase + "projects/" + s.Project + "/zones/" + zone
	switch {
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "machineTypes":
		reply(w, map[string]any{"kind": "compute#machineTypeList", "items": []any{}})
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "machineTypes":
		cpus, mem, ok := s.MachineType(parts[1])
		if !ok {
			s.notFound(w, r)
			return
		}
		reply(w, map[string]any{"kind": "compute#machineType", "name": parts[1], "guestCpus": cpus, "memoryMb": mem,
			"zone": zone, "selfLink": zoneURL + "/machineTypes/" + parts[1]})
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "diskTypes":
		var items []map[string]any
		for _, d := range []string{"pd-standard", "pd-balanced", "pd-ssd", "pd-extreme", "hyperdisk-balanced", "local-ssd"} {
			items = append(items, map[string]any{"name": d})
		}
		reply(w, map[string]any{"kind": "compute#diskTypeList", "items": items})
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "instanceGroupManagers":
		var items []any
		for _, m := range s.MIGs() {
			if m.Zone == zone {
				items = append(items, s.igm(&m))
			}
		}
		reply(w, map[string]any{"kind": "compute#instanceGroupManagerList", "items": items})
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "instanceGroups":
		var items []any
		for _, m := range s.MIGs() {
			if m.Zone == zone {
				items = append(items, map[string]any{"name": m.Name, "selfLink": zoneURL + "/instanceGroups/" + m.Name})
			}
		}
		reply(w, map[string]any{"kind": "compute#instanceGroupList", "items": items})
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "instances":
		var items []any
		for _, i := range s.Instances("") {
			if i.Zone == zone {
				items = append(items, map[string]any{
					"name": i.Name, "id": strconv.FormatUint(i.ID, 10), "status": i.Status, "zone": zoneURL,
					"selfLink": zoneURL + "/instances/" + i.Name,
					"metadata": map[string]any{"items": []any{map[string]any{"key": "created-by",
						"value": "projects/" + s.Project + "/zones/" + zone + "/instanceGroupManagers/" + i.MIG}}},
				})
			}
		}
		reply(w, map[string]any{"kind": "compute#instanceList", "items": items})
	case len(parts) == 2 && parts[0] == "operations" && r.Method == http.MethodGet,
		len(parts) == 3 && parts[0] == "operations" && parts[2] == "wait" && r.Method == http.MethodPost:
		reply(w, map[string]any{"kind": "compute#operation", "name": parts[1], "status": "DONE", "zone": zoneURL,
			"selfLink": zoneURL + "/operations/" + parts[1]})
	case len(parts) >= 2 && parts[0] == "instanceGroupManagers":
		s.mu.Lock()
		m := s.migs[zone+"/"+parts[1]]
		s.mu.Unlock()
		if m == nil {
			s.notFound(w, r)
			return
		}
		s.mig(w, r, m, parts[2:])
	default:
		s.notFound(w, r)
	}
}

func (s *Server) mig(w http.ResponseWriter, r *http.Request, m *MIG, rest []string) {
	switch {
	case r.Method == http.MethodGet && len(rest) == 0:
		s.mu.Lock()
		c := *m
		s.mu.Unlock()
		reply(w, s.igm(&c))
	case r.Method == http.MethodDelete && len(rest) == 0:
		// instanceGroupManagers.delete: the MIG goes with its VMs; every
		// later call naming it answers 404.
		s.record(r, Call{Op: "delete", MIG: m.Name})
		s.DeleteMIG(m.Zone, m.Name)
		s.operation(w, m, "compute.instanceGroupManagers.delete")
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "listManagedInstances":
		var items []any
		s.mu.Lock()
		for _, i := range m.instances {
			mi := map[string]any{
				"instance": URLBase + "projects/" + i.Project + "/zones/" + i.Zone + "/instances/" + i.Name,
				"id":       strconv.FormatUint(i.ID, 10), "currentAction": i.Action,
				"version": map[string]any{"instanceTemplate": URLBase + "projects/" + s.Project + "/global/instanceTemplates/" + i.Template},
			}
			if i.Status != "PROVISIONING" || i.ErrorCode == "" {
				mi["instanceStatus"] = i.Status
			}
			if i.ErrorCode != "" {
				mi["lastAttempt"] = map[string]any{"errors": map[string]any{"errors": []any{map[string]any{
					"code": i.ErrorCode, "message": "The zone '" + i.Zone + "' does not have enough resources available to fulfill the request.",
				}}}}
			}
			items = append(items, mi)
		}
		s.mu.Unlock()
		reply(w, map[string]any{"managedInstances": items})
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "resize":
		size, err := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
		if err != nil || size < 0 {
			apiError(w, http.StatusBadRequest, "Invalid value for field 'size'")
			return
		}
		s.record(r, Call{Op: "resize", MIG: m.Name, Size: size})
		s.resize(m, size)
		s.operation(w, m, "compute.instanceGroupManagers.resize")
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "createInstances":
		var req struct {
			Instances []struct{ Name string } `json:"instances"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
			return
		}
		var names []string
		for _, i := range req.Instances {
			names = append(names, i.Name)
		}
		s.record(r, Call{Op: "createInstances", MIG: m.Name, Names: names})
		s.grow(m, 0, names, false)
		s.operation(w, m, "compute.instanceGroupManagers.createInstances")
	case r.Method == http.MethodPost && len(rest) == 1 && rest[0] == "deleteInstances":
		var req struct {
			Instances []string `json:"instances"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			apiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
			return
		}
		var names []string
		for _, i := range req.Instances {
			names = append(names, path.Base(i))
		}
		s.record(r, Call{Op: "deleteInstances", MIG: m.Name, Names: names})
		s.remove(m, names)
		s.operation(w, m, "compute.instanceGroupManagers.deleteInstances")
	default:
		s.notFound(w, r)
	}
}

func (s *Server) igm(m *MIG) map[string]any {
	zoneURL := URLBase + "projects/" + m.Project + "/zones/" + m.Zone
	s.mu.Lock()
	creating, running := 0, 0
	var instances []*Instance
	if live := s.migs[m.Zone+"/"+m.Name]; live != nil { // nil: deleted meanwhile
		instances = live.instances
	}
	for _, i := range instances {
		if i.Action == "CREATING" {
			creating++
		} else {
			running++
		}
	}
	s.mu.Unlock()
	tmpl := URLBase + "projects/" + m.Project + "/global/instanceTemplates/" + m.Template
	return map[string]any{
		"kind": "compute#instanceGroupManager", "name": m.Name, "zone": zoneURL,
		"baseInstanceName": m.BaseInstanceName, "targetSize": m.TargetSize,
		"instanceTemplate": tmpl,
		"versions":         []any{map[string]any{"instanceTemplate": tmpl}},
		"instanceGroup":    zoneURL + "/instanceGroups/" + m.Name,
		"selfLink":         zoneURL + "/instanceGroupManagers/" + m.Name,
		"currentActions":   map[string]any{"creating": creating, "none": running},
		"status":           map[string]any{"isStable": creating == 0},
	}
}

func (s *Server) operation(w http.ResponseWriter, m *MIG, kind string) {
	s.mu.Lock()
	s.opSeq++
	name := fmt.Sprintf("operation-%d", s.opSeq)
	s.mu.Unlock()
	zoneURL := URLBase + "projects/" + m.Project + "/zones/" + m.Zone
	reply(w, map[string]any{"kind": "compute#operation", "name": name, "operationType": kind, "status": "DONE",
		"zone": zoneURL, "selfLink": zoneURL + "/operations/" + name, "targetLink": zoneURL + "/instanceGroupManagers/" + m.Name})
}

func (s *Server) getTemplate(w http.ResponseWriter, r *http.Request, name string) {
	s.mu.Lock()
	t := s.templates[name]
	s.mu.Unlock()
	if t == nil {
		s.notFound(w, r)
		return
	}
	var items []any
	for _, k := range sortedKeys(t.Metadata) {
		items = append(items, map[string]any{"key": k, "value": t.Metadata[k]})
	}
	var accels []any
	for _, k := range sortedKeys(t.Accelerators) {
		accels = append(accels, map[string]any{"acceleratorType": k, "acceleratorCount": t.Accelerators[k]})
	}
	sched := map[string]any{"automaticRestart": true, "onHostMaintenance": "MIGRATE"}
	if t.Spot {
		sched = map[string]any{"provisioningModel": "SPOT", "preemptible": true, "automaticRestart": false, "onHostMaintenance": "TERMINATE"}
	} else if len(accels) > 0 {
		sched["onHostMaintenance"] = "TERMINATE"
	}
	reply(w, map[string]any{
		"kind": "compute#instanceTemplate", "name": name,
		"selfLink": URLBase + "projects/" + s.Project + "/global/instanceTemplates/" + name,
		"properties": map[string]any{
			"machineType":       t.MachineType,
			"metadata":          map[string]any{"items": items},
			"guestAccelerators": accels,
			"scheduling":        sched,
			"labels":            t.Labels,
			"disks": []any{map[string]any{"boot": true, "autoDelete": true, "type": "PERSISTENT",
				"initializeParams": map[string]any{"diskSizeGb": strconv.FormatInt(t.DiskSizeGb, 10), "diskType": t.DiskType}}},
		},
	})
}

func (s *Server) getRegion(w http.ResponseWriter, r *http.Request, region string) {
	if region != s.Region {
		s.notFound(w, r)
		return
	}
	var zones []string
	for _, z := range s.Zones {
		zones = append(zones, URLBase+"projects/"+s.Project+"/zones/"+z)
	}
	reply(w, map[string]any{"kind": "compute#region", "name": region, "zones": zones})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes an error in the Compute API's JSON error format.
func apiError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"code": code, "message": msg, "errors": []any{map[string]any{"message": msg, "domain": "global", "reason": http.StatusText(code)}},
	}})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
