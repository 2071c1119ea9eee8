package docs

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/kubeadm"
	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
)

// The GPU Operator's Helm chart the day-0 steps install (the autoscaler's is
// model.AutoscalerChart), at the release nodegen's
// values are proven with (the chart's own values and templates read at
// that version).
const (
	GPUOperatorChartRepoName = "nvidia"
	GPUOperatorChartRepo     = "https://helm.ngc.nvidia.com/nvidia"
	GPUOperatorChart         = "gpu-operator"
	GPUOperatorChartVersion  = model.GPUOperatorChartVersion
	GPUOperatorRelease       = "gpu-operator"
	GPUOperatorNamespace     = "gpu-operator"
)

// Day0ControlPlaneHostVar is the shell variable the day-0 steps read the
// control-plane node to ssh to from.
const Day0ControlPlaneHostVar = "CONTROL_PLANE_HOST"

// Markers around each first-token command in docs/day0.md (day 0, and
// the way back after a lapsed renewal), so that the tests run the very
// lines the docs show.
const (
	Day0FirstTokenBegin = "<!-- nodegen:first-token -->"
	Day0FirstTokenEnd   = "<!-- /nodegen:first-token -->"
	// Around the commands that list the autoscaler's VMs and the pending
	// kubelet client CSRs, and around the one that approves one of them.
	Day0ListCSRsBegin   = "<!-- nodegen:list-node-csrs -->"
	Day0ListCSRsEnd     = "<!-- /nodegen:list-node-csrs -->"
	Day0ApproveCSRBegin = "<!-- nodegen:approve-node-csr -->"
	Day0ApproveCSREnd   = "<!-- /nodegen:approve-node-csr -->"
	// Around the command that gives the autoscaler's nodes the verified
	// group label.
	Day0LabelNodesBegin = "<!-- nodegen:label-autoscaler-nodes -->"
	Day0LabelNodesEnd   = "<!-- /nodegen:label-autoscaler-nodes -->"
)

// Day0StepMarker, followed by the step's name and " -->", is the line right
// under each numbered step's heading of docs/day0.md: the tests play the
// fenced sh blocks of the steps so marked, in order, as a person runs
// them. A block right under Day0IfLateMarker is run only when the VM gave
// up waiting, not on a day 0 that goes as written.
const (
	Day0StepMarker   = "<!-- nodegen:day0-step "
	Day0IfLateMarker = "<!-- nodegen:day0-if-late -->"
	// Day0OnHostMarker, followed by a host's name and " -->", is the line
	// above a block run on that host (an on-prem VPN gateway), not where
	// the other steps run.
	Day0OnHostMarker = "<!-- nodegen:day0-on-host "
)

// The names of day-0 steps, in their order (a step a source does not need
// is left out).
const (
	Day0StepAPIs        = "apis"
	Day0StepImages      = "images"
	Day0StepVPNKeys     = "vpn-keys"
	Day0StepTerraform   = "terraform"
	Day0StepVPN         = "vpn"
	Day0StepPodNetwork  = "pod-network"
	Day0StepFirstToken  = "first-token"
	Day0StepManifests   = "manifests"
	Day0StepProviderIDs = "provider-ids"
	Day0StepOnpremNodes = "onprem-nodes"
	Day0StepCharts      = "charts"
	Day0StepRenewer     = "renewer"
	Day0StepCheck       = "check"
)

// Day0NodeCSRVar is the shell variable the day-0 approval reads the name
// of the CSR to approve from.
const Day0NodeCSRVar = "NODE_CSR"

// day0APIs are the Google APIs the day-0 steps and out/terraform use:
// Compute Engine (instance templates, MIGs), IAM (service accounts,
// custom roles), Resource Manager (project IAM bindings) and, with a
// Secret Manager join token or a VPN's keys, Secret Manager.
func day0APIs(src *model.Source) []string {
	apis := []string{"compute.googleapis.com", "iam.googleapis.com", "cloudresourcemanager.googleapis.com"}
	if src.Cluster.JoinToken.SecretManager != nil || day0VPN(src) != nil {
		apis = append(apis, "secretmanager.googleapis.com")
	}
	// gcloud compute ssh --tunnel-through-iap to the image builder VMs
	// goes through Identity-Aware Proxy, whose API must be enabled.
	if ims, _ := model.BuildableImages(src.NodeImages()); len(ims) > 0 && src.Cluster.GCP.Network != nil {
		apis = append(apis, "iap.googleapis.com")
	}
	return apis
}

// day0FirstTokenCommand is the command that makes a join token on a
// control-plane node (kubeadm, with the cluster's admin credentials
// there) and adds it as the newest version of the Secret Manager secret
// (gcloud, with the person's credentials), without the token ever being
// written to a file or shown. The token is in model.CloudBootstrapGroup only:
// kubeadm token create's --groups replaces its default group, kubeadm's
// auto-approved system:bootstrappers:kubeadm:default-node-token
// (kubernetes/kubernetes v1.37.2, cmd/kubeadm/app/cmd/options/token.go
// AddGroupsFlag, a pflag string slice whose first value replaces the
// default; cmd/kubeadm/app/apis/bootstraptoken/v1/defaults.go
// SetDefaults_BootstrapToken).
//
// With the token in project metadata (no renewer) the token lives
// day0MetadataTokenTTL, and gcloud sets it as the metadata key.
func day0FirstTokenCommand(src *model.Source) (string, error) {
	sm := src.Cluster.JoinToken.SecretManager
	if sm == nil {
		key := src.Cluster.JoinToken.MetadataKey
		if key == "" {
			return "", fmt.Errorf("no join token")
		}
		return fmt.Sprintf("ssh \"${%s:?set it to a control-plane node you can ssh to}\" sudo kubeadm token create --ttl %s --groups %s --description nodegen-first-join-token |\n  gcloud compute project-info add-metadata --project=%s --metadata-from-file=%s=/dev/stdin",
			Day0ControlPlaneHostVar, model.FormatDuration(day0MetadataTokenTTL), model.CloudBootstrapGroup, src.Cluster.GCP.Project, key), nil
	}
	r := src.Renewal()
	return fmt.Sprintf("ssh \"${%s:?set it to a control-plane node you can ssh to}\" sudo kubeadm token create --ttl %s --groups %s --description nodegen-first-join-token |\n  gcloud secrets versions add %s --project=%s --data-file=-",
		Day0ControlPlaneHostVar, model.FormatDuration(r.TTL), model.CloudBootstrapGroup, sm.Secret, src.Cluster.GCP.Project), nil
}

