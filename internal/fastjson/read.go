// Package fastjson reads and writes the JSON of the hot paths without
// reflection: the envelope of every line, the frequent updates and
// permission requests are read in place, members and strings straight from
// the received bytes, skipping what is not needed; prompts and answers are
// appended to a buffer.
//
// Every Cursor method that consumes a value validates it as encoding/json would,
// except that strings with invalid UTF-8 are refused (encoding/json replaces
// the bad bytes with U+FFFD): a caller that needs that behaviour falls back
// to encoding/json when a method reports false.
package fastjson

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// MaxDepth bounds the nesting of objects and arrays a Cursor accepts, as
// encoding/json does.
const MaxDepth = 10000

// Cursor is a position in a JSON text.
type Cursor struct {
	B     []byte
	I     int
	depth int // objects and arrays open around I
}

// open consumes the first byte of an object or array, refusing nesting
// deeper than MaxDepth; close must follow.
func (c *Cursor) open(first byte) bool {
	if !c.Expect(first) || c.depth >= MaxDepth {
		return false
	}
	c.depth++
	return true
}

func (c *Cursor) close(ok bool) bool {
	c.depth--
	return ok
}

// WS skips whitespace.
func (c *Cursor) WS() {
	for c.I < len(c.B) {
		switch c.B[c.I] {
		case ' ', '\t', '\n', '\r':
			c.I++
		default:
			return
		}
	}
}

// Expect consumes ch after optional whitespace, reporting whether it was
// there.
func (c *Cursor) Expect(ch byte) bool {
	c.WS()
	if c.I < len(c.B) && c.B[c.I] == ch {
		c.I++
		return true
	}
	return false
}

// End reports whether only whitespace is left.
func (c *Cursor) End() bool {
	c.WS()
	return c.I == len(c.B)
}

// Null consumes a null literal, reporting whether there was one.
func (c *Cursor) Null() bool {
	c.WS()
	return c.I < len(c.B) && c.B[c.I] == 'n' && c.literal("null")
}

// Object walks {"key": value, ...}, calling member to consume each value.
// The key is a slice of B (stable while B is) unless it had escapes (then
// it is a copy).
func (c *Cursor) Object(member func(key []byte) bool) bool {
	return c.open('{') && c.close(c.members(member))
}

func (c *Cursor) members(member func(key []byte) bool) bool {
	if c.Expect('}') {
		return true
	}
	for {
		key, ok := c.StrBytes()
		if !ok || !c.Expect(':') || !member(key) {
			return false
		}
		if c.Expect('}') {
			return true
		}
		if !c.Expect(',') {
			return false
		}
	}
}

// Array walks [value, ...], calling elem to consume each value.
func (c *Cursor) Array(elem func() bool) bool {
	return c.open('[') && c.close(c.elements(elem))
}

func (c *Cursor) elements(elem func() bool) bool {
	if c.Expect(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if c.Expect(']') {
			return true
		}
		if !c.Expect(',') {
			return false
		}
	}
}

// Str reads a JSON string. Escapes are decoded exactly as encoding/json
// does; a string with invalid UTF-8 or a bad escape is refused (ok false).
func (c *Cursor) Str() (string, bool) {
	raw, escaped, ok := c.scanStr()
	switch {
	case !ok:
		return "", false
	case !escaped:
		return string(raw), true
	}
	return unescape(raw)
}

// StrBytes is Str without the copy: unless the string had escapes, the
// bytes are those of B.
func (c *Cursor) StrBytes() ([]byte, bool) {
	raw, escaped, ok := c.scanStr()
	if !ok || !escaped {
		return raw, ok
	}
	s, ok := unescape(raw)
	return []byte(s), ok
}

// StrShared is Str without the copy for a string without escapes: it is
// then a string of B's own bytes (unsafe: only for a B that is never
// written again); with escapes, the unescaped copy. One scan either way.
func (c *Cursor) StrShared() (string, bool) {
	raw, escaped, ok := c.scanStr()
	switch {
	case !ok:
		return "", false
	case escaped:
		return unescape(raw)
	case len(raw) == 0:
		return "", true
	}
	return unsafe.String(&raw[0], len(raw)), true
}

