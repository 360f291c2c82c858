package acphost

import (
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeChunkFast decodes the most frequent update — a message or thought
// chunk with a text block, and nothing else — in one pass without
// reflection. ok is false for any other shape or anything unusual (escapes
// the fast path cannot take, _meta, annotations, bad UTF-8); the caller then
// uses the general decoder, which gives the same result for every input this
// one accepts (FuzzDecodeUpdate checks that). hint is a session id to reuse
// instead of allocating a new string when equal.
func decodeChunkFast(params json.RawMessage, hint string) (*MessageChunk, bool) {
	c := cursor{b: params}
	var m MessageChunk // on the stack until the shape is known
	m.raw = params
	var sawSession, sawUpdate bool
	ok := c.object(func(key []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := c.strBytes()
			if ok && string(s) == hint {
				m.session = hint
			} else {
				m.session = string(s)
			}
			sawSession = true
			return ok
		case "update":
			sawUpdate = true
			return c.chunkUpdate(&m)
		}
		return false
	})
	if !ok || !sawSession || !sawUpdate || m.kind == "" || m.Content.Type != "text" {
		return nil, false
	}
	c.ws()
	if c.i != len(c.b) {
		return nil, false
	}
	out := new(MessageChunk)
	*out = m
	return out, true
}

func (c *cursor) chunkUpdate(m *MessageChunk) bool {
	return c.object(func(key []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			s, ok := c.strBytes()
			switch string(s) {
			case KindAgentMessageChunk:
				m.kind = KindAgentMessageChunk
			case KindAgentThoughtChunk:
				m.kind = KindAgentThoughtChunk
			default:
				return false
			}
			return ok
		case "messageId":
			s, ok := c.str()
			m.MessageID = s
			return ok
		case "content":
			c.ws()
			start := c.i
			if !c.textBlock(&m.Content) {
				return false
			}
			m.Content.Raw = json.RawMessage(c.b[start:c.i])
			return true
		}
		return false
	})
}

func (c *cursor) textBlock(b *ContentBlock) bool {
	b.Type, b.Text = "", ""
	return c.object(func(key []byte) bool {
		s, ok := c.strBytes()
		switch string(key) {
		case "type":
			if string(s) != "text" {
				return false
			}
			b.Type = "text"
		case "text":
			b.Text = string(s)
		default:
			return false
		}
		return ok
	})
}

// cursor walks JSON for decodeChunkFast.
type cursor struct {
	b []byte
	i int
}

func (c *cursor) ws() {
	for c.i < len(c.b) {
		switch c.b[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

func (c *cursor) expect(ch byte) bool {
	c.ws()
	if c.i < len(c.b) && c.b[c.i] == ch {
		c.i++
		return true
	}
	return false
}

// object walks {"key": value, ...}, calling member to consume each value.
func (c *cursor) object(member func(key []byte) bool) bool {
	if !c.expect('{') {
		return false
	}
	if c.expect('}') {
		return true
	}
	for {
		key, ok := c.strBytes()
		if !ok || !c.expect(':') || !member(key) {
			return false
		}
		if c.expect('}') {
			return true
		}
		if !c.expect(',') {
			return false
		}
	}
}

// str reads a JSON string. Escapes are decoded exactly as encoding/json
// does; a string with invalid UTF-8 or a bad escape is left to the general
// decoder (ok false).
func (c *cursor) str() (string, bool) {
	b, ok := c.strBytes()
	return string(b), ok
}

// strBytes is str without the copy: the bytes are valid until the next read.
func (c *cursor) strBytes() ([]byte, bool) {
	if !c.expect('"') {
		return nil, false
	}
	start := c.i
	for i := start; i < len(c.b); i++ {
		switch ch := c.b[i]; {
		case ch == '"':
			s := c.b[start:i]
			if !utf8.Valid(s) {
				return nil, false
			}
			c.i = i + 1
			return s, true
		case ch == '\\':
			return c.escapedStr(start)
		case ch < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// escapedStr decodes a string with escapes, from its first byte at start.
func (c *cursor) escapedStr(start int) ([]byte, bool) {
	out := make([]byte, 0, 64)
	for i := start; i < len(c.b); {
		ch := c.b[i]
		switch {
		case ch == '"':
			if !utf8.Valid(out) {
				return nil, false
			}
			c.i = i + 1
			return out, true
		case ch < 0x20:
			return nil, false
		case ch != '\\':
			out = append(out, ch)
			i++
			continue
		}
		if i+1 >= len(c.b) {
			return nil, false
		}
		switch e := c.b[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n, ok := c.unicodeEscape(i)
			if !ok {
				return nil, false
			}
			out = utf8.AppendRune(out, r)
			i += n
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}

// unicodeEscape decodes \uXXXX at i (with a following low surrogate when
// it is a high one), as encoding/json does: an unpaired surrogate becomes
// U+FFFD. n is the number of bytes consumed.
func (c *cursor) unicodeEscape(i int) (r rune, n int, ok bool) {
	r, ok = hex4(c.b, i+2)
	if !ok {
		return 0, 0, false
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, true
	}
	if i+12 <= len(c.b) && c.b[i+6] == '\\' && c.b[i+7] == 'u' {
		if r2, ok := hex4(c.b, i+8); ok {
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
