package explain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"
)

// Workload is a pod as a manifest asks for it: a Pod, or the pod template
// of a Deployment, StatefulSet, ReplicaSet, Job, CronJob or DaemonSet.
type Workload struct {
	Kind      string // the manifest's kind, e.g. "Deployment"
	Namespace string // as written; empty when the manifest names none
	Name      string
	File      string // the file as given ("-" for stdin)
	Line      int    // line of the document (or List item) in File

	// Pod carries the pod template's labels and spec.
	Pod *corev1.Pod

	// Replicas is how many of the pod the manifest runs at once: 1 for a
	// Pod, spec.replicas of a Deployment, StatefulSet or ReplicaSet (1
	// when unset, as the API server defaults it), a Job's parallelism
	// (at most its completions); 0 for a DaemonSet, one per node.
	Replicas int
}

// ID names the workload: "Deployment web" or "Deployment prod/web".
func (w *Workload) ID() string {
	if w.Namespace != "" {
		return w.Kind + " " + w.Namespace + "/" + w.Name
	}
	return w.Kind + " " + w.Name
}

// Pos is the workload's position, file:line.
func (w *Workload) Pos() string { return w.File + ":" + strconv.Itoa(w.Line) }

// Skipped is a document that holds no pod template (a Service, a ConfigMap…).
type Skipped struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	Pos  string `json:"source"` // file:line
}

// DecodeError is a problem with one document, positioned file:line:col.
type DecodeError struct {
	File         string
	Line, Column int // Column 0 when unknown
	Msg          string
}