// day0MetadataTokenTTL is the lifetime of a join token the admin sets in
// project metadata: kubeadm token create's default.
const day0MetadataTokenTTL = 24 * time.Hour

// day0ListCSRsCommand lists the instances of the autoscaler group's MIGs
// (gcloud) and the undecided kubelet client CSRs, each with its requester,
// groups and the subject it asks for (kubectl, openssl), so that the
// person can approve the autoscaler's node by hand on day 0, before the
// approver runs.
func day0ListCSRsCommand(src *model.Source) string {
	c := &src.Cluster
	ca := src.NodeGroups[c.Autoscaler.NodeGroup]
	var b strings.Builder
	for _, z := range ca.Zones {
		fmt.Fprintf(&b, "gcloud compute instance-groups managed list-instances %s --zone=%s --project=%s --format='value(name)'\n", c.MIGName(ca, z), z, c.GCP.Project)
	}
	fmt.Fprintf(&b, "kubectl get csr --field-selector=spec.signerName=%s \\\n", model.KubeletClientSigner)
	b.WriteString("  -o go-template='{{range .items}}{{if not .status.conditions}}{{.metadata.name}} {{.spec.username}} {{range .spec.groups}}{{.}},{{end}} {{.spec.request}}{{\"\\n\"}}{{end}}{{end}}' |\n")
	b.WriteString("  while read -r csr user groups request; do\n")
	b.WriteString("    printf '%s %s %s %s\\n' \"${csr}\" \"${user}\" \"${groups}\" \"$(base64 -d <<<\"${request}\" | openssl req -noout -subject)\"\n")
	b.WriteString("  done")
	return b.String()
}

// day0LabelNodesCommand gives the Node of each VM of the autoscaler
// group's MIGs, as the Compute API lists them, the verified group label
// (model.VerifiedGroupLabel): the approver sets it on every later node,
// but it runs on these, so the admin sets it there (the kubelet cannot).
func day0LabelNodesCommand(src *model.Source) string {
	ca := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	return day0ForEachAutoscalerVM(src, fmt.Sprintf("kubectl label node \"${vm}\" %s=%s --overwrite", model.VerifiedGroupLabel, ca.Name))
}

// day0ForEachAutoscalerVM runs command with vm set to each VM of the
// autoscaler group's MIGs, as the Compute API lists them.
func day0ForEachAutoscalerVM(src *model.Source, command string) string {
	c := &src.Cluster
	ca := src.NodeGroups[c.Autoscaler.NodeGroup]
	var b strings.Builder
	b.WriteString("for vm in $(\n")
	for _, z := range ca.Zones {
		fmt.Fprintf(&b, "  gcloud compute instance-groups managed list-instances %s --zone=%s --project=%s --format='value(name)'\n", c.MIGName(ca, z), z, c.GCP.Project)
	}
	fmt.Fprintf(&b, "); do\n  %s\ndone", command)
	return b.String()
}

// day0ApproveCSRCommand approves the CSR named in Day0NodeCSRVar.
func day0ApproveCSRCommand() string {
	return "kubectl certificate approve \"${" + Day0NodeCSRVar + ":?set it to the name of the request to approve}\""
}

// Day0 renders docs/day0.md: the ordered steps that take this
// cluster from an empty GCP project to a scaling cluster, with the
// prerequisites (APIs, roles, quota), in an order that does not deadlock.
func Day0(src *model.Source, files layout.Files) error {
	var b bytes.Buffer
	d := &docWriter{b: &b, src: src}
	b.WriteString(markdownHeader(src.Name))
	if err := d.day0(terraformTypes(files)); err != nil {
		return fmt.Errorf("%s: %w", layout.Day0DocsPath, err)
	}
	files[layout.Day0DocsPath] = b.Bytes()
	return nil
}

// day0Doc is docs/day0.md being written: the facts its steps share, and
// the number of the last step.
type day0Doc struct {
	*docWriter
	c        *model.Cluster
	out      string           // the cluster's tree, out/ or out/<cluster>/
	ca       *model.NodeGroup // the autoscaler's group
	deadline time.Duration    // the autoscaler's group's join deadline
	sm       *model.SecretRef
	renews   bool // the join token renewer is rendered
	roles    []gce.RoleCovering
	step     int
}

// tfBlockType is a top-level resource, ephemeral resource or data source
// block's type in a rendered .tf file (hclText writes them at the start of
// a line, in hclwrite's canonical layout).
var tfBlockType = regexp.MustCompile(`(?m)^(?:resource|ephemeral|data) "([a-z0-9_]+)"`)

// terraformTypes are the resource types of every .tf file rendered under
// out/terraform, sorted and once each: the day-0 role table is derived
// from them.
func terraformTypes(files layout.Files) []string {
	var types []string
	for p, b := range files {
		if !strings.HasPrefix(p, layout.TerraformDir+"/") || !strings.HasSuffix(p, ".tf") {
			continue
		}
		for _, m := range tfBlockType.FindAllSubmatch(b, -1) {
			types = append(types, string(m[1]))
		}
	}
	slices.Sort(types)
	return slices.Compact(types)
}

func (w *docWriter) day0(tfTypes []string) error {
	src, c := w.src, &w.src.Cluster
	d := &day0Doc{docWriter: w, c: c, out: "out/" + src.Tree, sm: c.JoinToken.SecretManager, renews: src.Cluster.HasJoinTokenRenewer()}
	var err error
	if d.roles, err = gce.ApplyRoles(tfTypes); err != nil {
		return err
	}
	d.ca = src.NodeGroups[c.Autoscaler.NodeGroup]
	if d.ca == nil || !d.ca.Cloud() {
		return fmt.Errorf("the autoscaler's node group %q is not a cloud group", c.Autoscaler.NodeGroup)
	}
	if d.deadline, err = c.JoinDeadline(d.ca); err != nil {
		return err
	}
	d.beforeYouStart()
	d.apis()
	d.images()
	d.vpnKeys()
	d.terraform()
	d.vpn()
	d.podNetwork()
	tokenStep, err := d.firstToken()
	if err != nil {
		return err
	}
	d.manifests()
	d.providerIDs()
	d.onpremNodes()
	d.charts()
	renewStep, err := d.renewer()
	if err != nil {
		return err
	}
	d.check()
	d.monitoring()
	if d.renews {
		return d.lapsed(tokenStep, renewStep)
	}
	return nil
}

