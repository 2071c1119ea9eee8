package rollout

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/nodegen/nodegen/internal/model"
)

// DefaultComputeEndpoint is the Compute Engine API v1 base URL.
const DefaultComputeEndpoint = "https://compute.googleapis.com/compute/v1/"

// ComputeScope is the OAuth scope the rollout's calls need.
const ComputeScope = "https://www.googleapis.com/auth/compute"

// Compute is a client of the few Compute Engine API v1 methods a rollout
// calls: instanceGroupManagers get, listManagedInstances, createInstances
// and deleteInstances, aggregatedList and delete (of a MIG it emptied),
// instanceTemplates and regionInstanceTemplates get,
// and zoneOperations wait. It speaks the API's REST wire format (JSON with
// the field names of the v1 discovery document, long-running Operations);
// HTTP carries the credentials (an oauth2 client).
type Compute struct {
	// Endpoint is the API's base URL, ending in "/compute/v1/".
	Endpoint string
	HTTP     *http.Client
}

// MIG is the part of an InstanceGroupManager the rollout reads.
type MIG struct {
	Name             string `json:"name"`
	BaseInstanceName string `json:"baseInstanceName"`
	TargetSize       int    `json:"targetSize"`
	InstanceTemplate string `json:"instanceTemplate"`
	Versions         []struct {
		Name             string `json:"name"`
		InstanceTemplate string `json:"instanceTemplate"`
	} `json:"versions"`
	Status struct {
		IsStable bool `json:"isStable"`
	} `json:"status"`
}

// Template is the MIG's current instance template: its one version's, or
// the group-wide one.
func (m *MIG) Template() string {
	if len(m.Versions) == 1 && m.Versions[0].InstanceTemplate != "" {
		return m.Versions[0].InstanceTemplate
	}
	return m.InstanceTemplate
}

