package acphost

import (
	"encoding/json"
	"testing"

	"github.com/acphost/acphost/acp"
)

// FuzzParseElicitationRequest feeds hostile elicitation/create params to
// the decoder: it must return a request or an error, never panic, and a
// decoded form must validate its own defaults without panicking, with
// validated content that validates again to the same.
func FuzzParseElicitationRequest(f *testing.F) {
	f.Add([]byte(`{"mode":"form","message":"m","requestedSchema":` + string(colorSchema) + `}`))
	f.Add([]byte(`{"mode":"url","message":"m","elicitationId":"e","url":"https://example.com/"}`))
	f.Add([]byte(`{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"minItems":1,"default":["x"]},"b":{"type":"string","pattern":"^[a-z]+$","format":"email","minLength":2,"maxLength":1,"default":7},"c":{"type":"number","minimum":1e308,"maximum":-1},"d":{"type":"boolean","default":true},"e":{"type":"string","enum":["p","q"],"enumNames":["P","Q"]}},"required":["a","d"]}}`))
	f.Add([]byte(`{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"integer","default":1e300}}}}`))
	f.Add([]byte(`{"requestId":12,"mode":"url","message":"m","elicitationId":"e","url":"https://example.com/"}`))
	f.Add([]byte(`{"requestId":"12","sessionId":null,"mode":"form","message":"m","requestedSchema":{"properties":{}}}`))
	f.Add([]byte(`{"requestId":null,"sessionId":"s","mode":"form","message":"m","requestedSchema":{"properties":{}}}`))
	f.Add([]byte(`{"sessionId":"s","requestId":1e400,"toolCallId":"t","mode":"_x","message":""}`))
	f.Fuzz(func(t *testing.T, params []byte) {
		req, err := acp.ParseElicitationRequest(params)
		if err != nil {
			return
		}
		switch req.Scope { // exactly one scope, and its members only
		case acp.ScopeSession:
			if req.RequestID != nil {
				t.Fatalf("session scope with requestId %s", req.RequestID)
			}
		case acp.ScopeRequest:
			if req.SessionID != "" || len(req.RequestID) == 0 {
				t.Fatalf("request scope with sessionId %q, requestId %q", req.SessionID, req.RequestID)
			}
		default:
			t.Fatalf("no scope: %q", req.Scope)
		}
		if req.Form == nil {
			return
		}
		content := map[string]any{}
		for _, fld := range req.Form.Fields {
			if fld.Default != nil {
				content[fld.Name] = fld.Default
			} else if len(fld.Choices) > 0 && fld.Kind == acp.FormEnum {
				content[fld.Name] = fld.Choices[0].Value
			}
		}
		out, err := req.Form.Validate(content)
		if err != nil {
			return
		}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("validated content does not encode: %v", err)
		}
		again, err := req.Form.Validate(out)
		if err != nil {
			t.Fatalf("validated content %s fails again: %v", b, err)
		}
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
			t.Fatalf("validation is not idempotent: %s then %s", b, b2)
		}
	})
}