// next starts the next step, named name and titled title, and returns its
// number.
func (d *day0Doc) next(name, title string) int {
	d.step++
	d.p("\n## %d. %s\n%s%s -->\n\n", d.step, title, Day0StepMarker, name)
	return d.step
}

// beforeYouStart writes the title, what the steps do, and the
// prerequisites: tools, versions, network, roles and quota.
func (d *day0Doc) beforeYouStart() {
	c, deadline, sm, src := d.c, d.deadline, d.sm, d.src
	d.p("\n# Day 0: cluster %s from an empty project\n\n", code(c.Name))
	d.p("The steps below, in this order, take cluster %s from a GCP project with nothing in it to a cluster whose autoscaler scales the cloud groups. Run them from the directory that holds the source directory %s and `out/`. No step waits for a later one: the autoscaler's VM, which boots at `terraform apply`, waits for the first join token for up to %s (its join deadline).\n",
		code(c.Name), mdCode(src.Name+"/"), model.FormatDuration(deadline))

	d.p("\n## Before you start\n\n")
	d.p("- Tools: `gcloud`, `terraform`, `helm`, `kubectl` with this cluster's admin kubeconfig, and `ssh` with `sudo` to a control-plane node (it has `kubeadm`): set `%s` to it.\n", Day0ControlPlaneHostVar)
	d.p("- Kubernetes: the control plane runs %s (nodegen supports 1.%d to 1.%d, `docs/versions.md`); the cloud groups' images carry the kubelet and kubeadm of their version.\n",
		c.ControlPlane(), model.OldestSupportedMinor, model.NewestSupportedMinor)
	if images, _ := model.BuildableImages(src.NodeImages()); len(images) > 0 {
		d.p("- Node images: the cloud groups boot from ")
		for i, im := range images {
			if i > 0 {
				d.p(", ")
			}
			d.p("family %s (%s: %s)", code(im.Family), strings.Join(im.Groups, ", "), code(d.out+layout.ImageBuildPath(im.Family)))
		}
		d.p(". Step 2 builds them (`docs/images.md`).\n")
	}
	if n := c.GCP.Network; n != nil && n.Create {
		d.p("- Network: step %d creates network %s and its subnetwork %s in %s (%s), and the firewall rules; the on-prem side routes %s into the VPN and to %s.\n", d.terraformStep(), code(n.Name), code(n.Subnetwork), code(c.GCP.Region), n.SubnetworkRange, n.SubnetworkRange, code(c.ControlPlaneEndpoint))
	} else if n != nil {
		d.p("- Network: subnetwork %s of network %s in %s exists (`cluster.gcp.network.create: true` would make step %d create both), routed to %s over the VPN; the on-prem side routes it into the VPN (step %d creates the firewall rules).\n", code(n.Subnetwork), code(n.Name), code(c.GCP.Region), d.terraformStep(), code(c.ControlPlaneEndpoint), d.terraformStep())
	} else {
		d.p("- Network: subnetwork in %s routed to %s over the VPN (the module's `subnetwork` variable).\n", code(c.GCP.Region), code(c.ControlPlaneEndpoint))
	}
	if len(c.ControlPlaneNodes) == 0 && len(src.DeclaredNodes()) > 0 {
		d.p("- Nodes outside the MIGs: the source declares on-prem nodes but not the control plane's. Declare each control-plane node in `cluster.controlPlaneNodes` (its name, `cpu` and `memoryGiB`), then `nodegen gen`: the autoscaler's caps count every Node, and the last step's `nodegen drift` reports each node outside the MIGs that the source does not declare.\n")
	}
	d.p("- Roles of whoever runs the steps, in project %s: one per resource type the Terraform of `out/terraform` creates (Google's IAM reference lists each role's permissions):\n\n", code(c.GCP.Project))
	d.p("  | role | for | resource types |\n  |---|---|---|\n")
	d.p("  | `roles/serviceusage.serviceUsageAdmin` | enable the APIs (step 1; or have them enabled) | |\n")
	for _, r := range d.roles {
		types := make([]string, len(r.Types))
		for i, t := range r.Types {
			types[i] = "`" + t + "`"
		}
		d.p("  | `%s` | %s | %s |\n", r.Role, mdCell(r.For), strings.Join(types, ", "))
	}
	if st := c.GCP.TerraformState; st != nil {
		// Terraform's gcs backend reads, writes and locks objects under
		// the prefix (Google's IAM reference, storage: Storage Object User
		// holds storage.objects.create, get, list, update and delete).
		d.p("  | `roles/storage.objectUser` | on bucket %s: the root module's state and its lock, under %s (cluster.gcp.terraformState) | |\n", code(st.Bucket), code(c.StatePrefix()+"/"))
	}
	if sm != nil {
		d.p("\n  and, to add the first join token, `roles/secretmanager.secretVersionAdder` on secret %s (in `roles/secretmanager.admin`).\n", code(sm.Secret))
	}
	d.quota()
}

// checkCommand is nodegen check of this source and out/, from the
// directory that holds both: --source only when the source directory is
// not nodegen's default, nodegroups.
func (d *day0Doc) checkCommand() string {
	if d.src.Name == "nodegroups" {
		return "nodegen check"
	}
	return "nodegen check --source " + shellWord(d.src.Name)
}

// shellWord is s as one word of a POSIX shell command: as it is when it
// holds only characters the shell does not interpret, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") == "" && !strings.HasPrefix(s, "-") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// buildableImages are the image families whose build scripts are rendered.
func (d *day0Doc) buildableImages() []model.NodeImage {
	images, _ := model.BuildableImages(d.src.NodeImages())
	return images
}

// terraformStep is the number of the step that applies the module.
func (d *day0Doc) terraformStep() int {
	n := 2
	if len(d.buildableImages()) > 0 {
		n++
	}
	if day0VPN(d.src) != nil {
		n++
	}
	return n
}

// day0VPN is the source's VPN, nil without one.
func day0VPN(src *model.Source) *model.VPN {
	if n := src.Cluster.GCP.Network; n != nil {
		return n.VPN
	}
	return nil
}

