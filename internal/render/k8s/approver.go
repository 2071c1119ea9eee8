package k8s

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/gce"
	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// The cloud join path: the renewer's tokens are in model.CloudBootstrapGroup,
// which kubeadm's auto-approval (the ClusterRoleBinding
// kubeadm:node-autoapprove-bootstrap, for
// system:bootstrappers:kubeadm:default-node-token only) does not cover, so
// the csrapproving controller leaves their kubelet client CSRs pending and
// the node CSR approver decides them against the Compute API. The group
// gets, by its own bindings, what kubeadm join needs of a bootstrap token
// (kubernetes/kubernetes v1.37.2, cmd/kubeadm/app):
//   - discovery reads ConfigMap kube-public/cluster-info
//     (discovery/token/token.go: anonymously, which kubeadm's Role
//     kubeadm:bootstrap-signer-clusterinfo allows system:anonymous in
//     phases/bootstraptoken/clusterinfo/clusterinfo.go; bound here too so
//     that joining does not depend on anonymous access);
//   - the kubelet-start phase reads ConfigMaps kube-system/kubeadm-config
//     (util/config/cluster.go; kubeadm's Role kubeadm:nodes-kubeadm-config
//     in phases/uploadconfig/uploadconfig.go) and kube-system/kubelet-config
//     (componentconfigs/kubelet.go; Role kubeadm:kubelet-config in
//     phases/kubelet/config.go), and gets the Node of its name to refuse a
//     Ready one (cmd/phases/join/kubelet.go; ClusterRole kubeadm:get-nodes
//     in phases/bootstraptoken/node/tlsbootstrap.go);
//   - the kubelet's TLS bootstrap creates a CertificateSigningRequest and
//     watches it (ClusterRole system:node-bootstrapper, which kubeadm binds
//     to its group as kubeadm:kubelet-bootstrap in tlsbootstrap.go).
//
// Each of kubeadm's bindings names kubeadm's group only; these name
// model.CloudBootstrapGroup only.
const (
	// cloudJoinRoleName names the Roles, ClusterRole and bindings that let
	// model.CloudBootstrapGroup join.
	cloudJoinRoleName = "nodegen:cloud-node-bootstrapper"
)

// nodeCSRApprover is the approver's workload: a ClusterRole (read CSRs
// and Nodes, update CSR approvals, approve for the kubelet client signer
// only, patch Nodes) and the ValidatingAdmissionPolicy that holds its
// ServiceAccount to deciding kubelet client CSRs of model.CloudBootstrapGroup,
// approving only instance names of the source's MIGs, and setting or
// removing only the verified group label of a Node
// (nodeCSRApproverPolicy).
func nodeCSRApprover(src *model.Source) scriptWorkload {
	return scriptWorkload{
		Workload: model.NodeCSRApprover, Script: "node-csr-approver.sh", ClusterWide: true,
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests/approval"}, Verbs: []string{"update"}},
			{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{model.KubeletClientSigner}, Verbs: []string{"approve"}},
			// list and patch: the verified group label (the policy
			// lets it change nothing else of a Node).
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "patch"}},
		},
		Policy: nodeCSRApproverPolicy(src),
	}
}

// instanceGroupsEnv is the approver's INSTANCE_GROUPS: one line per cloud
// group, "<base instance name> <group> <maxNodeProvisionTime in seconds>
// <zone>...". A VM older than its group's maxNodeProvisionTime is no fresh
// VM: the autoscaler deletes one that has not registered by then. The
// group is the value of model.VerifiedGroupLabel the approver gives the
// group's Nodes.
func instanceGroupsEnv(src *model.Source) string {
	var lines []string
	for _, g := range src.CloudGroups() {
		d := src.Cluster.MaxNodeProvisionTime(g)
		lines = append(lines, src.Cluster.BaseInstanceName(g)+" "+g.Name+" "+strconv.FormatInt(int64(d/time.Second), 10)+" "+strings.Join(g.Zones, " "))
	}
	return strings.Join(lines, "\n")
}

