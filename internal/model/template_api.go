package model

import (
	"fmt"
	"strconv"
	"strings"
)

// ComputeInstanceTemplate is an instance template in the JSON of Compute
// Engine's API v1 (instanceTemplates.get, `gcloud compute
// instance-templates describe --format=json`): the wire form in which a
// live template is read, which Template decodes into the typed
// InstanceTemplate. The fields nodegen does not decide are ignored.
type ComputeInstanceTemplate struct {
	Kind        string             `json:"kind"`
	Name        string             `json:"name"`
	SelfLink    string             `json:"selfLink"`
	Description string             `json:"description"`
	Properties  *computeProperties `json:"properties"`
}

type computeProperties struct {
	MachineType string            `json:"machineType"`
	Labels      map[string]string `json:"labels"`
	Metadata    struct {
		Items []struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		} `json:"items"`
	} `json:"metadata"`
	Tags struct {
		Items []string `json:"items"`
	} `json:"tags"`
	Disks []struct {
		Boot             bool   `json:"boot"`
		AutoDelete       bool   `json:"autoDelete"`
		Type             string `json:"type"`
		Interface        string `json:"interface"`
		InitializeParams struct {
			SourceImage string `json:"sourceImage"`
			// DiskSizeGb is an int64, which the API writes as a JSON string.
			DiskSizeGb int64String `json:"diskSizeGb"`
			DiskType   string      `json:"diskType"`
		} `json:"initializeParams"`
	} `json:"disks"`
	GuestAccelerators []AcceleratorConfig `json:"guestAccelerators"`
	Scheduling        Scheduling          `json:"scheduling"`
}

// int64String reads the Compute API's int64 fields, written as JSON strings
// ("200"); a plain number is accepted too.
type int64String int64

func (n *int64String) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an int64: %s", b)
	}
	*n = int64String(v)
	return nil
}

// Template is the typed template of c, nil when c has no properties. The
// API's answer names the template in full (not NamePrefix, left empty),
// its service account by email (ServiceAccountRole left empty), and
// every metadata value as a literal (none Rendered; a key without a
// value has ""); Tags are all the template's network tags.
func (c *ComputeInstanceTemplate) Template() *InstanceTemplate {
	if c.Properties == nil {
		return nil
	}
	w := c.Properties
	t := &InstanceTemplate{Description: c.Description}
	p := &t.Properties
	p.MachineType = w.MachineType
	p.Labels = w.Labels
	for _, it := range w.Metadata.Items {
		v := ""
		if it.Value != nil {
			v = *it.Value
		}
		p.Metadata = append(p.Metadata, MetadataItem{Key: it.Key, Value: v})
	}
	p.Tags = w.Tags.Items
	for _, d := range w.Disks {
		p.Disks = append(p.Disks, AttachedDisk{
			Boot:       d.Boot,
			AutoDelete: d.AutoDelete,
			Type:       d.Type,
			Interface:  d.Interface,
			InitializeParams: DiskInitializeParams{
				SourceImage: d.InitializeParams.SourceImage,
				DiskSizeGb:  int64(d.InitializeParams.DiskSizeGb),
				DiskType:    d.InitializeParams.DiskType,
			},
		})
	}
	p.GuestAccelerators = w.GuestAccelerators
	p.Scheduling = w.Scheduling
	return t
}

// MetadataValue is the value of the metadata key of p, and whether p has
// the key.
func (p *InstanceProperties) MetadataValue(key string) (string, bool) {
	for _, it := range p.Metadata {
		if it.Key == key {
			return it.Value, true
		}
	}
	return "", false
}