// vpnKeys writes the step that makes the VPN tunnels' pre-shared keys,
// which the module reads (a secret without a version fails its plan).
func (d *day0Doc) vpnKeys() {
	v := day0VPN(d.src)
	if v == nil {
		return
	}
	d.next(Day0StepVPNKeys, "Make the VPN's keys")
	d.p("Each tunnel's pre-shared key is a version of a Secret Manager secret the module reads and the on-prem gateway's `install.sh` writes into strongSwan's secrets, both at the version the source pins (`sharedSecret.version`, 1 by default: the version this makes); the plan fails when that version does not exist. Make each, random, through a pipe only (`docs/vpn.md`):\n\n```sh\n")
	for _, t := range v.Tunnels {
		d.p("openssl rand -base64 32 | tr -d '\\n' |\n  gcloud secrets create %s --project=%s --replication-policy=automatic --data-file=-\n", t.SharedSecret.Secret, d.c.GCP.Project)
	}
	d.p("```\n")
}

// vpn writes the step that brings the VPN up: each on-prem gateway
// installed from its rendered files, once the module made the cloud side.
// Without the HA VPN gateway's addresses in the source, the gateways'
// files are not rendered yet: the step says how to get them first.
func (d *day0Doc) vpn() {
	v := day0VPN(d.src)
	if v == nil {
		return
	}
	d.next(Day0StepVPN, "Bring up the VPN")
	d.p("The cloud nodes reach the control plane over the VPN, so it comes up before the first node joins. ")
	if len(v.HAVPNAddresses) != len(v.Tunnels) {
		d.p("The source has no `haVpnAddresses` yet, so the on-prem gateways' files are not rendered: write the addresses Google gave the HA VPN gateway, which this prints, into `cluster.gcp.network.vpn.haVpnAddresses`, then `nodegen gen`:\n\n```sh\n(cd %sterraform/root && terraform output %s)\n```\n\nThen install each gateway as below.\n", d.out, layout.VPNAddressesOutput)
	} else {
		d.p("Install each on-prem gateway from its files (`docs/vpn.md`, Installing an on-prem gateway):\n")
	}
	for _, gw := range v.PeerGateways {
		d.p("\nOn gateway %s (%s), a Debian 12 host, as root, from a checkout that holds %s, with the Google Cloud CLI (not a Debian package) logged in as an account that may read the tunnels' secrets; `install.sh` checks all of this before it changes anything:\n\n%s%s -->\n```sh\napt-get install strongswan-swanctl charon-systemd frr frr-pythontools nftables\nsystemctl enable --now systemd-networkd\nbash %s%s/%s\n```\n",
			code(gw.Name), code(gw.Address), code(d.out), Day0OnHostMarker, gw.Name, d.out, layout.OnpremVPNGatewayDir(gw.Name), layout.OnpremVPNInstallFile)
	}
	d.p("\n`swanctl --list-sas` on a gateway shows its tunnels, `vtysh -c 'show bgp summary'` the BGP sessions.\n")
	cloud := strings.Join(v.CloudPrefixes(d.src.Cluster.GCP.Network), ", ")
	switch {
	case v.SiteBGP != nil:
		d.p("\nThe site's routers (%s) take the cloud prefixes (%s) from the gateways over BGP: on each, a BGP neighbor per gateway at the gateway's address on their LAN, remote AS %d, the cloud prefixes accepted, multipath across the gateways (`docs/vpn.md`, The site's routing). A lost gateway then leaves their routing within 9 s.\n", code(strings.Join(v.SiteBGP.Routers, ", ")), code(cloud), v.OnpremASN)
	case len(v.PeerGateways) > 1:
		d.p("\nThe site routes the cloud prefixes (%s) to the gateways. A static route to each keeps sending a lost gateway its share of the flows for the whole outage: set `cluster.gcp.network.vpn.siteBGP`, or withdraw a gateway's route on a failed check of the path (`docs/vpn.md`, The site's routing).\n", code(cloud))
	default:
		d.p("\nThe site routes the cloud prefixes (%s) to the gateway.\n", code(cloud))
	}
}

// podNetwork writes the step that sets the pod network's MTU and pool,
// with cluster.podNetwork: before the first cloud node joins, since a
// pod keeps the MTU it was created with.
func (d *day0Doc) podNetwork() {
	pn := d.c.PodNetwork
	m := d.c.PodMTU()
	if pn == nil || m == nil {
		return
	}
	d.next(Day0StepPodNetwork, "Set the pod network's MTU and pool")
	d.p("Pod packets cross the VPN encapsulated (%s), and Calico's own choice of MTU reads each node's NIC, never the tunnels: set the pod MTU nodegen computed, %s (`docs/vpn.md`, The pod network), before the first cloud node joins, since a pod keeps the MTU it was created with. ", pn.Encapsulation, code(m.Stated()))
	d.p("With the tigera-operator, apply its `Installation` (the MTU, and the pool %s with %s always on), server-side, so that it merges with an `Installation` the cluster already has (`kubectl diff --server-side -f` shows what changes first; fields another manager set are reported as conflicts, to review):\n\n", code(pn.PodCIDR), code(pn.Encapsulation))
	d.p("```sh\nkubectl apply --server-side --field-manager=nodegen -f %s%s\n```\n\n", d.out, layout.CalicoOperatorPath)
	d.p("With Calico's own manifest instead (no operator), apply %s, set `veth_mtu: \"%d\"` in the `calico-config` ConfigMap, and see `docs/vpn.md` for its default pool. ", code(d.out+layout.CalicoManifestPath), m.MTU)
	d.p("Pods that exist keep their MTU: restart those that talk across the VPN (`kubectl rollout restart`).\n")
}

// apis writes the step that enables the APIs.
func (d *day0Doc) apis() {
	d.next(Day0StepAPIs, "Enable the APIs")
	d.p("```sh\ngcloud services enable %s --project=%s\n```\n", strings.Join(day0APIs(d.src), " "), d.c.GCP.Project)
}

// images writes the step that builds the node images the cloud groups
// boot from, each with its family's script, before the module's instance
// templates name them.
func (d *day0Doc) images() {
	ims := d.buildableImages()
	if len(ims) == 0 {
		return
	}
	d.next(Day0StepImages, "Build the node images")
	d.p("The instance templates of the next step name image families; each family's first image must exist before a VM boots from it. Per family, a builder VM runs the family's script as root, then the family's next image is made from its disk (`docs/images.md`).")
	if n := d.c.GCP.Network; n != nil {
		d.imageBuilderNetwork(n)
	} else {
		d.p(" The builder VMs run on the project's default network, with an external IP (`cluster.gcp.network` is not set).")
	}
	d.p("\n")
	for _, im := range ims {
		d.p("\nFamily %s (%s):\n\n```sh\n%s```\n", code(im.Family), strings.Join(im.Groups, ", "), d.src.ImageBuildCommands(im, d.out+layout.ImageBuildPath(im.Family)))
	}
}

