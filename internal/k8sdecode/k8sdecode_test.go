package k8sdecode

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

const serviceAccount = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: a
  namespace: kube-system
`

const daemonSet = `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: d
spec:
  selector:
    matchLabels:
      app: d
  template:
    metadata:
      labels:
        app: d
    spec:
      containers:
      - name: c
        image: busybox
`

func TestObjects(t *testing.T) {
	stream := "# header\n---\n" + serviceAccount + "---\n" + daemonSet + "---\n# only a comment\n"
	objs, err := Objects([]byte(stream))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2", len(objs))
	}
	if sa, ok := objs[0].(*corev1.ServiceAccount); !ok || sa.Name != "a" || sa.Namespace != "kube-system" {
		t.Errorf("first object: %#v", objs[0])
	}
	if ds, ok := objs[1].(*appsv1.DaemonSet); !ok || ds.Name != "d" || ds.Spec.Template.Spec.Containers[0].Image != "busybox" {
		t.Errorf("second object: %#v", objs[1])
	}
}

// TestObjectsQuotedTypeMeta: a document whose apiVersion and kind
// are not plain top-level scalars is still decoded.
func TestObjectsQuotedTypeMeta(t *testing.T) {
	doc := "apiVersion: \"apps/v1\"\nkind: 'DaemonSet'\n" + daemonSet[strings.Index(daemonSet, "metadata:"):]
	objs, err := Objects([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := objs[0].(*appsv1.DaemonSet); !ok {
		t.Errorf("decoded %T, want a DaemonSet", objs[0])
	}
}

func TestObjectsRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":     serviceAccount + "automountToken: true\n",
		"duplicate field":   serviceAccount + "metadata:\n  name: b\n",
		"field of another":  serviceAccount + "spec:\n  selector: {}\n",
		"unexpected kind":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
		"missing kind":      "apiVersion: v1\nmetadata:\n  name: s\n",
		"duplicate kind":    serviceAccount + "kind: ServiceAccount\n",
		"wrong type":        "apiVersion: v1\nkind: ServiceAccount\nmetadata: []\n",
		"broken yaml":       serviceAccount + "  - [\n",
		"bad doc in stream": daemonSet + "---\n" + serviceAccount + "bogus: 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Objects([]byte(doc)); err == nil {
				t.Errorf("accepted:\n%s", doc)
			}
		})
	}
}

func TestPeekTypeMeta(t *testing.T) {
	for _, tc := range []struct {
		doc              string
		apiVersion, kind string
		ok               bool
	}{
		{serviceAccount, "v1", "ServiceAccount", true},
		{daemonSet, "apps/v1", "DaemonSet", true},
		// Nested kind keys (a roleRef's, a subject's) are not the object's.
		{"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nroleRef:\n  kind: ClusterRole\nsubjects:\n- kind: ServiceAccount\n", "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", true},
		{"apiVersion: \"v1\"\nkind: ServiceAccount\n", "", "", false},
		{"kind: ServiceAccount\n", "", "", false},
		{"apiVersion: v1\nkind: A\nkind: B\n", "", "", false},
	} {
		a, k, ok := peekTypeMeta([]byte(tc.doc))
		if a != tc.apiVersion || k != tc.kind || ok != tc.ok {
			t.Errorf("peekTypeMeta(%q) = %q, %q, %v; want %q, %q, %v", tc.doc, a, k, ok, tc.apiVersion, tc.kind, tc.ok)
		}
	}
}
