package revision_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nodegen/nodegen/internal/layout"
	"github.com/nodegen/nodegen/internal/model"
	"github.com/nodegen/nodegen/internal/revision"
	"github.com/nodegen/nodegen/internal/testing/testsrc"
)

// Every attribute of the instance template changes the revision: the test
// walks model.InstanceTemplate by reflection, so an attribute added to the
// type later is covered without a change here, and one the digest leaves
// out fails it.
func TestTemplateFieldsChangeRevision(t *testing.T) {
	src, files := testsrc.Example(t)
	g := src.NodeGroups["cpu-burst"]
	env, script := files[layout.KubeEnvPath(g.Name)], files[layout.StartupScriptPath(g.Name)]
	of := func(tmpl *model.InstanceTemplate) string {
		t.Helper()
		rev, err := revision.OfTemplate(src, g, tmpl, env, script)
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}

	// One value of the type with every slice, map and pointer filled, so
	// that every leaf exists.
	full := fill(t, reflect.ValueOf(*src.InstanceTemplate(g))).Interface().(model.InstanceTemplate)
	base := of(&full)
	if want, _ := revision.Of(src, g, env, script); of(src.InstanceTemplate(g)) != want {
		t.Fatal("OfTemplate with the group's own template is not Of")
	}
	leaves := 0
	walk(reflect.TypeOf(full), nil, func(path []step) {
		leaves++
		name := pathName(path)
		changed := clone(t, full)
		at(reflect.ValueOf(&changed).Elem(), path, func(v reflect.Value) { mutate(t, name, v) })
		if reflect.DeepEqual(changed, full) {
			t.Fatalf("%s: the mutation changed nothing", name)
		}
		if got := of(&changed); got == base {
			t.Errorf("%s changed, the revision did not (%s): the digest leaves it out", name, got)
		}
	})
	if leaves < 20 {
		t.Fatalf("walked %d leaves of the template, want every attribute (over 20)", leaves)
	}
	t.Logf("%d attributes of the instance template, each changes the revision", leaves)
}

// step is one step of the path to a leaf: a struct field's index, or an
// element (the first of a slice, the only key of a map, a pointer's
// target).
type step struct {
	field int // -1 for an element
	name  string
}

func pathName(path []step) string {
	var b strings.Builder
	for _, s := range path {
		b.WriteString("." + s.name)
	}
	return strings.TrimPrefix(b.String(), ".")
}

// walk calls leaf with the path to every leaf of type t: a string, bool or
// integer, or the key of a map.
func walk(t reflect.Type, path []step, leaf func([]step)) {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			walk(t.Field(i).Type, append(path[:len(path):len(path)], step{i, t.Field(i).Name}), leaf)
		}
	case reflect.Slice, reflect.Pointer:
		walk(t.Elem(), append(path[:len(path):len(path)], step{-1, "[0]"}), leaf)
	case reflect.Map:
		leaf(append(path[:len(path):len(path)], step{-1, "key"}))
		walk(t.Elem(), append(path[:len(path):len(path)], step{-1, "[key]"}), leaf)
	default:
		leaf(path)
	}
}

// at calls f with the leaf of v at path (settable), setting back a map's
// value after f changed it.
func at(v reflect.Value, path []step, f func(reflect.Value)) {
	if len(path) == 0 {
		f(v)
		return
	}
	s := path[0]
	switch v.Kind() {
	case reflect.Struct:
		at(v.Field(s.field), path[1:], f)
	case reflect.Slice:
		at(v.Index(0), path[1:], f)
	case reflect.Pointer:
		at(v.Elem(), path[1:], f)
	case reflect.Map:
		k := v.MapKeys()[0]
		if s.name == "key" {
			nk := reflect.New(k.Type()).Elem()
			nk.Set(k)
			f(nk)
			val := v.MapIndex(k)
			v.SetMapIndex(k, reflect.Value{})
			v.SetMapIndex(nk, val)
			return
		}
		e := reflect.New(v.Type().Elem()).Elem()
		e.Set(v.MapIndex(k))
		at(e, path[1:], f)
		v.SetMapIndex(k, e)
	}
}

// mutate changes the leaf v.
func mutate(t *testing.T, name string, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(v.Int() + 1)
	default:
		t.Fatalf("%s: a leaf of kind %s, which the test cannot change: add it here", name, v.Kind())
	}
}

// fill returns a copy of v with every empty slice given one element,
// every empty map one entry and every nil pointer a value, recursively.
func fill(t *testing.T, v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			out.Field(i).Set(fill(t, v.Field(i)))
		}
	case reflect.Slice:
		n := max(v.Len(), 1)
		out.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			e := reflect.New(v.Type().Elem()).Elem()
			if i < v.Len() {
				e = v.Index(i)
			}
			out.Index(i).Set(fill(t, e))
		}
	case reflect.Map:
		out.Set(reflect.MakeMap(v.Type()))
		if v.Len() == 0 {
			out.SetMapIndex(fill(t, reflect.ValueOf("key")), fill(t, reflect.New(v.Type().Elem()).Elem()))
		}
		for _, k := range v.MapKeys() {
			out.SetMapIndex(k, fill(t, v.MapIndex(k)))
		}
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			e.Elem().Set(fill(t, v.Elem()))
		} else {
			e.Elem().Set(fill(t, e.Elem()))
		}
		out.Set(e)
	default:
		out.Set(v)
	}
	return out
}

// clone is a deep copy of tmpl.
func clone(t *testing.T, tmpl model.InstanceTemplate) model.InstanceTemplate {
	return fill(t, reflect.ValueOf(tmpl)).Interface().(model.InstanceTemplate)
}
