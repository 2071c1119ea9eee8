package schemadoc

import (
	"reflect"
	"testing"
)

// zz_walked.go describes the embedded schema as Walk does: the schema it
// was walked from is this one, and walking it again gives the same.
func TestWalkedCurrent(t *testing.T) {
	got, ok := embedded()
	if !ok {
		t.Fatal("zz_walked.go was not walked from the embedded schema: run go generate ./internal/schemadoc")
	}
	want, err := Walk()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("zz_walked.go differs from the schema walked now: run go generate ./internal/schemadoc")
	}
	if len(got.Fields) == 0 || len(got.Defs) == 0 || len(got.GroupKinds) == 0 {
		t.Fatalf("zz_walked.go holds %d fields, %d definitions, %d kinds", len(got.Fields), len(got.Defs), len(got.GroupKinds))
	}
}

// A description written for another schema, or none, is not used.
func TestWalkedOtherSchema(t *testing.T) {
	saved := walked
	t.Cleanup(func() { walked = saved })
	if walked.Schema != Digest() {
		t.Fatal("zz_walked.go does not name the embedded schema's digest")
	}
	walked.Schema = Digest()[:len(walked.Schema)-1] + "0"
	if walked.Schema == saved.Schema {
		walked.Schema = Digest()[:len(walked.Schema)-1] + "1"
	}
	if _, ok := embedded(); ok {
		t.Error("a description of another schema was used")
	}
	walked = Walked{Schema: saved.Schema}
	if _, ok := embedded(); ok {
		t.Error("a digest without a description was used")
	}
}
