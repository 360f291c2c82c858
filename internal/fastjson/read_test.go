package fastjson

import (
	"encoding/json"
	"strings"
	"testing"
)

var samples = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `truex`, `0`, `-0`, `01`, `-`, `1.`, `1.5`, `1e`, `1e+`, `1E-7`,
	`-12.5e10`, `""`, `"a\"b"`, `"\u00e9"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\x"`, `"\u12"`, "\"\x01\"", "\"\xff\"",
	`"unterminated`, `{}`, `{ }`, `{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{1:2}`, `[]`, `[1,]`, `[1 2]`, `[,]`,
	`{"a":[{"b":{"c":[null,true,false,"x",-1.5e3]}}]}`, `{"a":1}x`, ` [ 1 , { "k" : "v" } ] `,
	strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth),
	`{"a":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`,
	`{"a":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
	`[{"a":` + strings.Repeat("{\"b\":", MaxDepth-2) + `1` + strings.Repeat("}", MaxDepth-2) + `}]`,
	`[{"a":` + strings.Repeat("{\"b\":", MaxDepth-1) + `1` + strings.Repeat("}", MaxDepth-1) + `}]`,
}

// TestDepthCountsFromTheTop checks nesting below a member read with Object
// and Value, which must count the levels above it, as encoding/json does.
func TestDepthCountsFromTheTop(t *testing.T) {
	for _, n := range []int{MaxDepth - 1, MaxDepth} {
		doc := []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`)
		c := Cursor{B: doc}
		ok := c.Object(func([]byte) bool { _, ok := c.Value(); return ok })
		if got, want := ok && c.End(), json.Valid(doc); got != want {
			t.Errorf("%d levels below an object: accepted %v, encoding/json %v", n, got, want)
		}
	}
}

// valid reports what Value says of b as a whole document.
func valid(b []byte) bool {
	c := Cursor{B: b}
	_, ok := c.Value()
	return ok && c.End()
}

func TestValueAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%.40q: valid %v, encoding/json says %v", s, got, want)
		}
	}
}

func TestValueReturnsTheValueBytes(t *testing.T) {
	c := Cursor{B: []byte(` {"a": [1, "x"]} , 2`)}
	v, ok := c.Value()
	if !ok || string(v) != `{"a": [1, "x"]}` {
		t.Fatalf("Value = %q, %v", v, ok)
	}
	if !c.Expect(',') {
		t.Fatal("cursor not left after the value")
	}
}

func TestStrAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range samples {
		checkStr(t, []byte(s))
	}
}

// checkStr checks that Str, when it accepts b, decodes it as encoding/json
// does, and that it refuses nothing valid except invalid UTF-8.
func checkStr(t *testing.T, b []byte) {
	c := Cursor{B: b}
	got, ok := c.Str()
	ok = ok && c.End()
	var want string
	err := json.Unmarshal(b, &want)
	switch {
	case ok && err != nil:
		t.Fatalf("%q: Str accepted %q, encoding/json refused: %v", b, got, err)
	case ok && got != want:
		t.Fatalf("%q: Str %q, encoding/json %q", b, got, want)
	case !ok && err == nil && strings.HasPrefix(strings.TrimLeft(string(b), " \t\r\n"), `"`) && !strings.ContainsRune(want, '\uFFFD'):
		t.Fatalf("%q: Str refused, encoding/json decoded %q", b, want)
	}
}

func FuzzValue(f *testing.F) {
	for _, s := range samples[:len(samples)-6] {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Fatalf("%q: valid %v, encoding/json says %v", b, got, want)
		}
		checkStr(t, b)
	})
}