func (e *DecodeError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// Decode reads every document of a YAML (or JSON) stream the way kubectl
// splits and converts it, and decodes each strictly into its k8s.io/api
// type: an unknown or duplicate field is an error, positioned at the field.
// Pods, Deployments, StatefulSets, ReplicaSets, DaemonSets (apps/v1), Jobs
// and CronJobs (batch/v1) become workloads, and so do those inside a v1
// List; other kinds are returned as skipped. All errors are returned, joined.
func Decode(file string, data []byte) ([]*Workload, []Skipped, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var (
		out     []*Workload
		skipped []Skipped
		errs    []error
		cursor  int
	)
	for {
		doc, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			errs = append(errs, &DecodeError{File: file, Line: lineAt(data, cursor), Msg: err.Error()})
			break
		}
		// The reader returns the document's lines verbatim: find where it
		// starts to report absolute lines.
		off := cursor
		if i := bytes.Index(data[cursor:], doc); i >= 0 {
			off = cursor + i
			cursor = off + len(doc)
		}
		d := &document{file: file, line: lineAt(data, off), raw: doc}
		ws, sk, err := d.decode()
		out = append(out, ws...)
		skipped = append(skipped, sk...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, skipped, errors.Join(errs...)
}

func lineAt(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// document is one YAML document of a stream.
type document struct {
	file string
	line int // line of the document's first line in file
	raw  []byte
	root *yaml.Node // mapping node of the document, for positions
}

func (d *document) errAt(relLine, col int, format string, args ...any) error {
	return &DecodeError{File: d.file, Line: d.line + relLine - 1, Column: col, Msg: fmt.Sprintf(format, args...)}
}

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// yamlErr positions a YAML syntax error, whose line is relative to the
// document. The line is the YAML library's (the one kubectl shows): for
// some parser errors it is the line before the problem.
func (d *document) yamlErr(err error) error {
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return d.errAt(n, 0, "%s", m[2])
	}
	return d.errAt(1, 0, "%v", err)
}

func (d *document) decode() ([]*Workload, []Skipped, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(d.raw, &n); err != nil {
		return nil, nil, d.yamlErr(err)
	}
	if n.Kind == 0 || (n.Kind == yaml.DocumentNode && len(n.Content) == 0) {
		return nil, nil, nil // empty or comments only
	}
	if n.Kind == yaml.DocumentNode {
		d.root = n.Content[0]
		if d.root.Kind == yaml.ScalarNode && d.root.Tag == "!!null" {
			return nil, nil, nil // "---" followed by nothing
		}
	}
	j, err := sigsyaml.YAMLToJSONStrict(d.raw)
	if err != nil {
		return nil, nil, d.yamlErr(err)
	}
	return d.object(j, "", d.root)
}

// object decodes one object (a document, or an item of a List at path).
func (d *document) object(j []byte, path string, node *yaml.Node) ([]*Workload, []Skipped, error) {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, nil, d.errAt(posOf(node), 0, "%s: not a Kubernetes object: %v", orDoc(path), err)
	}
	line, col := nodePos(node)
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, nil, d.errAt(line, col, "%s: apiVersion and kind are required", orDoc(path))
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		if tm.Kind == "List" {
			return nil, nil, d.errAt(line, col, "%s: List must be apiVersion v1, not %s", orDoc(path), tm.APIVersion)
		}
		if knownKind(tm.Kind) {
			return nil, nil, d.errAt(line, col, "%s %s: unsupported apiVersion; use %s", tm.APIVersion, tm.Kind, wantAPIVersion(tm.Kind))
		}
		var meta struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		_ = json.Unmarshal(j, &meta)
		return nil, []Skipped{{Kind: tm.Kind, Name: meta.Metadata.Name, Pos: fmt.Sprintf("%s:%d", d.file, d.line+line-1)}}, nil
	}
	obj := newObj()
	strictErrs, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, d.fieldErr(node, path, tm.Kind, err.Error())
	}
	if len(strictErrs) > 0 {
		var errs []error
		for _, e := range strictErrs {
			errs = append(errs, d.fieldErr(node, path, tm.Kind, e.Error()))
		}
		return nil, nil, errors.Join(errs...)
	}
	if l, ok := obj.(*corev1.List); ok {
		var (
			ws   []*Workload
			sk   []Skipped
			errs []error
		)
		items := child(node, "items")
		for i, it := range l.Items {
			w, s, err := d.object(it.Raw, fmt.Sprintf("items[%d]", i), index(items, i))
			ws, sk = append(ws, w...), append(sk, s...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		return ws, sk, errors.Join(errs...)
	}
	w := workloadOf(obj)
	w.File, w.Line = d.file, d.line+line-1
	DefaultRequests(&w.Pod.Spec)
	return []*Workload{w}, nil, nil
}

func orDoc(path string) string {
	if path == "" {
		return "document"
	}
	return path
}

var kinds = map[string]func() any{
	"v1/Pod":              func() any { return &corev1.Pod{} },
	"v1/List":             func() any { return &corev1.List{} },
	"apps/v1/Deployment":  func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet": func() any { return &appsv1.StatefulSet{} },
	"apps/v1/ReplicaSet":  func() any { return &appsv1.ReplicaSet{} },
	"apps/v1/DaemonSet":   func() any { return &appsv1.DaemonSet{} },
	"batch/v1/Job":        func() any { return &batchv1.Job{} },
	"batch/v1/CronJob":    func() any { return &batchv1.CronJob{} },
}

func knownKind(kind string) bool { return wantAPIVersion(kind) != "" }

func wantAPIVersion(kind string) string {
	for k := range kinds {
		if strings.HasSuffix(k, "/"+kind) {
			return strings.TrimSuffix(k, "/"+kind)
		}
	}
	return ""
}

// workloadOf returns the pod a decoded object asks for.
func workloadOf(obj any) *Workload {
	pod := func(kind string, meta metav1.ObjectMeta, t corev1.PodTemplateSpec, replicas int) *Workload {
		return &Workload{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Replicas: replicas,
			Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: meta.Namespace, Name: meta.Name, Labels: t.Labels}, Spec: t.Spec}}
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		return &Workload{Kind: "Pod", Namespace: o.Namespace, Name: o.Name, Pod: o, Replicas: 1}
	case *appsv1.Deployment:
		return pod("Deployment", o.ObjectMeta, o.Spec.Template, replicasOf(o.Spec.Replicas))
	case *appsv1.StatefulSet:
		return pod("StatefulSet", o.ObjectMeta, o.Spec.Template, replicasOf(o.Spec.Replicas))
	case *appsv1.ReplicaSet:
		return pod("ReplicaSet", o.ObjectMeta, o.Spec.Template, replicasOf(o.Spec.Replicas))
	case *appsv1.DaemonSet:
		return pod("DaemonSet", o.ObjectMeta, o.Spec.Template, 0)
	case *batchv1.Job:
		return pod("Job", o.ObjectMeta, o.Spec.Template, jobPods(o.Spec))
	case *batchv1.CronJob:
		return pod("CronJob", o.ObjectMeta, o.Spec.JobTemplate.Spec.Template, jobPods(o.Spec.JobTemplate.Spec))
	}
	panic(fmt.Sprintf("explain: unexpected object %T", obj))
}

