package render_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/render"
	"github.com/nodegen/nodegen/internal/source"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
	"github.com/nodegen/nodegen/internal/validate"
	"github.com/nodegen/nodegen/schema"
)

// The fuzz targets cannot afford a CUE load of a whole source per input.
// fastPair gets the same answer faster: the schema's own constraint on the
// one field (compiled once from schema/nodegen.cue), then the field set in
// a decoded copy of the test's source and the Go rules (validate.Source).
// TestFastPathAgreesWithLoader proves it accepts exactly what the loader
// accepts on every seed.

var fast struct {
	sync.Mutex
	once        sync.Once
	constraints []cue.Value // by structFields index
	base        []byte      // the default testsrc.Spec, decoded, as JSON
	loaded      *model.Source
	err         error
}

func fastInit(t testing.TB) {
	fast.once.Do(func() {
		ctx := cuecontext.New()
		sch := ctx.CompileBytes(schema.Source, cue.Filename(schema.Filename))
		if fast.err = sch.Err(); fast.err != nil {
			return
		}
		def := func(name string) cue.Value { return sch.LookupPath(cue.MakePath(cue.Def(name))) }
		opt := func(v cue.Value, names ...string) cue.Value {
			var sels []cue.Selector
			for _, n := range names {
				sels = append(sels, cue.Str(n).Optional())
			}
			return v.LookupPath(cue.MakePath(sels...))
		}
		group := def("NodeGroup").Unify(ctx.CompileString(`{kind: "gce"}`))
		desc := opt(group, "description")
		fast.constraints = []cue.Value{
			desc, desc, desc,
			opt(group, "image"),
			opt(def("Cluster"), "taintRemover", "image"),
			opt(group, "labels"), // unified with {"example.com/pool": value}
			opt(def("Taint"), "value"),
			opt(def("JoinToken"), "secretManager", "secret"),
			opt(def("JoinToken"), "metadataKey"),
		}
		if len(fast.constraints) != len(structFields)-nameFields {
			fast.err = fmt.Errorf("%d constraints for %d value fields", len(fast.constraints), len(structFields)-nameFields)
			return
		}
		for i, c := range fast.constraints {
			if !c.Exists() {
				fast.err = fmt.Errorf("no schema constraint for %s", structFields[i].name)
				return
			}
		}
		l, err := testsrc.Spec{}.Load(t)
		if err != nil {
			fast.err = err
			return
		}
		fast.loaded = l
		fast.base, fast.err = json.Marshal(l)
	})
	if fast.err != nil {
		t.Fatal(fast.err)
	}
}

// fastSet sets field i of a decoded source to v.
func fastSet(src *model.Source, i int, v string) {
	switch i {
	case 0:
		src.NodeGroups["gpu-t4"].Description = v
	case 1:
		src.NodeGroups["autoscaler"].Description = v
	case 2:
		src.NodeGroups["onprem-gpu"].Description = v
	case 3:
		src.NodeGroups["gpu-t4"].Image = v
	case 4:
		src.Cluster.TaintRemover.Image = v
	case 5:
		src.NodeGroups["gpu-t4"].Labels["example.com/pool"] = v
	case 6:
		src.NodeGroups["gpu-t4"].Taints[0].Value = v
	case 7:
		src.Cluster.JoinToken.SecretManager.Secret = v
	case 8:
		src.Cluster.JoinToken = model.JoinToken{MetadataKey: v}
	case 9:
		prefix := src.Name + "/"
		src.Name = v
		for g, o := range src.Origins {
			src.Origins[g] = v + "/" + strings.TrimPrefix(o, prefix)
		}
		src.ClusterOrigin = v + "/" + strings.TrimPrefix(src.ClusterOrigin, prefix)
	case 10:
		src.Origins["gpu-t4"] = src.Name + "/" + v + ".cue"
	}
}

// nameFields is how many of the last structFields are names (of the
// source directory, of a file) rather than values: no schema constraint
// applies to them, the loader's name rules and the file system do.
const nameFields = 2

// nameAccepted says whether the loader, and the file system before it,
// accept v as the name of a source directory or file.
func nameAccepted(v string) bool {
	return source.CheckName("", v) == nil && v != "" && v != "." && v != ".." && !strings.ContainsAny(v, "/\x00")
}

// fastSource returns the test's source with v in field i, or nil when the
// schema or the Go rules reject it.
func fastSource(t testing.TB, i int, v string) *model.Source {
	fastInit(t)
	if !utf8.ValidString(v) {
		return nil // a CUE string is valid UTF-8
	}
	if i >= len(fast.constraints) {
		if !nameAccepted(v) {
			return nil
		}
		src := &model.Source{}
		if err := json.Unmarshal(fast.base, src); err != nil {
			t.Fatal(err)
		}
		src.Name, src.Origins, src.ClusterOrigin = fast.loaded.Name, maps.Clone(fast.loaded.Origins), fast.loaded.ClusterOrigin
		fastSet(src, i, v)
		src.Resolve()
		return src
	}
	fast.Lock()
	c := fast.constraints[i]
	var x cue.Value
	if i == 5 {
		x = c.Context().Encode(map[string]string{"example.com/pool": v})
	} else {
		x = c.Context().Encode(v)
	}
	err := c.Unify(x).Validate(cue.Concrete(true))
	fast.Unlock()
	if err != nil {
		return nil
	}
	src := &model.Source{}
	if err := json.Unmarshal(fast.base, src); err != nil {
		t.Fatal(err)
	}
	src.Name, src.Origins, src.ClusterOrigin = fast.loaded.Name, fast.loaded.Origins, fast.loaded.ClusterOrigin
	fastSet(src, i, v)
	src.Resolve()
	if len(validate.Source(src, testsrc.NoPos{})) > 0 {
		return nil
	}
	return src
}

// TestFastPathAgreesWithLoader: on every seed in every field, the fuzz
// targets' fast path accepts a value exactly when nodegen's loader does,
// and renders the same files.
func TestFastPathAgreesWithLoader(t *testing.T) {
	accepted := 0
	for i, fld := range structFields {
		for _, v := range append([]string{fld.plain}, structSeeds...) {
			if v == "" {
				continue
			}
			var spec testsrc.Spec
			fld.set(&spec, v)
			loaded, loadErr := spec.Load(t)
			fs := fastSource(t, i, v)
			if (loadErr == nil) != (fs != nil) {
				t.Errorf("%s %q: loader error %v, fast path accepts: %v", fld.name, v, loadErr, fs != nil)
				continue
			}
			if fs == nil {
				continue
			}
			accepted++
			want, err := render.All(loaded)
			if err != nil {
				t.Fatal(err)
			}
			got, err := render.All(fs)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range want.Paths() {
				if string(got[p]) != string(want[p]) {
					t.Errorf("%s %q: %s differs between the loader's source and the fast path's", fld.name, v, p)
				}
			}
		}
	}
	if accepted < len(structFields) {
		t.Errorf("only %d values accepted", accepted)
	}
}