// templatesEnv is the approver's TEMPLATES: one line per cloud group,
// "<base instance name> <instance template name prefix>
// <label>=<value>...": the instance templates of the group are named
// with that prefix (Terraform's name_prefix) and carry those labels
// (gce.Labels), which tell apart groups whose prefixes overlap.
func templatesEnv(src *model.Source) string {
	var lines []string
	for _, g := range src.CloudGroups() {
		labels := gce.Labels(src.Cluster.Name, g.Name, nil)
		lines = append(lines, src.Cluster.BaseInstanceName(g)+" "+src.Cluster.TemplatePrefix(g)+
			" "+gce.LabelCluster+"="+labels[gce.LabelCluster]+" "+gce.LabelNodeGroup+"="+labels[gce.LabelNodeGroup])
	}
	return strings.Join(lines, "\n")
}

// templateMetadataEnv is the approver's TEMPLATE_METADATA: the metadata
// keys of every cloud group's instance template (model.InstanceTemplate),
// space-separated, "<key>=<value>" for a value the template fixes (such
// as enable-guest-attributes=TRUE) and "<key>" for a rendered one (the
// group's kube-env and startup script), which the approver compares with
// the instance template the VM was made from. A fixed value must be made
// of [A-Za-z0-9._-], so that its JSON text is itself in quotes.
func templateMetadataEnv(src *model.Source) (string, error) {
	seen := map[string]bool{}
	var keys []string
	for _, g := range src.CloudGroups() {
		for _, m := range src.InstanceTemplate(g).Properties.Metadata {
			k := m.Key
			if !m.Rendered {
				if !fixedMetadataRE.MatchString(m.Value) {
					return "", fmt.Errorf("node group %s: instance template metadata %s=%q: the node CSR approver compares only values of [A-Za-z0-9._-]", g.Name, m.Key, m.Value)
				}
				k += "=" + m.Value
			}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return strings.Join(keys, " "), nil
}

// fixedMetadataRE matches the fixed metadata values the approver compares
// as JSON text.
var fixedMetadataRE = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// nodeCSRApproverObjects returns the cloud join path's objects: the
// Roles, ClusterRole and bindings that let model.CloudBootstrapGroup join, then
// the approver's (scriptWorkload.objects), with its Deployment on the
// autoscaler's node.
func nodeCSRApproverObjects(src *model.Source) ([]runtime.Object, error) {
	home := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	if home == nil {
		return nil, fmt.Errorf("cluster.autoscaler.nodeGroup: no node group %q", src.Cluster.Autoscaler.NodeGroup)
	}
	w := nodeCSRApprover(src)
	metadata, err := templateMetadataEnv(src)
	if err != nil {
		return nil, err
	}
	objs, err := w.objects(nodeCSRApproverDeployment(w, src, home, metadata))
	if err != nil {
		return nil, err
	}
	return append(cloudJoinRBAC(), objs...), nil
}

// objectMeta is the metadata of a nodegen object.
func objectMeta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// cloudJoinRBAC are the Roles, ClusterRole and bindings that let
// model.CloudBootstrapGroup join: create its CSRs, read its Node, and the
// kubeadm and kubelet configuration and cluster-info a join reads.
func cloudJoinRBAC() []runtime.Object {
	joinLabels := map[string]string{"app.kubernetes.io/name": "nodegen-cloud-join", "app.kubernetes.io/managed-by": "nodegen"}
	meta := objectMeta
	rbac := "rbac.authorization.k8s.io/v1"
	group := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: model.CloudBootstrapGroup}}
	return []runtime.Object{
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "ClusterRole"},
			ObjectMeta: meta(cloudJoinRoleName, "", joinLabels),
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests"}, Verbs: []string{"create", "get", "list", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(cloudJoinRoleName, "", joinLabels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cloudJoinRoleName},
			Subjects:   group,
		},
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "Role"},
			ObjectMeta: meta(cloudJoinRoleName, "kube-system", joinLabels),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{"kubeadm-config", "kubelet-config"}, Verbs: []string{"get"}}},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "RoleBinding"},
			ObjectMeta: meta(cloudJoinRoleName, "kube-system", joinLabels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: cloudJoinRoleName},
			Subjects:   group,
		},
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "Role"},
			ObjectMeta: meta(cloudJoinRoleName, "kube-public", joinLabels),
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{"cluster-info"}, Verbs: []string{"get"}}},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbac, Kind: "RoleBinding"},
			ObjectMeta: meta(cloudJoinRoleName, "kube-public", joinLabels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: cloudJoinRoleName},
			Subjects:   group,
		},
	}
}

