package model

import (
	"fmt"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/layout"
)

// InstanceTemplate is the part of a cloud group's Compute Engine instance
// template that nodegen decides, with the field names of compute/v1's
// InstanceTemplate and InstanceProperties: what out/terraform creates,
// what the group's revision hashes (all of it, so a new attribute cannot
// change the template without changing the revision). Source.InstanceTemplate
// builds it from the group, for each of them alike.
//
// What the user brings through Terraform variables (the network, the
// subnetwork, the service account's scopes, the network tags of their own)
// is not in it: those are the same for every group and outside the source.
// The metadata values that are files (kube-env, the startup script) are
// named by their keys only: the revision hashes their rendered bytes.
type InstanceTemplate struct {
	// NamePrefix is the template's name up to the suffix Terraform adds
	// (name_prefix): a changed template gets a new name, and the MIG
	// moves to it (create_before_destroy).
	NamePrefix  string             `json:"namePrefix"`
	Description string             `json:"description"`
	Properties  InstanceProperties `json:"properties"`
}

// InstanceProperties are the properties of an InstanceTemplate.
type InstanceProperties struct {
	MachineType string            `json:"machineType"`
	Labels      map[string]string `json:"labels"`
	Metadata    []MetadataItem    `json:"metadata"`
	// Tags are the network tags nodegen adds to the user's
	// (var.network_tags): the autohealing health check's.
	Tags              []string            `json:"tags"`
	Disks             []AttachedDisk      `json:"disks"`
	GuestAccelerators []AcceleratorConfig `json:"guestAccelerators"`
	Scheduling        Scheduling          `json:"scheduling"`
	// ServiceAccountRole is the role whose service account the VMs run
	// as (RoleAutoscaler or RoleNodes); its email is a Terraform value.
	ServiceAccountRole string `json:"serviceAccountRole"`
}

// MetadataItem is one metadata key of the template: a literal Value, or
// the group's rendered artifact of that key (Rendered: kube-env, the
// startup script), whose bytes the revision hashes as rendered.
type MetadataItem struct {
	Key      string `json:"key"`
	Value    string `json:"value"`
	Rendered bool   `json:"rendered"`
}

// RenderedPath is the path under out/ of the artifact whose bytes are the
// value of the Rendered item it of group's template, "" for a key no
// artifact renders.
func (it MetadataItem) RenderedPath(group string) string {
	switch {
	case !it.Rendered:
		return ""
	case it.Key == MetadataKubeEnv:
		return layout.KubeEnvPath(group)
	case it.Key == MetadataStartupScript:
		return layout.StartupScriptPath(group)
	}
	return ""
}

// Disk types and interfaces of an AttachedDisk.
const (
	DiskPersistent = "PERSISTENT"
	DiskScratch    = "SCRATCH"
	// LocalSSDDiskType is the disk type of a local SSD.
	LocalSSDDiskType = "local-ssd"
	// DiskInterfaceNVMe is the interface local SSDs are attached on, the
	// form the autoscaler counts (cloudprovider/gce/templates.go,
	// getLocalSsdCount, kubernetes/autoscaler cluster-autoscaler-1.35.2).
	DiskInterfaceNVMe = "NVME"
)

// AttachedDisk is one disk of the template: the boot disk first, then the
// local SSDs.
type AttachedDisk struct {
	Boot             bool                 `json:"boot"`
	AutoDelete       bool                 `json:"autoDelete"`
	Type             string               `json:"type"`
	Interface        string               `json:"interface"`
	InitializeParams DiskInitializeParams `json:"initializeParams"`
}

// DiskInitializeParams are a disk's creation parameters.
type DiskInitializeParams struct {
	SourceImage string `json:"sourceImage"`
	DiskSizeGb  int64  `json:"diskSizeGb"`
	DiskType    string `json:"diskType"`
}

// AcceleratorConfig is one entry of guestAccelerators.
type AcceleratorConfig struct {
	AcceleratorType  string `json:"acceleratorType"`
	AcceleratorCount int64  `json:"acceleratorCount"`
}

