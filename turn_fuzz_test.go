package acphost

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzDecodePromptResult: the one-pass reader of session/prompt's result
// means what encoding/json means, or defers to it.
func FuzzDecodePromptResult(f *testing.F) {
	for _, s := range []string{`{"stopReason":"end_turn"}`, `{"stopReason":"x","_meta":{"a":[1]},"other":2}`, `{"StopReason":"cancelled"}`,
		`{"stopReason":null,"_meta":null}`, `null`, `{"stopReason":7}`, `{}`, `{"stopReason":"a","stopReason":"refusal"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, ok := decodePromptResult(data)
		if !ok {
			return
		}
		var slow promptResult
		if err := json.Unmarshal(data, &slow); err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q: fast %+v, encoding/json %+v (%v)", data, fast, slow, err)
		}
	})
}