// nodeCSRApproverEnv returns the approver container's environment, in
// order (the pod adds HOME).
func nodeCSRApproverEnv(src *model.Source, groups, metadata string) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "PROJECT", Value: src.Cluster.GCP.Project},
		{Name: "CLOUD_BOOTSTRAP_GROUP", Value: model.CloudBootstrapGroup},
		{Name: "INSTANCE_GROUPS", Value: groups},
		{Name: "VERIFIED_LABEL", Value: model.VerifiedGroupLabel},
		{Name: "KEY_ATTRIBUTE", Value: model.KubeletKeyAttribute},
		{Name: "TEMPLATES", Value: templatesEnv(src)},
		{Name: "TEMPLATE_METADATA", Value: metadata},
	}
}

// nodeCSRApproverDeployment runs the approver's loop on the autoscaler's
// node (the one node whose pods reach the metadata server), restarted when
// it exits.
func nodeCSRApproverDeployment(w scriptWorkload, src *model.Source, home *model.NodeGroup, metadata string) *appsv1.Deployment {
	pod := w.pod(src.Cluster.TaintRemover.Image, "approver", home, nodeCSRApproverEnv(src, instanceGroupsEnv(src), metadata))
	pod.TunnelLoss = manifest.TunnelLossTolerations(&src.Cluster)
	// Joins wait on it: evicted last, like the autoscaler's chart does.
	pod.PriorityClass = "system-cluster-critical"
	// Two approvers would decide a CSR twice; the second write fails on
	// the resourceVersion, but the Deployment's Recreate keeps it at one.
	return w.deployment(pod)
}

// celPrintableASCII is the characters 32 to 126, in order: CEL turns a byte
// b of that range into text with celPrintableASCII.charAt(b - 32).
const celPrintableASCII = " !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~"

// derPrefix is how many bytes of a CSR's DER the policy decodes: the
// subject of a kubelet client CSR (organization system:nodes, common name
// system:node:<name of at most 63 characters>) ends within the first 130.
const derPrefix = 150

// maxCSRPEM is the longest PEM, in bytes, of a CSR the policy lets the
// approver approve: it decodes the whole PEM in CEL, and a kubelet's
// client CSR (an ECDSA P-256 key, organization system:nodes, a common
// name system:node:<name of at most 63 characters>) takes under 600.
const maxCSRPEM = 768

// csrPEMPattern is the RE2 pattern of the PEM the policy reads as the
// signer does: the one form pem.EncodeToMemory writes for a CERTIFICATE
// REQUEST without headers. The BEGIN line first, lines of 64 base64
// characters but the last, padding only at its end, the END line, at most
// one newline after it. So there is one BEGIN and one END, no "-----"
// between them, no header (':'), no '\r', space or tab, and nothing after
// the block: encoding/pem's Decode, which the API server's validation and
// kube-controller-manager's signer call (kubernetes/kubernetes v1.37.2,
// pkg/apis/certificates/helpers.go ParseCSR), finds the BEGIN line at the
// first byte and the END line where the policy does, and decodes the
// body the policy decodes.
const csrPEMPattern = "^-----BEGIN CERTIFICATE REQUEST-----\n([A-Za-z0-9+/]{64}\n)*[A-Za-z0-9+/]+={0,2}\n-----END CERTIFICATE REQUEST-----\n?$"

// celSextetsByte is a CEL expression for byte k (an int expression) of
// what the list of base64 sextets l (ints 0 to 63) encodes: byte 0 of a
// group of four sextets is the first six bits and two of the second, and
// so on.
func celSextetsByte(l, k string) string {
	s := func(o int) string { return l + "[4 * (" + k + " / 3) + " + strconv.Itoa(o) + "]" }
	return "(" + k + " % 3 == 0 ? " + s(0) + " * 4 + " + s(1) + " / 16 : (" + k + " % 3 == 1 ? " + s(1) + " % 16 * 16 + " + s(2) + " / 4 : " + s(2) + " % 4 * 64 + " + s(3) + "))"
}

