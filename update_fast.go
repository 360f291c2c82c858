package acphost

import (
	"bytes"
	"encoding/json"
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
	m := &MessageChunk{}
	m.raw = params
	var sawSession, sawUpdate bool
	ok := c.object(func(key []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := c.str()
			if ok && string(s) == hint {
				m.session = hint
			} else {
				m.session = string(s)
			}
			sawSession = true
			return ok
		case "update":
			sawUpdate = true
			return c.chunkUpdate(m)
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
	return m, true
}

func (c *cursor) chunkUpdate(m *MessageChunk) bool {
	return c.object(func(key []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			s, ok := c.str()
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
			m.MessageID = string(s)
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
		s, ok := c.str()
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
		key, ok := c.str()
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

// str reads a string without escapes, of valid UTF-8 and no control bytes.
func (c *cursor) str() ([]byte, bool) {
	if !c.expect('"') {
		return nil, false
	}
	start := c.i
	end := bytes.IndexByte(c.b[start:], '"')
	if end < 0 {
		return nil, false
	}
	s := c.b[start : start+end]
	for _, ch := range s {
		if ch < 0x20 || ch == '\\' {
			return nil, false
		}
	}
	if !utf8.Valid(s) {
		return nil, false
	}
	c.i = start + end + 1
	return s, true
}