// imageBuilderNetwork writes how the builder VMs reach the network they
// run on and are reached, and the targeted apply of what they need of
// the module before the rest (which needs the images).
func (d *day0Doc) imageBuilderNetwork(n *model.GCPNetwork) {
	c := d.c
	d.p(" The builder VMs run on subnetwork %s without an external IP, tagged %s, and `gcloud compute ssh --tunnel-through-iap` reaches them through Identity-Aware Proxy's TCP forwarding (the VPN is not up yet): the person needs `roles/iap.tunnelResourceAccessor`.", code(n.Subnetwork), code(c.ImageBuilderTag()))
	module := "module." + layout.TerraformModuleCall + "."
	targets := []string{module + gce.TFFirewall + "." + layout.TerraformImageBuilderFirewall}
	needs := fmt.Sprintf("the firewall rule %s that admits SSH to them", code(c.ImageBuilderFirewallName()))
	if n.Egress == model.EgressCloudNAT {
		targets = append(targets, module+gce.TFRouterNAT+"."+layout.TerraformNAT)
		needs += fmt.Sprintf(" and the Cloud NAT %s through which they reach the package repositories", code(c.NATName()))
	} else {
		d.p(" They reach the package repositories only through an egress you provide: with `egress: \"%s\"` nodegen renders none.", model.EgressPrivateGoogleAccess)
	}
	if n.Create {
		needs += fmt.Sprintf(", with the network %s and its subnetwork, which it creates", code(n.Name))
	}
	d.p(" First check %s and apply, of the root module, only what they need: %s (Terraform applies what these depend on with them; the next steps apply the rest):\n\n", code(d.out), needs)
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "%s\n(cd %sterraform/root && terraform init && terraform apply", d.checkCommand(), d.out)
	for _, t := range targets {
		cmd.WriteString(" -target=" + t)
	}
	cmd.WriteString(")")
	d.p("```sh\n%s\n```\n", cmd.String())
}

// terraform writes the step that applies the module.
func (d *day0Doc) terraform() {
	c, out, ca, deadline, sm := d.c, d.out, d.ca, d.deadline, d.sm
	src := d.src
	d.next(Day0StepTerraform, "Check out/ and apply Terraform")
	if n := c.GCP.Network; n != nil {
		state := "local state (terraform.tfstate there; `cluster.gcp.terraformState` keeps it in a bucket)"
		if st := c.GCP.TerraformState; st != nil {
			state = fmt.Sprintf("the state in bucket %s under %s", code(st.Bucket), code(c.StatePrefix()+"/"))
		}
		if n.Create {
			d.p("`nodegen check` proves %s is what the source renders. Then apply the root module %s: the provider with project %s and region %s, %s, the network %s and its subnetwork %s (%s, MTU %d, Private Google Access on), which it creates first, and the module block that names them:\n\n",
				code(out), code(out+"terraform/root/"), code(c.GCP.Project), code(c.GCP.Region), state, code(n.Name), code(n.Subnetwork), n.SubnetworkRange, n.MTU)
		} else {
			d.p("`nodegen check` proves %s is what the source renders. Then apply the root module %s: the provider with project %s and region %s, %s, and the module block with network %s and subnetwork %s, which exist already:\n\n",
				code(out), code(out+"terraform/root/"), code(c.GCP.Project), code(c.GCP.Region), state, code(n.Name), code(n.Subnetwork))
		}
		d.p("```sh\n%s\n(cd %sterraform/root && terraform init && terraform apply)\n```\n\n", d.checkCommand(), out)
		d.p("%s", day0NetworkText(src))
	} else {
		d.p("`nodegen check` proves %s is what the source renders. Then apply the module (the README's Terraform section: a `module` block with `source = \"./%sterraform\"` in your root module, `network` and `subnetwork` set), from your root module's directory:\n\n",
			code(out), out)
		d.p("```sh\n%s\nterraform init\nterraform apply\n```\n\n", d.checkCommand())
	}
	if sm != nil && sm.Terraform == model.JoinSecretCreate {
		d.p("This creates the join token's secret %s without a version, ", code(sm.Secret))
	} else {
		d.p("This ")
	}
	d.p("boots the autoscaler's VM (group %s, a fixed size of %d per zone in %s), and creates the autoscaled groups' MIGs at their minimum size. A VM that finds no token yet retries within its join deadline (%s for the autoscaler's group); its serial console shows `nodegen-join[%s]: ... HTTP 404: the secret has no version yet`.\n",
		code(ca.Name), ca.Max, strings.Join(ca.Zones, ", "), model.FormatDuration(deadline), ca.Name)
}