// instanceNamePattern is the RE2 pattern of the instance names of the
// source's cloud groups: a MIG's base instance name, "-" and four
// characters of [a-z0-9] (the MIG's suffix).
func instanceNamePattern(src *model.Source) string {
	var bases []string
	for _, g := range src.CloudGroups() {
		bases = append(bases, regexp.QuoteMeta(src.Cluster.BaseInstanceName(g)))
	}
	return "^(" + strings.Join(bases, "|") + ")-[a-z0-9]{4}$"
}

// nodeCSRApproverPolicy holds the approver's ServiceAccount, on every
// resource of every API group, to one kind of request: an UPDATE of a
// CertificateSigningRequest's approval subresource, for the kubelet client
// signer, of a CSR requested by a member of model.CloudBootstrapGroup that had
// no decision yet, adding exactly one Approved or Denied condition. An
// approval also needs a requester system:bootstrap:<id>, a request whose
// PEM is one CERTIFICATE REQUEST block in the form csrPEMPattern
// describes (so that encoding/pem in the signer reads the block the
// policy reads), at most maxCSRPEM bytes, whose DER spans the block, with
// exactly one subject common name system:node:<name>, <name> an instance
// name of the source's MIGs (instanceNamePattern), and the condition's
// reason model.CSRReasonApproved with a message naming instance <name>. The PEM
// and the DER are read in CEL from the request's base64 (no x509 library
// in the API server's CEL):
// SEQUENCE, SEQUENCE (certificationRequestInfo), INTEGER 0, then the
// subject Name, whose common-name attributes (OID 2.5.4.3) are counted
// within the Name's own length. The one other request it allows is an
// update of a Node that changes nothing but model.VerifiedGroupLabel, whose
// new value, if any, is the group whose instance name the Node's name is,
// on a Node whose providerID names that instance in one of the group's
// zones (approverNodeVariables). So bound to cluster-admin by mistake, the
// ServiceAccount still approves nothing else and writes nothing else (the
// API server does not run policies on policies and their bindings: such an
// account can delete this one).
func nodeCSRApproverPolicy(src *model.Source) admissionPolicy {
	return admissionPolicy{
		Condition:   "node-csr-approver",
		Match:       everyResource,
		Variables:   append(append(approverDecisionVariables(), csrNodeNameVariables()...), approverNodeVariables(src)...),
		Validations: approverValidations(src),
	}
}

// approverDecisionVariables are the policy's CEL variables about the
// request: whether it is a CSR's approval, and the decision it adds.
func approverDecisionVariables() []admissionv1.Variable {
	return []admissionv1.Variable{
		{Name: "approval", Expression: `request.operation == "UPDATE" && request.resource.group == "certificates.k8s.io" && ` +
			`request.resource.resource == "certificatesigningrequests" && request.?subResource.orValue("") == "approval"`},
		{Name: "oldConditions", Expression: `variables.approval ? oldObject.?status.?conditions.orValue([]) : []`},
		{Name: "conditions", Expression: `variables.approval ? object.?status.?conditions.orValue([]) : []`},
		{Name: "decisions", Expression: `variables.conditions.filter(c, c.type in ["Approved", "Denied"])`},
		{Name: "decision", Expression: `variables.decisions.size() == 1 ? variables.decisions[0].type : ""`},
	}
}

