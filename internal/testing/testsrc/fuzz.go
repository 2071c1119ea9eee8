package testsrc

import (
	"encoding/json"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/validate"
)

// NoPos is a validate.Positioner for sources built in Go.
type NoPos struct{}

func (NoPos) Pos(...cue.Selector) token.Pos    { return token.NoPos }
func (NoPos) KeyPos(...cue.Selector) token.Pos { return token.NoPos }

// FuzzGroup is the group the fuzz targets vary: the example's GPU group.
const FuzzGroup = "gpu-t4"

// FuzzedSource returns a copy of the example whose GPU group has the
// labels and taints encoded in the fuzz input, and reports whether nodegen
// accepts it (validate finds nothing). labels holds one key=value per
// line; taints one key=value:Effect per line; startupKey, when not empty,
// replaces the startup taint's key.
func FuzzedSource(t testing.TB, example []byte, labels, taints, startupKey string, arm bool, gpus uint8) (*model.Source, *model.NodeGroup, bool) {
	src := &model.Source{}
	if err := json.Unmarshal(example, src); err != nil {
		t.Fatal(err)
	}
	src.Name = "nodegroups"
	g := src.NodeGroups[FuzzGroup]
	g.Labels = map[string]string{}
	for _, line := range strings.Split(labels, "\n") {
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, "=")
		g.Labels[k] = v
	}
	g.Taints = nil
	for _, line := range strings.Split(taints, "\n") {
		if line == "" {
			continue
		}
		k, rest, _ := strings.Cut(line, "=")
		v, e, _ := strings.Cut(rest, ":")
		g.Taints = append(g.Taints, model.Taint{Key: k, Value: v, Effect: e})
	}
	g.StartupTaint = nil
	if startupKey != "" {
		g.StartupTaint = &model.Taint{Key: startupKey, Value: "true", Effect: "NoSchedule"}
	}
	g.GPU.Count = []int{1, 2, 4}[int(gpus)%3]
	if arm {
		// The Arm GPU shape: A4X (NVIDIA Grace CPUs) with its 4 GB200s.
		g.Arch, g.MachineType = "arm64", "a4x-highgpu-4g"
		g.GPU = &model.GPU{Type: "nvidia-gb200", Count: 4}
		// An image family of its own, with the same settings: the
		// family's image is built for one architecture.
		if p, f, ok := model.ImageFamily(g.Image); ok {
			g.Image = "projects/" + p + "/global/images/family/" + f + "-arm64"
			if fs, ok := src.Cluster.ImageFamilies[f]; ok {
				src.Cluster.ImageFamilies[f+"-arm64"] = fs
			}
		}
	}
	src.Resolve()
	return src, g, len(validate.Source(src, NoPos{})) == 0
}

// ExampleJSON is the example source, resolved, as JSON: each fuzz input
// starts from a fresh copy of it.
func ExampleJSON(t testing.TB) []byte {
	src, _ := Example(t)
	b, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A GroupSeed is a fuzz input of FuzzedSource.
type GroupSeed struct {
	Labels, Taints, StartupKey string
	Arm                        bool
	GPUs                       uint8
}

// GroupSeeds are valid groups: the fuzzers start from them.
var GroupSeeds = []GroupSeed{
	{"example.com/pool=gpu-burst\nexample.com/location=cloud", "nvidia.com/gpu=present:NoSchedule", "", false, 0},
	{"a=\nb.example.com/Z_z=Value.1", "t=:NoExecute\nexample.com/x=y:PreferNoSchedule", "example.com/gpu-warming", true, 2},
	{"", "", "startup-taint.cluster-autoscaler.kubernetes.io/drivers", false, 1},
	{"node.kubernetes.io/pool=a-b_c.d\nkubelet.kubernetes.io/y=z", "example.com/dedicated=gpu:NoSchedule\nexample.com/spot=:PreferNoSchedule", "ignore-taint.cluster-autoscaler.kubernetes.io/old", false, 0},
}

// AddGroupSeeds adds GroupSeeds to the seed corpus of f.
func AddGroupSeeds(f *testing.F) {
	for _, s := range GroupSeeds {
		f.Add(s.Labels, s.Taints, s.StartupKey, s.Arm, s.GPUs)
	}
}