// firstToken writes the step that makes the first join token and waits
// for the autoscaler's node, and returns its number.
func (d *day0Doc) firstToken() (int, error) {
	c, ca, deadline, sm, src := d.c, d.ca, d.deadline, d.sm, d.src
	tokenStep := d.next(Day0StepFirstToken, "Make the first join token")
	cmd, err := day0FirstTokenCommand(src)
	if err != nil {
		return 0, err
	}
	d.p("Right after `terraform apply`, apply the admission policy that admits onto the autoscaler's nodes only the chart's, nodegen's and the node agents' pods (every pod there can take the autoscaler's Google account), then the cloud join path: what a cloud join token may read and request, and the node CSR approver, which starts once the autoscaler's node is there:\n\n```sh\nkubectl apply -f %s%s\nkubectl apply -f %s%s\n```\n\n", d.out, layout.AutoscalerNodePath, d.out, layout.NodeCSRApproverPath)
	if sm != nil {
		d.p("Then `kubeadm` on a control-plane node makes a bootstrap token (with the cluster's credentials there), and `gcloud` adds it as the first version of the secret. The token goes through the pipe only; it is never written to a file or shown. It is in the cloud join group, `%s`, like the renewer's tokens (`--groups`), never in kubeadm's default group `%s`: the control plane approves a certificate for any node name to a token of that group, and every cloud node's service account can read the secret.\n\n",
			model.CloudBootstrapGroup, model.KubeadmNodeBootstrapGroup)
	} else {
		d.p("Then `kubeadm` on a control-plane node makes a bootstrap token (with the cluster's credentials there), and `gcloud` sets it as project metadata key %s, where the VMs read it; nodegen does not renew it: make a new one the same way before it expires (%s). The token goes through the pipe only; it is never written to a file or shown. It is in the cloud join group, `%s` (`--groups`), never in kubeadm's default group `%s`: the control plane approves a certificate for any node name to a token of that group, and every VM of the project can read project metadata.\n\n",
			code(c.JoinToken.MetadataKey), model.FormatDuration(day0MetadataTokenTTL), model.CloudBootstrapGroup, model.KubeadmNodeBootstrapGroup)
	}
	d.p("%s\n```sh\n%s\n```\n%s\n\n", Day0FirstTokenBegin, cmd, Day0FirstTokenEnd)
	tls := kubeadm.JoinTimeouts(deadline).TLSBootstrap.Duration
	d.p("The waiting VM reads it at its next attempt, and its kubelet asks for a certificate. Nothing approves it yet: the approver runs on that very node. List the autoscaler's VMs, and the undecided node certificate requests with the requester, its groups and the node name each asks for:\n\n")
	d.p("%s\n```sh\n%s\n```\n%s\n\n", Day0ListCSRsBegin, day0ListCSRsCommand(src), Day0ListCSRsEnd)
	d.p("For each VM listed, find the one request that asks for `CN = system:node:<that VM>` and whose groups include `%s`, set `%s` to its name (the first column), and approve it. If two ask for the same name, approve neither and make a new token: someone else holds this one. The kubelet waits %s for its certificate, then the join retries with a new request (list again).\n\n",
		model.CloudBootstrapGroup, Day0NodeCSRVar, model.FormatDuration(tls))
	d.p("%s\n```sh\n%s\n```\n%s\n\n", Day0ApproveCSRBegin, day0ApproveCSRCommand(), Day0ApproveCSREnd)
	d.p("If more than %s passed since `terraform apply`, the VM has given up (`nodegen-join[%s]: ERROR ...`): restart it, and its startup script runs again:\n\n",
		model.FormatDuration(deadline), ca.Name)
	d.p("%s\n```sh\n", Day0IfLateMarker)
	for _, z := range ca.Zones {
		d.p("gcloud compute instance-groups managed rolling-action restart %s --zone=%s --project=%s\n", c.MIGName(ca, z), z, c.GCP.Project)
	}
	d.p("```\n")
	sel := model.GroupLabel + "=" + ca.Name
	d.p("\nWait for the Node of each of the autoscaler's VMs to register, then for them to be Ready:\n\n```sh\n%s\nkubectl wait --for=condition=Ready node -l %s --timeout=10m\n```\n",
		day0ForEachAutoscalerVM(src, "until kubectl get node \"${vm}\" -o name >/dev/null 2>&1; do sleep 10; done"), sel)
	d.p("\nThe autoscaler, the node CSR approver, the node garbage collector and the join-token renewer select `%s=%s`, not `%s`: a kubelet may set `%s` on its own Node, but NodeRestriction refuses it every label under `node-restriction.kubernetes.io/`. The approver gives that label to every later cloud node once the Compute API showed its VM is an instance of its group's MIG; it runs on this node, so give it to the autoscaler's nodes yourself, to the Nodes of the VMs the Compute API lists in the group's MIGs:\n\n",
		model.VerifiedGroupLabel, ca.Name, model.GroupLabel, model.GroupLabel)
	d.p("%s\n```sh\n%s\n```\n%s\n", Day0LabelNodesBegin, day0LabelNodesCommand(src), Day0LabelNodesEnd)

	return tokenStep, nil
}

// providerIDs writes the step that gives the nodes outside a MIG a
// providerID.
func (d *day0Doc) providerIDs() {
	out, src := d.out, d.src
	d.next(Day0StepProviderIDs, "Give every node outside a MIG a providerID")
	d.p("The Cluster Autoscaler's GCE provider fails on a node without a GCE providerID (the on-prem nodes, the control plane) and then scales nothing. Give each such node one that names no MIG, before the autoscaler starts; `spec.providerID` can be set once and never changed.")
	if src.Cluster.SetsOnpremProviderID() {
		d.p(" With the cluster's kubeconfig, once: `--dry-run` first shows what it would set, then the same without it sets it.\n\n```sh\nbash %s%s --dry-run\nbash %s%s\n```\n\nNodes that join later take it from the kubelet's `provider-id` in their kubeadm configuration: see the providerID section of `%sdocs/nodegroups.md`.\n", out, layout.OnpremProviderIDPath, out, layout.OnpremProviderIDPath, out)
	} else {
		d.p(" `cluster.onpremProviderID` is `none`: give them one yourself, as the providerID section of `%sdocs/nodegroups.md` explains.\n", out)
	}
}

// onpremNodes writes the step that gives the declared on-prem nodes their
// group's labels and taints, when an onprem group declares nodes.
func (d *day0Doc) onpremNodes() {
	var groups, joins []string
	for _, g := range d.src.Groups() {
		if g.Kind == model.KindOnPrem && len(g.Nodes) > 0 {
			groups = append(groups, code(g.Name))
			joins = append(joins, code(d.out+layout.OnpremJoinPath(g.Name)))
		}
	}
	if len(groups) == 0 {
		return
	}
	p := d.out + layout.OnpremLabelNodesPath
	d.next(Day0StepOnpremNodes, "Label and taint the on-prem nodes")
	d.p("An on-prem server that kubeadm joined without its group's join script has none of its group's labels and taints, and the pods nodegen places select and tolerate them (the GPU Operator and the workloads on %s). Give the declared nodes of %s theirs, before the charts: `--dry-run` first shows what it would change, then the same without it changes it. It never removes a label or taint; a declared node that has not joined is reported, and the script is run again once it has.\n\nA taint on a server that already runs pods changes what schedules there: the dry run lists each running pod that does not tolerate a taint it would add (`pod <namespace>/<name> does not tolerate <taint>`), other teams' jobs and DaemonSets' pods among them. With `NoSchedule` they keep running, but no pod like them (a job's next pod, a DaemonSet's pod after an update) schedules there again; with `NoExecute` they are evicted. Before the run without `--dry-run`, add the toleration to the workloads that belong there (a DaemonSet that must run on every node tolerates it), and move the others to other nodes.\n\n", strings.Join(groups, ", "), strings.Join(groups, ", "))
	d.p("```sh\nbash %s --dry-run\nbash %s\n```\n", p, p)
	pid := ""
	if d.c.SetsOnpremProviderID() {
		pid = " and its providerID"
	}
	d.p("\nA declared server that has not joined yet joins with its group's join script (%s), which registers it with the group's taints, its labels that a kubelet may set on itself%s; NodeRestriction refuses a kubelet the others (the `node-restriction.kubernetes.io/` prefix, most `kubernetes.io` and `k8s.io` keys), which this step gives. The group's section of `%sdocs/nodegroups.md` shows the commands; run this step again afterwards.\n", strings.Join(joins, ", "), pid, d.out)
}