// csrNodeNameVariables are the policy's CEL variables that read the node
// name a CSR asks for: its PEM, the DER prefix, the offsets of the
// subject Name, its one common name, and the name after system:node:.
func csrNodeNameVariables() []admissionv1.Variable {
	d := func(i string) string { return "variables.der[" + i + "]" }
	// The offset after a DER header at offset o: tag, then a length of one
	// byte (< 128), or 0x81 or 0x82 and one or two length bytes.
	after := func(o string) string {
		return "(" + d(o+" + 1") + " < 128 ? " + o + " + 2 : (" + d(o+" + 1") + " == 129 ? " + o + " + 3 : " + o + " + 4))"
	}
	return []admissionv1.Variable{
		// The API server hands admission spec.request as the base64 text
		// of the PEM (its JSON form). The whole PEM, at most maxCSRPEM
		// bytes, is decoded (sextets, then bytes) and must be in the one
		// form csrPEMPattern describes; then its body, the DER, holds at
		// least the DER prefix, which is decoded again to be read.
		{Name: "request", Expression: `variables.approval ? object.spec.request : ""`},
		{Name: "pad", Expression: `variables.request.endsWith("==") ? 2 : (variables.request.endsWith("=") ? 1 : 0)`},
		{Name: "sextets", Expression: fmt.Sprintf(`variables.request.size() <= %d && variables.request.size() %% 4 == 0 ? `, 4*((maxCSRPEM+2)/3)) +
			celRange(4*((maxCSRPEM+2)/3)) + `.filter(i, i < variables.request.size()).map(i, "` + base64Alphabet + `".indexOf(variables.request.charAt(i))) : []`},
		{Name: "pemBytes", Expression: `variables.sextets.size() > 0 && variables.sextets.filter(s, s < 0).size() == variables.pad ? ` +
			celRange(maxCSRPEM) + `.filter(k, k < variables.sextets.size() / 4 * 3 - variables.pad).map(k, ` + celSextetsByte("variables.sextets", "k") + `) : []`},
		{Name: "pem", Expression: `variables.pemBytes.all(b, b == 10 || (b >= 32 && b < 127)) ? ` +
			`variables.pemBytes.map(b, b == 10 ? "\n" : ` + strconv.Quote(celPrintableASCII) + `.charAt(b - 32)).join("") : ""`},
		{Name: "canonical", Expression: `variables.pem.matches(` + strconv.Quote(csrPEMPattern) + `)`},
		{Name: "body", Expression: `variables.canonical ? variables.pem.substring(36, variables.pem.lastIndexOf("-----END")).replace("\n", "") : ""`},
		// How many bytes the body holds: the length the DER's outer
		// SEQUENCE must give.
		{Name: "bodyBytes", Expression: `variables.body.size() % 4 == 0 ? variables.body.size() / 4 * 3 - (variables.body.endsWith("==") ? 2 : (variables.body.endsWith("=") ? 1 : 0)) : -1`},
		{Name: "prefix", Expression: fmt.Sprintf(`variables.body.size() >= %d ? variables.body.substring(0, %d) : ""`, 4*derPrefix/3, 4*derPrefix/3)},
		{Name: "der", Expression: celBase64Bytes("variables.prefix", derPrefix)},
		// Where the DER's outer SEQUENCE ends (-1: a length form a CSR of
		// at most maxCSRPEM bytes does not have).
		{Name: "derEnd", Expression: `variables.der.size() == ` + strconv.Itoa(derPrefix) + ` ? (` + d("1") + ` < 128 ? ` + d("1") + ` + 2 : (` + d("1") + ` == 129 ? ` + d("2") + ` + 3 : ` +
			`(` + d("1") + ` == 130 ? ` + d("2") + ` * 256 + ` + d("3") + ` + 4 : -1))) : -1`},
		// Offsets: certificationRequestInfo, its version, the Name.
		{Name: "cri", Expression: `variables.der.size() == ` + strconv.Itoa(derPrefix) + ` && ` + d("0") + ` == 48 && variables.derEnd == variables.bodyBytes ? ` + after("0") + ` : 0`},
		{Name: "version", Expression: `variables.cri > 0 && ` + d("variables.cri") + ` == 48 ? ` + after("variables.cri") + ` : 0`},
		{Name: "nameAt", Expression: `variables.version > 0 && ` + d("variables.version") + ` == 2 && ` + d("variables.version + 1") + ` == 1 && ` + d("variables.version + 2") + ` == 0 && ` +
			d("variables.version + 3") + ` == 48 ? variables.version + 3 : 0`},
		{Name: "nameStart", Expression: `variables.nameAt == 0 ? 0 : (` + d("variables.nameAt + 1") + ` < 128 ? variables.nameAt + 2 : (` + d("variables.nameAt + 1") + ` == 129 ? variables.nameAt + 3 : 0))`},
		{Name: "nameEnd", Expression: `variables.nameStart == 0 ? 0 : variables.nameStart + (` + d("variables.nameAt + 1") + ` < 128 ? ` + d("variables.nameAt + 1") + ` : ` + d("variables.nameAt + 2") + `)`},
		{Name: "cnAt", Expression: `variables.nameStart == 0 || variables.nameEnd > ` + strconv.Itoa(derPrefix) + ` ? [] : ` +
			celRange(derPrefix-7) + `.filter(i, i >= variables.nameStart && i + 7 <= variables.nameEnd && ` +
			d("i") + ` == 6 && ` + d("i + 1") + ` == 3 && ` + d("i + 2") + ` == 85 && ` + d("i + 3") + ` == 4 && ` + d("i + 4") + ` == 3)`},
		{Name: "cnLen", Expression: `variables.cnAt.size() == 1 && ` + d("variables.cnAt[0] + 5") + ` in [12, 19] && ` + d("variables.cnAt[0] + 6") + ` < 128 && ` +
			`variables.cnAt[0] + 7 + ` + d("variables.cnAt[0] + 6") + ` <= variables.nameEnd ? ` + d("variables.cnAt[0] + 6") + ` : -1`},
		{Name: "cnBytes", Expression: `variables.cnLen < 0 ? [] : ` + celRange(derPrefix) + `.filter(i, i >= variables.cnAt[0] + 7 && i < variables.cnAt[0] + 7 + variables.cnLen).map(i, ` + d("i") + `)`},
		{Name: "cn", Expression: `variables.cnLen < 0 || !variables.cnBytes.all(b, b >= 32 && b < 127) ? "" : ` +
			`variables.cnBytes.map(b, ` + strconv.Quote(celPrintableASCII) + `.charAt(b - 32)).join("")`},
		{Name: "node", Expression: `variables.cn.startsWith("system:node:") ? variables.cn.substring(12) : ""`},
	}
}

