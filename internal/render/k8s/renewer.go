package k8s

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodegen/nodegen/internal/manifest"
	"github.com/nodegen/nodegen/internal/model"
)

// Join-token renewer names and the bootstrap-token format it writes.
const (
	// joinTokenSkew is how far past creation + ttl the admission policy
	// lets a token's expiration be (the script's and the server's clocks).
	joinTokenSkew = 5 * time.Minute
)

// joinTokenRenewer is the renewer's workload: a Role that may only create
// and delete Secrets in kube-system, and the ValidatingAdmissionPolicy
// that narrows the ServiceAccount to creating bootstrap tokens of the
// right form and lifetime and deleting its own (joinTokenRenewerPolicy).
func joinTokenRenewer(r model.Renewal) scriptWorkload {
	return scriptWorkload{
		Workload: model.JoinTokenRenewer, Script: "join-token-renewer.sh",
		Rules:  []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create", "delete"}}},
		Policy: joinTokenRenewerPolicy(r),
	}
}

// joinTokenRenewerObjects returns the renewer's objects
// (scriptWorkload.objects), with the CronJob pinned to the autoscaler's
// node.
func joinTokenRenewerObjects(src *model.Source) ([]runtime.Object, error) {
	r := src.Renewal()
	schedule, err := model.CronSchedule(r.Period)
	if err != nil {
		return nil, fmt.Errorf("joinToken.renewEvery: %w", err)
	}
	home := src.NodeGroups[src.Cluster.Autoscaler.NodeGroup]
	if home == nil {
		return nil, fmt.Errorf("no node group %q for the autoscaler", src.Cluster.Autoscaler.NodeGroup)
	}
	w := joinTokenRenewer(r)
	pod := w.pod(src.Cluster.TaintRemover.Image, "renewer", home, joinTokenRenewerEnv(src, r))
	pod.TmpInMemory = true // the token passes through files here: memory, not the node's disk
	pod.TunnelLoss = manifest.TunnelLossTolerations(&src.Cluster)
	return w.objects(w.cronJob(cronSchedule{
		Schedule:          schedule,
		TimeZone:          "Etc/UTC",
		StartingDeadline:  int64(r.Period / time.Second),
		SuccessfulHistory: 3,
		FailedHistory:     3,
		BackoffLimit:      2,
		ActiveDeadline:    600,
		LabelJobs:         true,
	}, pod))
}

// joinTokenRenewerEnv returns the renewer container's environment, in
// order (the pod adds HOME).
func joinTokenRenewerEnv(src *model.Source, r model.Renewal) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "PROJECT_ID", Value: src.Cluster.GCP.Project},
		{Name: "SECRET_NAME", Value: src.Cluster.JoinToken.SecretManager.Secret},
		{Name: "TOKEN_TTL_SECONDS", Value: strconv.FormatInt(int64(r.TTL/time.Second), 10)},
		{Name: "GRACE_SECONDS", Value: strconv.FormatInt(int64(r.Grace()/time.Second), 10)},
		{Name: "TOKEN_LABEL_KEY", Value: model.JoinTokenLabelKey},
		{Name: "TOKEN_LABEL_VALUE", Value: model.JoinTokenLabelValue},
		{Name: "TOKEN_GROUP", Value: model.CloudBootstrapGroup},
	}
}

// joinTokenDataKeys are the data keys of a token Secret the renewer creates.
var joinTokenDataKeys = []string{
	"auth-extra-groups", "description", "expiration", "token-id", "token-secret",
	"usage-bootstrap-authentication", "usage-bootstrap-signing",
}

// Lengths of the values the renewer writes: token-id and token-secret,
// and the expiration as YYYY-MM-DDTHH:MM:SSZ.
const (
	tokenIDLen     = 6
	tokenSecretLen = 16
	expirationLen  = 20
)