// scanStr passes a string, returning what is between its quotes; it checks
// for control bytes and invalid UTF-8 (escapes are checked by unescape).
func (c *Cursor) scanStr() (raw []byte, escaped, ok bool) {
	if !c.Expect('"') {
		return nil, false, false
	}
	start := c.I
	for i := start; i < len(c.B); i++ {
		switch ch := c.B[i]; {
		case ch == '"':
			raw = c.B[start:i]
			if !utf8.Valid(raw) { // escapes are ASCII: they cannot make it valid
				return nil, false, false
			}
			c.I = i + 1
			return raw, escaped, true
		case ch == '\\':
			escaped = true
			i++
		case ch < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

// unescape decodes the escapes of a string's raw content, in one
// allocation.
func unescape(raw []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(raw)) // decoding never lengthens
	for i := 0; i < len(raw); {
		j := i
		for j < len(raw) && raw[j] != '\\' {
			j++
		}
		b.Write(raw[i:j])
		if j == len(raw) {
			break
		}
		if j+1 >= len(raw) {
			return "", false
		}
		i = j + 2
		switch e := raw[j+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, n, ok := unicodeEscape(raw, j)
			if !ok {
				return "", false
			}
			b.WriteRune(r)
			i = j + n
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unicodeEscape decodes \uXXXX at i (with a following low surrogate when
// it is a high one), as encoding/json does: an unpaired surrogate becomes
// U+FFFD. n is the number of bytes consumed.
func unicodeEscape(b []byte, i int) (r rune, n int, ok bool) {
	r, ok = hex4(b, i+2)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
		if r2, ok := hex4(b, i+8); ok {
			if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
				return dec, 12, true
			}
		}
	}
	return unicode.ReplacementChar, 6, true
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, ch := range b[at : at+4] {
		switch {
		case '0' <= ch && ch <= '9':
			ch -= '0'
		case 'a' <= ch && ch <= 'f':
			ch = ch - 'a' + 10
		case 'A' <= ch && ch <= 'F':
			ch = ch - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(ch)
	}
	return r, true
}

// Value skips one value, validating it (strings may hold any bytes, as in
// encoding/json), and returns its bytes without surrounding whitespace.
func (c *Cursor) Value() ([]byte, bool) {
	c.WS()
	start := c.I
	if !c.skip() {
		return nil, false
	}
	return c.B[start:c.I], true
}

func (c *Cursor) skip() bool {
	c.WS()
	if c.I >= len(c.B) {
		return false
	}
	switch ch := c.B[c.I]; {
	case ch == '{':
		return c.open('{') && c.close(c.skipMembers())
	case ch == '[':
		return c.Array(c.skip)
	case ch == '"':
		return c.skipString()
	case ch == 't':
		return c.literal("true")
	case ch == 'f':
		return c.literal("false")
	case ch == 'n':
		return c.literal("null")
	case ch == '-' || ('0' <= ch && ch <= '9'):
		return c.number()
	}
	return false
}

// skipMembers is members for skip: keys are passed, not decoded, so that
// any bytes are accepted in them, as in encoding/json.
func (c *Cursor) skipMembers() bool {
	if c.Expect('}') {
		return true
	}
	for {
		c.WS()
		if c.I >= len(c.B) || c.B[c.I] != '"' || !c.skipString() || !c.Expect(':') || !c.skip() {
			return false
		}
		if c.Expect('}') {
			return true
		}
		if !c.Expect(',') {
			return false
		}
	}
}

func (c *Cursor) literal(word string) bool {
	if len(c.B)-c.I < len(word) || string(c.B[c.I:c.I+len(word)]) != word {
		return false
	}
	c.I += len(word)
	return true
}

// skipString passes a string, checking its escapes and control bytes.
func (c *Cursor) skipString() bool {
	for i := c.I + 1; i < len(c.B); i++ {
		switch ch := c.B[i]; {
		case ch == '"':
			c.I = i + 1
			return true
		case ch < 0x20:
			return false
		case ch == '\\':
			if i+1 >= len(c.B) {
				return false
			}
			switch c.B[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(c.B, i+2); !ok {
					return false
				}
				i += 5
			default:
				return false
			}
		}
	}
	return false
}

// number passes -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (c *Cursor) number() bool {
	i := c.I
	if i < len(c.B) && c.B[i] == '-' {
		i++
	}
	switch {
	case i < len(c.B) && c.B[i] == '0':
		i++
	case i < len(c.B) && '1' <= c.B[i] && c.B[i] <= '9':
		i = c.digits(i)
	default:
		return false
	}
	if i < len(c.B) && c.B[i] == '.' {
		j := c.digits(i + 1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(c.B) && (c.B[i] == 'e' || c.B[i] == 'E') {
		i++
		if i < len(c.B) && (c.B[i] == '+' || c.B[i] == '-') {
			i++
		}
		j := c.digits(i)
		if j == i {
			return false
		}
		i = j
	}
	c.I = i
	return true
}

func (c *Cursor) digits(i int) int {
	for i < len(c.B) && '0' <= c.B[i] && c.B[i] <= '9' {
		i++
	}
	return i
}

// FoldsTo reports whether encoding/json could match key, which is none of
// names exactly, to one of them: it matches member names without regard to
// case (and folds some non-ASCII letters), so a reader that wants its result
// leaves such a key to encoding/json.
func FoldsTo(key []byte, names ...string) bool {
	for _, b := range key {
		if b >= utf8.RuneSelf {
			return true
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