// replicasOf is a replica count as the API server defaults it: 1 when
// unset (k8s.io/kubernetes, pkg/apis/apps/v1/defaults.go).
func replicasOf(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

// jobPods is how many pods a Job runs at once: its parallelism (1 when
// unset), at most its completions when those are set
// (k8s.io/kubernetes, pkg/apis/batch/v1/defaults.go; the Job controller
// runs no more pods than completions remain).
func jobPods(spec batchv1.JobSpec) int {
	n := replicasOf(spec.Parallelism)
	if spec.Completions != nil && int(*spec.Completions) < n {
		n = int(*spec.Completions)
	}
	return n
}

var (
	strictFieldRE = regexp.MustCompile(`^(?:unknown|duplicate) field "([^"]+)"`)
	typeFieldRE   = regexp.MustCompile(`Go struct field [A-Za-z0-9_]+\.(\S+) of type`)
)

// fieldErr positions a decoding error at the field it names, when it can
// be found in the document.
func (d *document) fieldErr(node *yaml.Node, path, kind, msg string) error {
	field := ""
	if m := strictFieldRE.FindStringSubmatch(msg); m != nil {
		field = m[1]
	} else if m := typeFieldRE.FindStringSubmatch(msg); m != nil {
		field = m[1]
	}
	line, col := nodePos(node)
	if field != "" {
		line, col = nodePos(lookup(node, field))
	}
	where := kind
	if path != "" {
		where = path + " (" + kind + ")"
	}
	return d.errAt(line, col, "%s: %s", where, strings.TrimPrefix(msg, "json: "))
}

// lookup walks a field path such as spec.containers[0].imag as far as it
// exists and returns the deepest node found (the key node of the last
// field found, so the position points at the field's name).
func lookup(n *yaml.Node, path string) *yaml.Node {
	best := n
	for _, seg := range splitPath(path) {
		if seg.index >= 0 {
			n = index(n, seg.index)
		} else {
			k := key(n, seg.name)
			if k == nil {
				return best
			}
			best = k
			n = child(n, seg.name)
		}
		if n == nil {
			return best
		}
		if seg.index >= 0 {
			best = n
		}
	}
	return best
}

type pathSeg struct {
	name  string
	index int // -1 for a field
}

func splitPath(p string) []pathSeg {
	var out []pathSeg
	for _, part := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		out = append(out, pathSeg{name: name, index: -1})
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			out = append(out, pathSeg{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}

func key(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i]
		}
	}
	return nil
}

func child(n *yaml.Node, name string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i+1]
		}
	}
	return nil
}

func index(n *yaml.Node, i int) *yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
		return nil
	}
	return n.Content[i]
}

func nodePos(n *yaml.Node) (line, col int) {
	if n == nil || n.Line == 0 {
		return 1, 0
	}
	return n.Line, n.Column
}

func posOf(n *yaml.Node) int { l, _ := nodePos(n); return l }

// DefaultRequests applies the API server's defaulting of requests to a pod
// spec read from a manifest: a resource a container (or the pod-level
// resources) limits without requesting is requested at its limit. The
// scheduler, and so the autoscaler, sees the defaulted requests: a pod that
// only limits nvidia.com/gpu requests it.
func DefaultRequests(spec *corev1.PodSpec) {
	def := func(r *corev1.ResourceRequirements) {
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; ok {
				continue
			}
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q.DeepCopy()
		}
	}
	for i := range spec.InitContainers {
		def(&spec.InitContainers[i].Resources)
	}
	for i := range spec.Containers {
		def(&spec.Containers[i].Resources)
	}
	if spec.Resources != nil {
		def(spec.Resources)
	}
}
