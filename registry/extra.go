package registry

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"
)

// knownNames caches, per struct type, the JSON names of its fields.
var knownNames sync.Map // reflect.Type → map[string]bool

func jsonNames(t reflect.Type) map[string]bool {
	if m, ok := knownNames.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = true
		}
	}
	knownNames.Store(t, m)
	return m
}

// decodeKeeping decodes the JSON object b into v (a pointer to a struct
// type without JSON methods of its own) and sets *extra to the members
// that are none of v's fields.
func decodeKeeping(b []byte, v any, extra *map[string]json.RawMessage) error {
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	known := jsonNames(reflect.TypeOf(v).Elem())
	for k := range all {
		if known[k] {
			delete(all, k)
		}
	}
	*extra = nil
	if len(all) > 0 {
		*extra = all
	}
	return nil
}

// encodeKeeping encodes v and adds the extra members it does not have.
func encodeKeeping(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, x := range extra {
		if _, ok := all[k]; !ok {
			all[k] = x
		}
	}
	return json.Marshal(all)
}