// charts writes the step that installs the Helm charts.
func (d *day0Doc) charts() {
	c, out, src := d.c, d.out, d.src
	d.next(Day0StepCharts, "Install the charts")
	d.p("The charts at the releases nodegen's values are proven with. The priority expander's ConfigMap, when the expander chain has `priority`, comes from the chart's `expanderPriorities` in `values.yaml`; do not also apply `%scluster-autoscaler/priority-expander.yaml` (for installs without the chart), or Helm refuses to take over the ConfigMap.\n\n", out)
	gpu := len(src.GPUGroups()) > 0
	d.p("```sh\nhelm repo add %s %s\n", model.AutoscalerChartRepoName, model.AutoscalerChartRepo)
	if gpu {
		d.p("helm repo add %s %s\n", GPUOperatorChartRepoName, GPUOperatorChartRepo)
	}
	d.p("helm repo update\n")
	d.p("helm upgrade --install %s %s/%s --version %s \\\n  --namespace %s -f %s%s\n",
		model.AutoscalerHelmRelease, model.AutoscalerChartRepoName, model.AutoscalerChart, model.AutoscalerChartVersion, c.Autoscaler.Namespace, out, layout.AutoscalerValuesPath)
	if gpu {
		d.p("helm upgrade --install %s %s/%s --version %s \\\n  --namespace %s --create-namespace -f %s%s\n",
			GPUOperatorRelease, GPUOperatorChartRepoName, GPUOperatorChart, GPUOperatorChartVersion, GPUOperatorNamespace, out, layout.GPUOperatorValuesPath)
	}
	d.p("```\n")
}

// manifests writes the step that applies nodegen's manifests.
func (d *day0Doc) manifests() {
	out, src := d.out, d.src
	d.next(Day0StepManifests, "Apply nodegen's manifests")
	d.p("```sh\n")
	for _, p := range day0Manifests(src) {
		// The autoscaler node's policy and the node CSR approver's file
		// were applied with the first token (the cloud join path: cloud
		// nodes need it to join; nothing may land on the autoscaler's
		// node before the policy).
		if p == layout.NodeCSRApproverPath || p == layout.AutoscalerNodePath {
			continue
		}
		d.p("kubectl apply -f %s%s\n", out, p)
	}
	d.p("```\n")
}

