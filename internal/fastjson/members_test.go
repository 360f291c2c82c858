package fastjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzJSONHelpers checks the one-pass helpers the permission decoder
// reads with against encoding/json, which they replace.
func FuzzJSONHelpers(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x","a":2}`, `{"k\u0061y":null}`, "{\"\xff\":1,\"b\":2}", `{"a":1}x`, `[1,"x",{"y":[]}]`,
		`[]`, `"s\n\u00e9"`, "\"\xff\"", `{"a":1,}`, `[1,]`, ` {"x" : [ true ] } `, `"x" "y"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]json.RawMessage
		wantErr := First(raw) != '{' || json.Unmarshal(raw, &m) != nil
		o, ok := ParseObject(raw)
		if ok == wantErr {
			t.Fatalf("%q: ParseObject ok %v", raw, ok)
		}
		for k, v := range m {
			if got := o.Get(k); string(got) != strings.TrimSpace(string(v)) {
				t.Fatalf("%q: member %q = %q, encoding/json %q", raw, k, got, v)
			}
		}
		for _, mem := range o {
			if _, dup := m[string(mem.Key)]; !dup {
				t.Fatalf("%q: member %q not in encoding/json's map", raw, mem.Key)
			}
		}
		var a []json.RawMessage
		wantErr = First(raw) != '[' || json.Unmarshal(raw, &a) != nil
		arr, ok := ParseArray(raw)
		if ok == wantErr || len(arr) != len(a) {
			t.Fatalf("%q: ParseArray %v, %d elements", raw, ok, len(arr))
		}
		for i := range a {
			if string(arr[i]) != strings.TrimSpace(string(a[i])) {
				t.Fatalf("%q: element %d = %q, encoding/json %q", raw, i, arr[i], a[i])
			}
		}
		var s string
		wantErr = First(raw) != '"' || json.Unmarshal(raw, &s) != nil
		got, ok := ParseString(raw)
		if ok == wantErr || got != s {
			t.Fatalf("%q: ParseString %q %v, encoding/json %q", raw, got, ok, s)
		}
	})
}
