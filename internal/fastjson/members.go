package fastjson

import "encoding/json"

// The functions below read one JSON value that is already split out (a
// member's value, an array element) tolerantly, for records whose shape is
// not trusted: they match members by exact name, take the last of repeated
// members (as JavaScript does), and check JSON types by the first byte, so
// null never passes for a string, object or array. Where a Cursor refuses
// input that encoding/json accepts (invalid UTF-8), they fall back to
// encoding/json, so they accept exactly what it accepts.

// First returns the first byte of raw that is not JSON whitespace, or 0.
func First(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// Null reports whether a member is absent (raw is empty) or null.
func Null(raw json.RawMessage) bool {
	c := First(raw)
	return c == 0 || c == 'n'
}

// Object is a JSON object's members in wire order.
type Object []Member

// Member is one member of an Object.
type Member struct {
	Key []byte
	Val json.RawMessage
}

// Get returns the value of the member named key, the last one when it is
// repeated (as in JavaScript), or nil.
func (o Object) Get(key string) json.RawMessage {
	for i := len(o) - 1; i >= 0; i-- {
		if string(o[i].Key) == key {
			return o[i].Val
		}
	}
	return nil
}

// Only reports whether key is the object's one member name.
func (o Object) Only(key string) bool {
	for _, m := range o {
		if string(m.Key) != key {
			return false
		}
	}
	return len(o) > 0
}

// ParseObject splits an object into its members in one pass over raw. The
// keys and values point into raw. ok is false for anything but one valid
// JSON object.
func ParseObject(raw json.RawMessage) (o Object, ok bool) {
	if First(raw) != '{' {
		return nil, false
	}
	c := Cursor{B: raw}
	o = make(Object, 0, 8)
	ok = c.Object(func(key []byte) bool {
		v, ok := c.Value()
		o = append(o, Member{key, v})
		return ok
	})
	if ok && c.End() {
		return o, true
	}
	// The walker refuses keys with invalid UTF-8, which encoding/json takes.
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	o = o[:0]
	for k, v := range m {
		o = append(o, Member{[]byte(k), v})
	}
	return o, true
}

// ParseArray splits an array into its elements, which point into raw. ok
// is false for anything but one valid JSON array.
func ParseArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	if First(raw) != '[' {
		return nil, false
	}
	c := Cursor{B: raw}
	a := []json.RawMessage{}
	ok := c.Array(func() bool {
		v, ok := c.Value()
		a = append(a, v)
		return ok
	})
	if !ok || !c.End() {
		return nil, false
	}
	return a, true
}

// ParseString decodes a JSON string as encoding/json does. ok is false for
// anything but one valid JSON string.
func ParseString(raw json.RawMessage) (string, bool) {
	if First(raw) != '"' {
		return "", false
	}
	c := Cursor{B: raw}
	if s, ok := c.Str(); ok && c.End() {
		return s, true
	}
	var s string // invalid UTF-8, which encoding/json replaces
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// ParseBool decodes a JSON true or false. ok is false for anything else.
func ParseBool(raw json.RawMessage) (v, ok bool) {
	switch First(raw) {
	case 't', 'f':
		if json.Unmarshal(raw, &v) == nil {
			return v, true
		}
	}
	return false, false
}