// ManagedInstance is one entry of listManagedInstances.
type ManagedInstance struct {
	Instance       string `json:"instance"` // the instance's URL
	InstanceStatus string `json:"instanceStatus"`
	CurrentAction  string `json:"currentAction"`
	Version        struct {
		InstanceTemplate string `json:"instanceTemplate"`
	} `json:"version"`
	// LastAttempt is what went wrong the last time the MIG tried to
	// create the instance (a quota exceeded, a zone out of resources).
	LastAttempt struct {
		Errors struct {
			Errors []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"errors"`
	} `json:"lastAttempt"`
}

// CreateErrors says why the MIG could not create the instance yet, from
// its last attempt's errors ("" when there are none), as the Cluster
// Autoscaler reads them for an instance it is creating (kubernetes/
// autoscaler cluster-autoscaler-1.35.2, cloudprovider/gce/
// autoscaling_gce_client.go, getLastAttemptErrors).
func (m ManagedInstance) CreateErrors() string {
	var out []string
	for _, e := range m.LastAttempt.Errors.Errors {
		out = append(out, strings.TrimSpace(e.Code+": "+e.Message))
	}
	return strings.Join(out, "; ")
}

// Name is the instance's name, the last part of its URL.
func (m ManagedInstance) Name() string { return m.Instance[strings.LastIndexByte(m.Instance, '/')+1:] }

// operation is a zonal Operation.
type operation struct {
	Name   string `json:"name"`
	Zone   string `json:"zone"`
	Status string `json:"status"`
	Error  *struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"error"`
}

// APIError is an error answer of the API.
type APIError struct {
	Method, URL string
	Code        int
	Message     string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("compute API %s %s: HTTP %d: %s", e.Method, e.URL, e.Code, e.Message)
}

func (c *Compute) migPath(project, zone, mig string) string {
	return "projects/" + url.PathEscape(project) + "/zones/" + url.PathEscape(zone) + "/instanceGroupManagers/" + url.PathEscape(mig)
}

// resolve turns a resource URL or a path relative to the API's base into
// a URL under c.Endpoint: resource URLs the API returns (instance
// templates, instances) name the public host even when the client uses
// another endpoint.
func (c *Compute) resolve(ref string) string {
	if i := strings.Index(ref, "/compute/v1/"); i >= 0 {
		ref = ref[i+len("/compute/v1/"):]
	}
	return strings.TrimSuffix(c.Endpoint, "/") + "/" + strings.TrimPrefix(ref, "/")
}

func (c *Compute) do(ctx context.Context, method, ref string, body, out any) error {
	u := c.resolve(ref)
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("compute API %s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("compute API %s %s: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &APIError{Method: method, URL: u, Code: resp.StatusCode, Message: msg}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("compute API %s %s: %w", method, u, err)
		}
	}
	return nil
}

// GetMIG reads a zonal MIG.
func (c *Compute) GetMIG(ctx context.Context, project, zone, mig string) (*MIG, error) {
	var m MIG
	if err := c.do(ctx, http.MethodGet, c.migPath(project, zone, mig), nil, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ListManagedInstances lists every instance of a zonal MIG, all pages.
func (c *Compute) ListManagedInstances(ctx context.Context, project, zone, mig string) ([]ManagedInstance, error) {
	var all []ManagedInstance
	token := ""
	for {
		ref := c.migPath(project, zone, mig) + "/listManagedInstances"
		if token != "" {
			ref += "?pageToken=" + url.QueryEscape(token)
		}
		var page struct {
			ManagedInstances []ManagedInstance `json:"managedInstances"`
			NextPageToken    string            `json:"nextPageToken"`
		}
		if err := c.do(ctx, http.MethodPost, ref, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.ManagedInstances...)
		if page.NextPageToken == "" {
			return all, nil
		}
		token = page.NextPageToken
	}
}

// CreateInstances adds instances of the given names to a MIG (its target
// size grows by as many) and waits for the operation.
func (c *Compute) CreateInstances(ctx context.Context, project, zone, mig string, names []string) error {
	type per struct {
		Name string `json:"name"`
	}
	body := struct {
		Instances []per `json:"instances"`
	}{}
	for _, n := range names {
		body.Instances = append(body.Instances, per{n})
	}
	var op operation
	if err := c.do(ctx, http.MethodPost, c.migPath(project, zone, mig)+"/createInstances", body, &op); err != nil {
		return err
	}
	return c.wait(ctx, project, zone, &op)
}

// DeleteInstances removes instances from a MIG and deletes them (its
// target size shrinks by as many), and waits for the operation.
func (c *Compute) DeleteInstances(ctx context.Context, project, zone, mig string, names []string) error {
	body := struct {
		Instances                      []string `json:"instances"`
		SkipInstancesOnValidationError bool     `json:"skipInstancesOnValidationError"`
	}{SkipInstancesOnValidationError: true}
	for _, n := range names {
		body.Instances = append(body.Instances, "zones/"+zone+"/instances/"+n)
	}
	var op operation
	if err := c.do(ctx, http.MethodPost, c.migPath(project, zone, mig)+"/deleteInstances", body, &op); err != nil {
		return err
	}
	return c.wait(ctx, project, zone, &op)
}

// ZonalMIG is a zonal MIG of instanceGroupManagers.aggregatedList.
type ZonalMIG struct {
	Zone string
	MIG
}

// ListMIGs lists the zonal MIGs of a project, every zone and page
// (instanceGroupManagers.aggregatedList; regional MIGs are left out).
func (c *Compute) ListMIGs(ctx context.Context, project string) ([]ZonalMIG, error) {
	var all []ZonalMIG
	token := ""
	for {
		ref := "projects/" + url.PathEscape(project) + "/aggregated/instanceGroupManagers"
		if token != "" {
			ref += "?pageToken=" + url.QueryEscape(token)
		}
		var page struct {
			Items map[string]struct {
				InstanceGroupManagers []MIG `json:"instanceGroupManagers"`
			} `json:"items"`
			NextPageToken string `json:"nextPageToken"`
		}
		if err := c.do(ctx, http.MethodGet, ref, nil, &page); err != nil {
			return nil, err
		}
		for scope, list := range page.Items {
			zone, ok := strings.CutPrefix(scope, "zones/")
			if !ok {
				continue
			}
			for _, m := range list.InstanceGroupManagers {
				all = append(all, ZonalMIG{Zone: zone, MIG: m})
			}
		}
		if page.NextPageToken == "" {
			sort.Slice(all, func(i, j int) bool { return all[i].Zone+"/"+all[i].Name < all[j].Zone+"/"+all[j].Name })
			return all, nil
		}
		token = page.NextPageToken
	}
}

// DeleteMIG deletes a zonal MIG (and the instances it still has: the
// rollout calls it only on a MIG it emptied) and waits for the operation.
func (c *Compute) DeleteMIG(ctx context.Context, project, zone, mig string) error {
	var op operation
	if err := c.do(ctx, http.MethodDelete, c.migPath(project, zone, mig), nil, &op); err != nil {
		return err
	}
	return c.wait(ctx, project, zone, &op)
}

// GetInstanceTemplate reads an instance template by its URL (global or
// regional): its name, and its properties decoded into the typed
// template.
func (c *Compute) GetInstanceTemplate(ctx context.Context, ref string) (string, *model.InstanceTemplate, error) {
	var t model.ComputeInstanceTemplate
	if err := c.do(ctx, http.MethodGet, ref, nil, &t); err != nil {
		return "", nil, err
	}
	tmpl := t.Template()
	if tmpl == nil { // no properties: a template that declares nothing
		tmpl = &model.InstanceTemplate{}
	}
	return t.Name, tmpl, nil
}

// wait waits for a zonal operation to be DONE (zoneOperations.wait, which
// returns after at most two minutes, repeated) and returns its error.
func (c *Compute) wait(ctx context.Context, project, zone string, op *operation) error {
	for op.Status != "DONE" {
		if op.Name == "" {
			return fmt.Errorf("compute API: an operation without a name")
		}
		ref := "projects/" + url.PathEscape(project) + "/zones/" + url.PathEscape(zone) + "/operations/" + url.PathEscape(op.Name) + "/wait"
		next := operation{}
		if err := c.do(ctx, http.MethodPost, ref, nil, &next); err != nil {
			return err
		}
		*op = next
		if op.Status != "DONE" {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
	if op.Error != nil && len(op.Error.Errors) > 0 {
		var msgs []string
		for _, e := range op.Error.Errors {
			msgs = append(msgs, e.Code+": "+e.Message)
		}
		return fmt.Errorf("compute operation %s: %s", op.Name, strings.Join(msgs, "; "))
	}
	return nil
}
