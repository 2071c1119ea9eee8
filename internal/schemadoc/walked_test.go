package schemadoc

import (
	"bytes"
	"reflect"
	"testing"
)

// walked.json describes the embedded schema as Walk does: the schema
// it was walked from is this one, and walking it again gives the same.
func TestWalkedCurrent(t *testing.T) {
	got, ok := embedded()
	if !ok {
		t.Fatal("walked.json was not walked from the embedded schema (or does not decode): run go generate ./internal/schemadoc")
	}
	want, err := Walk()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("walked.json differs from the schema walked now: run go generate ./internal/schemadoc")
	}
	if len(got.Fields) == 0 || len(got.Defs) == 0 || len(got.GroupKinds) == 0 {
		t.Fatalf("walked.json holds %d fields, %d definitions, %d kinds", len(got.Fields), len(got.Defs), len(got.GroupKinds))
	}
}

// A walked.json written for another schema is not used.
func TestWalkedOtherSchema(t *testing.T) {
	saved := walked
	t.Cleanup(func() { walked = saved })
	digest := []byte(Digest())
	if !bytes.Contains(walked, digest) {
		t.Fatal("walked.json does not name the embedded schema's digest")
	}
	walked = bytes.Replace(saved, digest, bytes.Repeat([]byte("0"), len(digest)), 1)
	if _, ok := embedded(); ok {
		t.Error("a walked.json of another schema was used")
	}
	walked = []byte("{")
	if _, ok := embedded(); ok {
		t.Error("a walked.json that does not decode was used")
	}
}