// approverNodeVariables are the policy's CEL variables about an update of
// a Node: the labels before and after, the verified group label's new
// value, the Node's providerID, the group whose instance name the Node's
// name is (instanceNamePattern, per group; "" for none) and the providerIDs
// an instance of that name has in the group's zones.
func approverNodeVariables(src *model.Source) []admissionv1.Variable {
	// Each group's test wraps the next group's: written front to back,
	// with the closing parentheses at the end, so that the expressions
	// grow linearly with the groups.
	var group, pids strings.Builder
	groups := src.CloudGroups()
	for _, g := range groups {
		match := `request.name.matches(` + strconv.Quote("^"+regexp.QuoteMeta(src.Cluster.BaseInstanceName(g))+"-[a-z0-9]{4}$") + `)`
		group.WriteString(match + ` ? ` + strconv.Quote(g.Name) + ` : (`)
		var ids []string
		for _, z := range g.Zones {
			ids = append(ids, strconv.Quote("gce://"+src.Cluster.GCP.Project+"/"+z+"/")+` + request.name`)
		}
		pids.WriteString(match + ` ? [` + strings.Join(ids, ", ") + `] : (`)
	}
	group.WriteString(`""` + strings.Repeat(")", len(groups)))
	pids.WriteString(`[]` + strings.Repeat(")", len(groups)))
	return []admissionv1.Variable{
		{Name: "nodeUpdate", Expression: `request.operation == "UPDATE" && request.resource.group == "" && request.resource.resource == "nodes" && request.?subResource.orValue("") == ""`},
		{Name: "oldLabels", Expression: `variables.nodeUpdate ? oldObject.metadata.?labels.orValue({}) : {}`},
		{Name: "newLabels", Expression: `variables.nodeUpdate ? object.metadata.?labels.orValue({}) : {}`},
		{Name: "verified", Expression: `variables.newLabels[?` + strconv.Quote(model.VerifiedGroupLabel) + `].orValue("")`},
		{Name: "providerID", Expression: `variables.nodeUpdate ? oldObject.spec.?providerID.orValue("") : ""`},
		{Name: "nameGroup", Expression: group.String()},
		{Name: "nameProviderIDs", Expression: pids.String()},
	}
}