// Scheduling is the template's scheduling: GPU VMs cannot live-migrate
// and must stop for host maintenance; Spot VMs must not restart
// automatically and are deleted when preempted. A zero Scheduling is
// Compute Engine's default (live migration, automatic restart).
type Scheduling struct {
	ProvisioningModel         string `json:"provisioningModel"`
	Preemptible               bool   `json:"preemptible"`
	AutomaticRestart          *bool  `json:"automaticRestart"`
	OnHostMaintenance         string `json:"onHostMaintenance"`
	InstanceTerminationAction string `json:"instanceTerminationAction"`
}

// ProvisioningSpot is Scheduling.ProvisioningModel of a Spot VM.
const ProvisioningSpot = "SPOT"

// Metadata keys whose values are the group's rendered artifacts.
const (
	MetadataKubeEnv       = "kube-env"
	MetadataStartupScript = "startup-script"
)

// AutohealingName is the name of an autohealed group's health check and
// firewall rule, and the network tag its VMs carry for that rule: the
// MIGs' base instance name plus "-hc" (at most 61 characters, as the base
// leaves room for the MIG's 5-character instance suffix).
func (c *Cluster) AutohealingName(g *NodeGroup) string { return c.BaseInstanceName(g) + "-hc" }

// InstanceTemplate builds the instance template of the cloud group g of s
// (g's Shape resolved).
func (s *Source) InstanceTemplate(g *NodeGroup) *InstanceTemplate {
	c := &s.Cluster
	t := &InstanceTemplate{
		NamePrefix:  c.TemplatePrefix(g),
		Description: fmt.Sprintf("nodegen node group %s of cluster %s", g.Name, c.Name),
	}
	p := &t.Properties
	p.MachineType = g.MachineType
	p.Labels = gce.Labels(c.Name, g.Name, g.Labels)
	if c.BindsKubeletKey() {
		// The startup script publishes the kubelet's bootstrap key hash as
		// a guest attribute, which the VM can write only with this set.
		p.Metadata = append(p.Metadata, MetadataItem{Key: gce.GuestAttributesKey, Value: "TRUE"})
	}
	p.Metadata = append(p.Metadata,
		MetadataItem{Key: MetadataKubeEnv, Rendered: true},
		MetadataItem{Key: MetadataStartupScript, Rendered: true})
	if g.Autohealed() {
		p.Tags = []string{c.AutohealingName(g)}
	}
	p.Disks = []AttachedDisk{{
		Boot:       true,
		AutoDelete: true,
		Type:       DiskPersistent,
		InitializeParams: DiskInitializeParams{
			SourceImage: g.Image,
			DiskSizeGb:  int64(g.BootDiskSizeGb),
			DiskType:    g.BootDiskType,
		},
	}}
	for range g.LocalSSDCount {
		p.Disks = append(p.Disks, AttachedDisk{
			AutoDelete:       true,
			Type:             DiskScratch,
			Interface:        DiskInterfaceNVMe,
			InitializeParams: DiskInitializeParams{DiskSizeGb: LocalSSDSizeGiB, DiskType: LocalSSDDiskType},
		})
	}
	if g.GPU != nil {
		p.GuestAccelerators = []AcceleratorConfig{{AcceleratorType: g.GPU.Type, AcceleratorCount: int64(g.GPU.Count)}}
	}
	switch {
	case g.Spot:
		no := false
		p.Scheduling = Scheduling{
			ProvisioningModel:         ProvisioningSpot,
			Preemptible:               true,
			AutomaticRestart:          &no,
			OnHostMaintenance:         "TERMINATE",
			InstanceTerminationAction: SpotTerminationAction,
		}
	case g.HasGPUs():
		yes := true
		p.Scheduling = Scheduling{OnHostMaintenance: "TERMINATE", AutomaticRestart: &yes}
	}
	p.ServiceAccountRole = RoleOf(s, g)
	return t
}
