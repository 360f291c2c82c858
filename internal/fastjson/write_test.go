package fastjson

import (
	"encoding/json"
	"testing"
)

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "a\"b\\c", "\n\r\t\x00\x1f\x7f", "<&>", "é😀", "\xff", "a\xc3", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := AppendString([]byte("x"), s)[1:]
		var back string
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%q: %s is not a JSON string: %v", s, out, err)
		}
		want, _ := json.Marshal(s) // encoding/json's reading of s, invalid UTF-8 replaced
		var wantBack string
		_ = json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("%q: wrote %s, which reads %q; encoding/json's reads %q", s, out, back, wantBack)
		}
	})
}