// approverValidations are the policy's rules on the approver's requests:
// only CSR approvals, for the kubelet client signer, of model.CloudBootstrapGroup's
// undecided CSRs, approving only bootstrap-token requests for an instance
// name of src's MIGs, with model.CSRReasonApproved.
func approverValidations(src *model.Source) []admissionv1.Validation {
	rule := denyUnless
	onApproval := func(e string) string { return "!variables.approval || (" + e + ")" }
	onApprove := func(e string) string { return `variables.decision != "Approved" || (` + e + ")" }
	name := `request.name`
	onNode := func(e string) string { return "!variables.nodeUpdate || (" + e + ")" }
	key := strconv.Quote(model.VerifiedGroupLabel)
	var spec []string
	for _, f := range append([]string{"taints"}, nodeSpecFieldsKept...) {
		spec = append(spec, celSame("spec.?"+f))
	}
	return []admissionv1.Validation{
		rule(`variables.approval || variables.nodeUpdate`,
			`"the node CSR approver may only decide certificate signing requests (update certificatesigningrequests/approval) and set `+model.VerifiedGroupLabel+` on nodes (update nodes), not " + `+
				`request.operation + " " + request.resource.resource + (request.?subResource.orValue("") == "" ? "" : "/" + request.subResource)`),
		rule(onNode(`variables.oldLabels.all(k, k == `+key+` || (k in variables.newLabels && variables.newLabels[k] == variables.oldLabels[k])) && `+
			`variables.newLabels.all(k, k == `+key+` || k in variables.oldLabels) && `+
			celSame(`metadata.?annotations.orValue({})`)+` && `+celSame(`metadata.?finalizers.orValue([])`)+` && `+celSame(`metadata.?ownerReferences.orValue([])`)+` && `+
			strings.Join(spec, " && ")),
			`"the node CSR approver may change only the label `+model.VerifiedGroupLabel+` of node " + `+name),
		rule(onNode(`variables.verified == "" || (variables.verified == variables.nameGroup && variables.providerID in variables.nameProviderIDs)`),
			`"node " + `+name+` + " may carry `+model.VerifiedGroupLabel+`=" + (variables.nameGroup == "" ? "<nothing: its name is no instance name of the cluster's MIGs>" : `+
				`variables.nameGroup + " only, with a providerID of " + variables.nameProviderIDs.join(" or ")) + ", not " + variables.verified + " with providerID " + variables.providerID`),
		rule(onApproval(`object.spec.signerName == "`+model.KubeletClientSigner+`"`),
			`"the node CSR approver may only decide CSRs for the signer `+model.KubeletClientSigner+`, not " + object.spec.signerName`),
		rule(onApproval(`oldObject.spec.?groups.orValue([]).exists(g, g == "`+model.CloudBootstrapGroup+`")`),
			`"CSR " + `+name+` + " was not requested by a member of `+model.CloudBootstrapGroup+`: the node CSR approver leaves it alone"`),
		rule(onApproval(`variables.oldConditions.all(c, !(c.type in ["Approved", "Denied"])) && variables.decisions.size() == 1 && `+
			`variables.conditions.size() == variables.oldConditions.size() + 1`),
			`"the node CSR approver may only add one Approved or Denied condition to an undecided CSR, as it did not to " + `+name),
		rule(onApproval(onApprove(`oldObject.spec.?username.orValue("").startsWith("system:bootstrap:")`)),
			`"CSR " + `+name+` + " was requested by " + oldObject.spec.?username.orValue("") + ", not by a bootstrap token: the node CSR approver may not approve it"`),
		rule(onApproval(onApprove(`variables.canonical && variables.cri > 0`)),
			`"CSR " + `+name+` + "'s request is not one PEM CERTIFICATE REQUEST block of at most `+strconv.Itoa(maxCSRPEM)+` bytes in the form pem.EncodeToMemory writes `+
				`(the BEGIN line first, base64 lines of 64, the END line last, nothing after it) holding exactly the DER: `+
				`the node CSR approver may not approve a request the policy cannot read as the signer does"`),
		rule(onApproval(onApprove(`variables.node != "" && variables.node.matches(`+strconv.Quote(instanceNamePattern(src))+`)`)),
			`"CSR " + `+name+` + " asks for " + (variables.cn == "" ? "no single common name the policy can read" : variables.cn) + `+
				`", not for system:node:<an instance of one of the cluster's MIGs>: the node CSR approver may not approve it"`),
		rule(onApproval(onApprove(`variables.decisions[0].?reason.orValue("") == "`+model.CSRReasonApproved+`" && `+
			`variables.decisions[0].?message.orValue("").contains("/instances/" + variables.node + " ")`)),
			`"the node CSR approver's approval of " + `+name+` + " must have reason `+model.CSRReasonApproved+` and name the instance it checked, " + variables.node`),
	}
}

// nodeCSRApproverFile renders the cloud join path's manifests.
func nodeCSRApproverFile(src *model.Source, header string) ([]byte, error) {
	objs, err := nodeCSRApproverObjects(src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}
