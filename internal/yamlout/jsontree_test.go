package yamlout

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestJSONTree compares jsonTree with what fromJSON builds with
// encoding/json (UseNumber, whole numbers to int) on the JSON of random
// documents, and on JSON encoding/json writes in other forms than
// Marshal's: jsonTree must give the same tree or leave the document to
// encoding/json.
func TestJSONTree(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	read := 0
	var docs [][]byte
	for range 5000 {
		j, err := json.Marshal(randomTree(r, 0))
		if err != nil {
			continue
		}
		docs = append(docs, j)
	}
	docs = append(docs,
		[]byte(`{"a": 1}`), []byte(`{"a":1} `), []byte(`{"a":1,"a":2}`), []byte(`[1.0]`), []byte(`[1e3]`), []byte(`[01]`),
		[]byte(`[-0]`), []byte(`["\ud83d\ude00"]`), []byte(`["\/"]`), []byte(`["\u00e9\n\t\"\\\b\f"]`), []byte("[\"\xff\"]"),
		[]byte(`[9007199254740993]`), []byte(`[-9007199254740992]`), []byte(`{"a":[{"b":null,"c":true,"d":false}]}`), []byte(`[`), []byte(`{"a"}`))
	for _, j := range docs {
		got, ok := jsonTree(j)
		if !ok {
			continue
		}
		read++
		d := json.NewDecoder(bytes.NewReader(j))
		d.UseNumber()
		var want any
		if err := d.Decode(&want); err != nil {
			t.Fatalf("%s: jsonTree read it, encoding/json: %v", j, err)
		}
		if !yamlValues(want) {
			if isCollection(got) {
				t.Fatalf("%s: jsonTree read %#v, encoding/json's tree has another number", j, got)
			}
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n jsonTree      %#v\n encoding/json %#v", j, got, want)
		}
	}
	if read < len(docs)/2 {
		t.Errorf("jsonTree read %d of %d documents", read, len(docs))
	}
}
