package explain_test

import (
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/explain"
)

func TestDecodeKinds(t *testing.T) {
	in := `# a comment before the first document
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  containers: [{name: c, image: i}]
---
---
# only a comment
---
apiVersion: v1
kind: Service
metadata: {name: svc}
spec: {ports: [{port: 80}]}
---
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: DaemonSet
  metadata: {name: ds}
  spec:
    selector: {matchLabels: {a: b}}
    template:
      metadata: {labels: {a: b}}
      spec: {containers: [{name: c, image: i}]}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: cm}
---
{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
 "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"metadata": {"labels": {"x": "y"}},
   "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "2"}}}]}}}}}}
`
	ws, skipped, err := explain.Decode("w.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.ID()+"@"+w.Pos())
	}
	want := "Pod ns/p@w.yaml:2 DaemonSet ds@w.yaml:19 CronJob cj@w.yaml:31"
	if strings.Join(got, " ") != want {
		t.Errorf("workloads %v, want %s", got, want)
	}
	var sk []string
	for _, s := range skipped {
		sk = append(sk, s.Kind+" "+s.Name+"@"+s.Pos)
	}
	if strings.Join(sk, ", ") != "Service svc@w.yaml:11, ConfigMap cm@w.yaml:27" {
		t.Errorf("skipped %v", sk)
	}
	cj := ws[2].Pod
	if cj.Labels["x"] != "y" || cj.Spec.RestartPolicy != "Never" {
		t.Errorf("CronJob pod template not carried: %+v", cj.ObjectMeta)
	}
	if q := cj.Spec.Containers[0].Resources.Requests["cpu"]; q.String() != "2" {
		t.Errorf("cpu request not defaulted from the limit: %q", q.String())
	}
}

// Bad input is reported at file:line:col of the offending field, every
// document's problems at once.
func TestDecodeErrors(t *testing.T) {
	in := `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    spec:
      toleration: []
      containers:
      - name: c
        imag: x
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: i
    image: j
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: r}
spec:
  replicas: three
---
apiVersion: v1
kind: Pod
metadata: {name: q}
spec: {containers: [{name: c, image: [}
---
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: old}
---
kind: Pod
metadata: {name: nokind}
`
	_, _, err := explain.Decode("w.yaml", []byte(in))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`w.yaml:8:7: Deployment: unknown field "spec.template.spec.toleration"`,
		`w.yaml:11:9: Deployment: unknown field "spec.template.spec.containers[0].imag"`,
		`w.yaml:20: key "image" already set in map`,
		`w.yaml:26:3: Deployment: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32`,
		// go-yaml reports this parser error on the line before the problem.
		`w.yaml:30: did not find expected node content`,
		`w.yaml:33:1: extensions/v1beta1 Deployment: unsupported apiVersion; use apps/v1`,
		`w.yaml:37:1: document: apiVersion and kind are required`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors do not contain %q:\n%v", want, err)
		}
	}
}
