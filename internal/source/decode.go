package source

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"

	"cuelang.org/go/cue"

	"github.com/nodegen/nodegen/internal/model"
)

// decode fills out (a pointer) from v, an evaluated, concrete value, as
// cue.Value.Decode would for nodegen's model types: structs field by field
// after their json tags, maps and slices element by element, pointers
// only for fields that exist.
//
// It exists for speed: Value.Decode and Value.MarshalJSON list the fields
// of every struct in the order they were written, a topological sort that
// costs more than the evaluation itself on a large source. Struct fields
// are looked up by name here instead, so only maps are listed.
func decode(v cue.Value, out any) error {
	rv := reflect.ValueOf(out)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode: need a non-nil pointer, got %T", out)
	}
	return decodeValue(v, rv.Elem())
}

// DecodeError is a value that does not fit its Go type (an integer beyond
// 64 bits), with the value's path from the root of the source.
type DecodeError struct {
	Path []cue.Selector
	Err  error
}

func (e *DecodeError) Error() string { return e.Err.Error() }

// decodeErr wraps err with v's path, unless it already has one.
func decodeErr(v cue.Value, err error) error {
	if _, ok := err.(*DecodeError); ok {
		return err
	}
	return &DecodeError{Path: v.Path().Selectors(), Err: err}
}

func decodeValue(v cue.Value, rv reflect.Value) error {
	switch rv.Kind() {
	case reflect.Pointer:
		p := reflect.New(rv.Type().Elem())
		if err := decodeValue(v, p.Elem()); err != nil {
			return err
		}
		rv.Set(p)
	case reflect.Struct:
		if rv.Type() == durationType {
			// A Go duration, parsed here once for every user of the model.
			s, err := v.String()
			if err == nil {
				err = rv.Addr().Interface().(*model.Duration).UnmarshalText([]byte(s))
			}
			if err != nil {
				return decodeErr(v, err)
			}
			return nil
		}
		for _, f := range structFields(rv.Type()) {
			fv := v.LookupPath(cue.MakePath(cue.Str(f.name)))
			if !fv.Exists() {
				continue
			}
			if err := decodeValue(fv, rv.Field(f.index)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter, err := v.Fields()
		if err != nil {
			return err
		}
		m := reflect.MakeMap(rv.Type())
		for iter.Next() {
			e := reflect.New(rv.Type().Elem()).Elem()
			if err := decodeValue(iter.Value(), e); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(iter.Selector().Unquoted()), e)
		}
		rv.Set(m)
	case reflect.Slice:
		iter, err := v.List()
		if err != nil {
			return err
		}
		s := reflect.MakeSlice(rv.Type(), 0, 4)
		for iter.Next() {
			e := reflect.New(rv.Type().Elem()).Elem()
			if err := decodeValue(iter.Value(), e); err != nil {
				return err
			}
			s = reflect.Append(s, e)
		}
		rv.Set(s)
	case reflect.String:
		s, err := v.String()
		if err != nil {
			return decodeErr(v, err)
		}
		rv.SetString(s)
	case reflect.Int, reflect.Int64:
		i, err := v.Int64()
		if err != nil {
			if n, nerr := v.Int(nil); nerr == nil {
				return decodeErr(v, fmt.Errorf("%s is out of range: at most %d", n, int64(math.MaxInt64)))
			}
			return decodeErr(v, err)
		}
		rv.SetInt(i)
	case reflect.Float64:
		f, err := v.Float64()
		if err != nil {
			return decodeErr(v, err)
		}
		rv.SetFloat(f)
	case reflect.Bool:
		b, err := v.Bool()
		if err != nil {
			return decodeErr(v, err)
		}
		rv.SetBool(b)
	default:
		return fmt.Errorf("decode: unsupported type %s", rv.Type())
	}
	return nil
}

var durationType = reflect.TypeFor[model.Duration]()

type field struct {
	name  string
	index int
}

var fieldCache sync.Map // reflect.Type → []field

// structFields returns the decoded fields of a struct type: those with a
// json name other than "-".
func structFields(t reflect.Type) []field {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]field)
	}
	var out []field
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, field{name: name, index: i})
	}
	fieldCache.Store(t, out)
	return out
}