// celRange is the CEL list literal [0, 1, ..., n-1].
func celRange(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = strconv.Itoa(i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// celBase64Bytes returns a CEL expression for the n bytes that the
// standard base64 string s (a CEL expression) encodes, as a list of ints,
// or [] unless s is exactly the padded encoding of n bytes. The API
// server hands admission a Secret's data as base64 text, and Kubernetes'
// CEL has no base64.decode: the decoding is written out with charAt and
// indexOf (ext.Strings).
func celBase64Bytes(s string, n int) string {
	groups := (n + 2) / 3
	size := 4 * groups
	pad := strings.Repeat("=", 3*groups-n)
	sextet := func(i string) string {
		return `"` + base64Alphabet + `".indexOf(` + s + `.charAt(` + i + `))`
	}
	valid := s + `.size() == ` + strconv.Itoa(size) + ` && ` + s + `.endsWith("` + pad + `") && ` +
		celRange(size-len(pad)) + `.all(i, ` + sextet("i") + ` >= 0)`
	// The value of 3-byte group g; padding counts as zero.
	group := func(g string) string {
		var terms []string
		for k, mul := range []string{"262144", "4096", "64", "1"} {
			i := "4 * " + g + " + " + strconv.Itoa(k)
			terms = append(terms, "("+s+".charAt("+i+`) == "=" ? 0 : `+sextet(i)+") * "+mul)
		}
		return "(" + strings.Join(terms, " + ") + ")"
	}
	g := group("(n / 3)")
	return "((" + valid + ") ? " + celRange(n) + ".map(n, n % 3 == 0 ? " + g + " / 65536 : (n % 3 == 1 ? " + g + " / 256 % 256 : " + g + " % 256)) : [])"
}

// celLowerAlnum is true when every int of the list l is the ASCII code of
// a character in [a-z0-9].
func celLowerAlnum(l string) string {
	return l + `.all(b, (b >= 48 && b <= 57) || (b >= 97 && b <= 122))`
}

// celLowerAlnumText turns such a list into its text.
func celLowerAlnumText(l string) string {
	return l + `.map(b, "0123456789abcdefghijklmnopqrstuvwxyz".charAt(b >= 97 ? b - 87 : b - 48)).join("")`
}

// celExpirationText is the text of the decoded expiration bytes l, or ""
// unless they are YYYY-MM-DDTHH:MM:SSZ.
func celExpirationText(l string) string {
	layout := "0000-00-00T00:00:00Z"
	var digits, seps []string
	for i, c := range layout {
		if c == '0' {
			digits = append(digits, strconv.Itoa(i))
		} else {
			seps = append(seps, fmt.Sprintf("%s[%d] == %d", l, i, c))
		}
	}
	ok := l + ".size() == " + strconv.Itoa(len(layout)) + " && [" + strings.Join(digits, ", ") + "].all(i, " + l + "[i] >= 48 && " + l + "[i] <= 57) && " + strings.Join(seps, " && ")
	text := celRange(len(layout)) + `.map(i, i in [4, 7] ? "-" : (i == 10 ? "T" : (i in [13, 16] ? ":" : (i == 19 ? "Z" : string(` + l + `[i] - 48))))).join("")`
	return "((" + ok + ") ? " + text + ` : "")`
}

// joinTokenRenewerPolicy holds the renewer's ServiceAccount to its job
// whatever RBAC grants it: it may create, in kube-system, only bootstrap
// tokens named after their id, with an id and secret in [a-z0-9] of the
// right lengths, both usages, the kubeadm node group only, the renewer's
// label, and an expiration (YYYY-MM-DDTHH:MM:SSZ) after creation and at
// most ttl + joinTokenSkew after it; and it may delete only Secrets that
// are such tokens with its label. RBAC cannot restrict a Secret's type,
// labels or data.
func joinTokenRenewerPolicy(r model.Renewal) admissionPolicy {
	rule := denyUnless
	onCreate := func(expr string) string { return `request.operation != "CREATE" || ` + expr }
	data := func(key string) string { return `variables.data[?"` + key + `"].orValue("")` }
	b64 := func(v string) string { return strconv.Quote(base64.StdEncoding.EncodeToString([]byte(v))) }
	var keys []string
	for _, k := range joinTokenDataKeys {
		keys = append(keys, strconv.Quote(k))
	}
	keyList := "[" + strings.Join(keys, ", ") + "]"
	maxLife := int64((r.TTL + joinTokenSkew) / time.Second)
	name := `"bootstrap token " + request.namespace + "/" + request.name`
	return admissionPolicy{
		Condition: "join-token-renewer",
		Match:     coreResource("secrets"),
		Variables: []admissionv1.Variable{
			{Name: "secret", Expression: `request.operation == "DELETE" ? oldObject : object`},
			// The values are base64 text, as in the Secret's JSON.
			{Name: "data", Expression: `variables.secret.?data.orValue({})`},
			{Name: "tokenID", Expression: celBase64Bytes(data("token-id"), tokenIDLen)},
			{Name: "tokenSecret", Expression: celBase64Bytes(data("token-secret"), tokenSecretLen)},
			{Name: "expirationBytes", Expression: celBase64Bytes(data("expiration"), expirationLen)},
			{Name: "expiration", Expression: celExpirationText("variables.expirationBytes")},
		},
		Validations: []admissionv1.Validation{
			rule(`request.operation in ["CREATE", "DELETE"] && request.?subResource.orValue("") == ""`,
				`"the join-token renewer may only create and delete bootstrap tokens, not " + request.operation + " " + request.resource.resource + `+
					`(request.?subResource.orValue("") == "" ? "" : "/" + request.subResource)`),
			rule(`request.namespace == "`+model.WorkloadNamespace+`"`,
				`"the join-token renewer may only write Secrets in `+model.WorkloadNamespace+`, not in " + request.namespace`),
			rule(`variables.secret.?type.orValue("") == "`+model.BootstrapTokenType+`"`,
				`"the join-token renewer may only write Secrets of type `+model.BootstrapTokenType+`, not " + variables.secret.?type.orValue("")`),
			rule(`variables.secret.metadata.?labels[?"`+model.JoinTokenLabelKey+`"].orValue("") == "`+model.JoinTokenLabelValue+`"`,
				name+` + " is not labelled `+model.JoinTokenLabelKey+`=`+model.JoinTokenLabelValue+`: the join-token renewer may only write its own tokens"`),
			rule(onCreate(`variables.data.all(k, k in `+keyList+`) && `+keyList+`.all(k, k in variables.data)`),
				name+` + " must have exactly the data keys `+strings.Join(joinTokenDataKeys, ", ")+`"`),
			rule(onCreate(`variables.tokenID.size() == `+strconv.Itoa(tokenIDLen)+` && `+celLowerAlnum("variables.tokenID")+` && `+
				`variables.tokenSecret.size() == `+strconv.Itoa(tokenSecretLen)+` && `+celLowerAlnum("variables.tokenSecret")+` && `+
				`request.name == "bootstrap-token-" + `+celLowerAlnumText("variables.tokenID")),
				name+` + " must be named bootstrap-token-<token-id>, with a token-id of `+strconv.Itoa(tokenIDLen)+` and a token-secret of `+strconv.Itoa(tokenSecretLen)+` characters in [a-z0-9]"`),
			rule(onCreate(data("usage-bootstrap-authentication")+` == `+b64("true")+` && `+data("usage-bootstrap-signing")+` == `+b64("true")+` && `+
				data("auth-extra-groups")+` == `+b64(model.CloudBootstrapGroup)),
				name+` + " must be usable for authentication and signing and in the group `+model.CloudBootstrapGroup+` only"`),
			rule(onCreate(`variables.expiration != "" && `+
				`timestamp(variables.expiration) > timestamp(object.metadata.creationTimestamp) && `+
				fmt.Sprintf(`timestamp(variables.expiration) <= timestamp(object.metadata.creationTimestamp) + duration("%ds")`, maxLife)),
				name+fmt.Sprintf(` + " must expire (YYYY-MM-DDTHH:MM:SSZ) after its creation and at most %s later, not at " + (variables.expiration == "" ? "an unreadable time" : variables.expiration)`, model.FormatDuration(r.TTL+joinTokenSkew))),
		},
	}
}

// joinTokenRenewerFile renders the renewer's manifests.
func joinTokenRenewerFile(src *model.Source, header string) ([]byte, error) {
	objs, err := joinTokenRenewerObjects(src)
	if err != nil {
		return nil, err
	}
	return manifest.MarshalObjects(header, objs)
}
