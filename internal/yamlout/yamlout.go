// Package yamlout renders values as YAML byte for byte as
// sigs.k8s.io/yaml.Marshal does, in a fraction of the time.
//
// yaml.Marshal encodes a value as JSON and then parses that JSON with
// go.yaml.in/yaml/v2 into generic maps, lists and scalars, which it encodes
// as YAML. Parsing JSON with a YAML parser is most of the cost of rendering
// a large nodegen source. This package decodes the JSON (jsonTree, or
// encoding/json where jsonTree is not certain to read it alike) into the
// values the YAML parser would produce (string-keyed maps, lists, strings,
// booleans, nulls, whole numbers as int), whose YAML does not
// depend on which parser built them, and writes them as the library's YAML
// encoder (go.yaml.in/yaml/v2) does (emit), or hands them to that encoder
// where emit is not certain to write its bytes. A document holding any
// other number (a fraction, a whole number beyond 2^53) goes the
// library's way.
package yamlout

import (
	"bytes"
	"encoding/json"
	"strconv"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Marshal renders v as sigs.k8s.io/yaml.Marshal(v) does.
func Marshal(v any) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if y, ok, err := fromJSON(j, ""); ok || err != nil {
		return y, err
	}
	return yaml.JSONToYAML(j)
}

// MarshalWithout renders v without the top-level key drop of its JSON
// object, as this does: encode v as JSON, decode that into a
// map[string]any, delete drop, sigs.k8s.io/yaml.Marshal the map.
func MarshalWithout(v any, drop string) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if y, ok, err := fromJSON(j, drop); ok || err != nil {
		return y, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	delete(m, drop)
	return yaml.Marshal(m)
}

// fromJSON renders JSON as YAML the package's way, after removing the
// top-level key drop (when not empty) from an object. ok is false, and
// nothing rendered, when the JSON holds a number other than a whole one of
// at most maxExactInt in magnitude.
func fromJSON(j []byte, drop string) (y []byte, ok bool, err error) {
	if tree, ok := jsonTree(j); ok && isCollection(tree) {
		if m, isMap := tree.(map[string]any); isMap && drop != "" {
			delete(m, drop)
		}
		if y, ok := emit(tree); ok {
			return y, true, nil
		}
		// The library writes the same tree as its own decoding's.
		y, err = yamlv2.Marshal(tree)
		return y, err == nil, err
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var tree any
	if err := d.Decode(&tree); err != nil {
		return nil, false, err
	}
	if m, isMap := tree.(map[string]any); isMap && drop != "" {
		delete(m, drop)
	}
	if !yamlValues(tree) {
		return nil, false, nil
	}
	if y, ok := emit(tree); ok {
		return y, true, nil
	}
	y, err = yamlv2.Marshal(tree)
	return y, err == nil, err
}

func isCollection(tree any) bool {
	switch tree.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// maxExactInt is the largest magnitude of a whole number that survives a
// float64 round trip and that encoding/json writes without an exponent.
const maxExactInt = 1 << 53

// yamlValues reports whether every value in tree is one the YAML parser
// would produce from its JSON in the same form, converting whole numbers
// (json.Number) to int in place.
func yamlValues(tree any) bool {
	switch t := tree.(type) {
	case nil, string, bool:
		return true
	case map[string]any:
		for k, v := range t {
			if n, ok := v.(json.Number); ok {
				i, ok := wholeNumber(n)
				if !ok {
					return false
				}
				t[k] = i
			} else if !yamlValues(v) {
				return false
			}
		}
		return true
	case []any:
		for k, v := range t {
			if n, ok := v.(json.Number); ok {
				i, ok := wholeNumber(n)
				if !ok {
					return false
				}
				t[k] = i
			} else if !yamlValues(v) {
				return false
			}
		}
		return true
	}
	// A bare number at the top: the library's way.
	return false
}

// wholeNumber returns n as an int when it is written as a plain whole
// number of at most maxExactInt in magnitude.
func wholeNumber(n json.Number) (int, bool) {
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i > maxExactInt || i < -maxExactInt {
		return 0, false
	}
	return int(i), true
}
