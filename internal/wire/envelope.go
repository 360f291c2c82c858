package wire

import (
	"encoding/json"
	"fmt"

	"github.com/acphost/acphost/internal/fastjson"
)

// Message is an incoming request (ID set) or notification (ID nil).
type Message struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// Error is a JSON-RPC error object; Conn.Call returns a peer's as its error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// envelope is the JSON-RPC 2.0 frame, decoded once per message.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// decode reads the envelope of a message as json.Unmarshal would, in one
// pass when it can: the members then point into msg. Anything unusual (a
// member name in another case, invalid UTF-8, invalid JSON) takes
// json.Unmarshal.
func (env *envelope) decode(msg []byte) bool {
	c := fastjson.Cursor{B: msg}
	ok := c.Object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return envelopeString(&c, &env.JSONRPC)
		case "method":
			return envelopeString(&c, &env.Method)
		case "id":
			return envelopeRaw(&c, &env.ID)
		case "params":
			return envelopeRaw(&c, &env.Params)
		case "result":
			return envelopeRaw(&c, &env.Result)
		case "error":
			return envelopeRaw(&c, &env.Error)
		}
		if fastjson.FoldsTo(key, envelopeNames...) {
			return false
		}
		_, ok := c.Value()
		return ok
	})
	if ok && c.End() {
		return true
	}
	var slow envelope // a variable of its own, so env stays on the caller's stack
	ok = json.Unmarshal(msg, &slow) == nil
	*env = slow
	return ok
}

// envelopeString reads a string member (null leaves it as it was), without
// allocating for the version and the frequent methods.
func envelopeString(c *fastjson.Cursor, dst *string) bool {
	if c.Null() {
		return true
	}
	b, ok := c.StrBytes()
	*dst = internString(b)
	return ok
}

func envelopeRaw(c *fastjson.Cursor, dst *json.RawMessage) bool {
	v, ok := c.Value()
	*dst = v
	return ok
}

// internString avoids allocating the strings every message carries.
func internString(b []byte) string {
	switch string(b) {
	case "2.0":
		return "2.0"
	case "session/update":
		return "session/update"
	case "session/request_permission":
		return "session/request_permission"
	}
	return string(b)
}