// day0Manifests lists the manifests the day-0 steps apply, in their
// order: the autoscaler node's admission policy first (nothing else may
// land there), the node CSR approver (cloud joins wait for it), then the
// taint remover, the node garbage collector and the join-token renewer,
// each when it is rendered.
func day0Manifests(src *model.Source) []string {
	var out []string
	for _, p := range []string{layout.AutoscalerNodePath, layout.NodeCSRApproverPath, layout.TaintRemoverPath, layout.NodeLifecyclePath, layout.JoinTokenRenewerPath} {
		if (p == layout.JoinTokenRenewerPath && !src.Cluster.HasJoinTokenRenewer()) || (p == layout.NodeCSRApproverPath && !src.Cluster.HasNodeCSRApprover()) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// renewer writes the step that lets the join token renewer take over,
// when it is rendered, and returns its number (0 without it).
func (d *day0Doc) renewer() (int, error) {
	renews, src := d.renews, d.src
	renewStep := 0
	if renews {
		r := src.Renewal()
		renewStep = d.next(Day0StepRenewer, "Let the renewer take over")
		d.p("Run the renewer once now, on the autoscaler's node that has joined; from then on its CronJob adds a fresh token every %s, and the approver there decides the cloud nodes' certificate requests. The first token, made by kubeadm, is retired %s after this (its version disabled; it expires by its own %s).\n\n",
			model.FormatDuration(r.Period), model.FormatDuration(r.Grace()), model.FormatDuration(r.TTL))
		d.p("```sh\n%s\nkubectl -n %s wait --for=condition=complete job/%s-first --timeout=5m\n```\n",
			joinTokenFirstRunCommand(), model.WorkloadNamespace, model.JoinTokenRenewer.Name())
	}

	return renewStep, nil
}

// check writes the last step: the nodes and drift.
func (d *day0Doc) check() {
	d.next(Day0StepCheck, "Check")
	d.p("```sh\nkubectl get nodes -L %s\nnodegen drift --kubeconfig \"${KUBECONFIG:-$HOME/.kube/config}\"\n```\n", model.GroupLabel)
	d.p("\nThe autoscaler now grows the cloud groups when pods fit them (`nodegen explain -f workload.yaml` says whether and which).\n")
}

// lapsed writes how to recover when renewal lapsed and the autoscaler's
// node is lost: steps tokenStep and renewStep again.
func (d *day0Doc) lapsed(tokenStep, renewStep int) error {
	ca, deadline, src := d.ca, d.deadline, d.src
	d.p("\n## When renewal lapsed and the autoscaler's node is lost\n\n")
	d.p("The renewer runs on the autoscaler's node. If its CronJob has not succeeded for longer than the token's lifetime and that node's VM is then replaced (a MIG recreate, autohealing, a zone outage), the new VM finds only an expired token, and nothing on the cluster can make a new one. Its serial console shows `nodegen-join[%s]: kubeadm join failed ... retrying`. The way back is step %d again (a token of the cloud join group, then approving the new VM's request by hand: no approver runs while that node is lost), then step %d:\n\n", ca.Name, tokenStep, renewStep)
	cmd, err := day0FirstTokenCommand(src)
	if err != nil {
		return err
	}
	d.p("%s\n```sh\n%s\n```\n%s\n\n", Day0FirstTokenBegin, cmd, Day0FirstTokenEnd)
	d.p("Each join attempt reads the newest version again, so the VM asks for a certificate with this token within its deadline (%s after it booted): list and approve its request, and label its Node once it is Ready, as in step %d; if it already gave up, restart it as there. Then run the renewer once as in step %d, and find why it lapsed (`kubectl -n %s get cronjob %s`, its failed Jobs).\n",
		model.FormatDuration(deadline), tokenStep, renewStep, model.WorkloadNamespace, model.JoinTokenRenewer.Name())
	return nil
}

// quota writes the regional quota the groups need at their largest.
func (d *docWriter) quota() {
	c := &d.src.Cluster
	type need struct{ onDemand, spot int }
	gpus := map[string]*need{}
	var vcpus need
	unknownCPU := []string{}
	for _, g := range d.src.CloudGroups() {
		n := g.MaxNodes()
		if g.GPU != nil {
			if gpus[g.GPU.Type] == nil {
				gpus[g.GPU.Type] = &need{}
			}
			if g.Spot {
				gpus[g.GPU.Type].spot += n * g.GPU.Count
			} else {
				gpus[g.GPU.Type].onDemand += n * g.GPU.Count
			}
		}
		cpu := int(g.Shape.CPU)
		if cpu == 0 {
			unknownCPU = append(unknownCPU, g.Name)
			continue
		}
		if g.Spot {
			vcpus.spot += n * cpu
		} else {
			vcpus.onDemand += n * cpu
		}
	}
	d.p("- Quota in region %s, for every group at its largest (`max` per zone × zones):\n", code(c.GCP.Region))
	d.p("  - vCPUs: %d on demand, %d Spot (regional `CPUS` and the machine family's, e.g. `N2_CPUS`; Spot VMs use the preemptible quota where the project has one)", vcpus.onDemand, vcpus.spot)
	if len(unknownCPU) > 0 {
		sort.Strings(unknownCPU)
		d.p(", plus those of %s (a machine type nodegen does not know)", strings.Join(unknownCPU, ", "))
	}
	d.p(".\n")
	types := make([]string, 0, len(gpus))
	for t := range gpus {
		types = append(types, t)
	}
	sort.Strings(types)
	for _, t := range types {
		name := code(t)
		if a, ok := gce.Accelerator(t); ok {
			name = a.Model + " (" + code(t) + ")"
		}
		d.p("  - %s GPUs: %d on demand, %d Spot.\n", name, gpus[t].onDemand, gpus[t].spot)
	}
	if len(types) > 0 {
		total := 0
		for _, t := range types {
			total += gpus[t].onDemand + gpus[t].spot
		}
		d.p("- Quota for the whole project: `GPUS_ALL_REGIONS`, %d GPUs with every GPU group at its largest (it counts the project's GPUs in every region; a new project has 0, and no GPU node starts until a quota request raises it).\n", total)
	}
	d.p("\n  See what the project has: `gcloud compute regions describe %s --project=%s --flatten=quotas --format=\"table(quotas.metric,quotas.limit,quotas.usage)\"`", c.GCP.Region, c.GCP.Project)
	if len(types) > 0 {
		d.p(" and, for `GPUS_ALL_REGIONS`, `gcloud compute project-info describe --project=%s --flatten=quotas --format=\"table(quotas.metric,quotas.limit,quotas.usage)\"`", c.GCP.Project)
	}
	d.p("; a GPU quota of 0 needs a quota request before the first GPU node can start.\n")
}

// day0NetworkText says what network.tf creates and what the on-prem side
// must route, for a source with cluster.gcp.network.
func day0NetworkText(src *model.Source) string {
	c := &src.Cluster
	n := c.GCP.Network
	var b strings.Builder
	fmt.Fprintf(&b, "It also creates the firewall rules the nodes need (`network.tf`): from %s to the kubelet (TCP %d)", strings.Join(n.OnpremRanges, ", "), model.KubeletPort)
	if len(n.CNIPorts) > 0 {
		fmt.Fprintf(&b, " and the CNI (%s), and the CNI between the cloud nodes", strings.Join(n.CNIPorts, ", "))
	}
	b.WriteString("; Google's health checkers reach the autohealed groups' kubelet health port (each group's file)")
	if n.Egress == model.EgressCloudNAT {
		fmt.Fprintf(&b, "; and the Cloud NAT %s through which the nodes, without external IPs, pull images and call Google APIs", code(c.NATName()))
	} else {
		fmt.Fprintf(&b, "; no egress: subnetwork %s must have Private Google Access on, and every image must come from Artifact Registry or a mirror in reach", code(n.Subnetwork))
	}
	fmt.Fprintf(&b, ". The on-prem side must route subnetwork %s's range into the VPN, and allow it to reach %s.\n\n", code(n.Subnetwork), code(c.ControlPlaneEndpoint))
	return b.String()
}

// monitoring writes the section that installs the alerting rules and the
// autoscaler's ServiceMonitor where Prometheus runs: not a numbered step,
// as it waits for a monitoring stack, which nodegen does not install.
func (d *day0Doc) monitoring() {
	out := d.out
	d.p("\n## Monitoring\n\n")
	d.p("Once prometheus-operator runs in the cluster (its CRDs installed), apply the alerting rules and the autoscaler's ServiceMonitor; the Prometheus's `ruleSelector` and `serviceMonitorSelector` must select `app.kubernetes.io/managed-by: nodegen` (docs/monitoring.md in nodegen's repository):\n\n")
	d.p("```sh\nkubectl apply -f %s%s -f %s%s\n```\n\n", out, layout.MonitoringPrometheusRulePath, out, layout.MonitoringServiceMonitorPath)
	d.p("A Prometheus without the operator takes `%s%s` among its `rule_files`, with a scrape job named `%s` for the autoscaler's Service.", out, layout.MonitoringRulesPath, model.AutoscalerFullname)
	d.p(" The cluster's Grafana dashboard is the ConfigMap `%s%s` (label `grafana_dashboard`, which Grafana's dashboard sidecar loads when it watches namespace `%s`), its Prometheus chosen with the dashboard's `datasource` variable.", out, layout.MonitoringDashboardPath, d.c.Autoscaler.Namespace)
	if n := d.c.GCP.Network; n != nil && len(n.MetricsPorts) > 0 {
		d.p(" A Prometheus on the on-prem side reaches the cloud nodes' exporters on %s through the firewall rule `%s` of `%s%s`.", strings.Join(n.MetricsPorts, ", "), "metrics_from_onprem", out, layout.TerraformNetworkPath)
	}
	d.p("\n")
}
