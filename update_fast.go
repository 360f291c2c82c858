package acphost

import (
	"encoding/json"

	"github.com/acphost/acphost/internal/jsonscan"
)

// decodeChunkFast decodes the most frequent update — a message or thought
// chunk with a text block, and nothing else — in one pass without
// reflection. ok is false for any other shape or anything unusual (escapes
// the fast path cannot take, _meta, annotations, bad UTF-8); the caller then
// uses the general decoder, which gives the same result for every input this
// one accepts (FuzzDecodeUpdate checks that). hint is a session id to reuse
// instead of allocating a new string when equal.
func decodeChunkFast(params json.RawMessage, hint string) (*MessageChunk, bool) {
	c := jsonscan.Cursor{B: params}
	var m MessageChunk // on the stack until the shape is known
	m.raw = params
	var sawSession, sawUpdate bool
	ok := c.Object(func(key []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := c.StrBytes()
			if ok && string(s) == hint {
				m.session = hint
			} else {
				m.session = string(s)
			}
			sawSession = true
			return ok
		case "update":
			sawUpdate = true
			return chunkUpdate(&c, &m)
		}
		return false
	})
	if !ok || !sawSession || !sawUpdate || m.kind == "" || m.Content.Type != "text" || !c.End() {
		return nil, false
	}
	out := new(MessageChunk)
	*out = m
	return out, true
}

func chunkUpdate(c *jsonscan.Cursor, m *MessageChunk) bool {
	return c.Object(func(key []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			s, ok := c.StrBytes()
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
			s, ok := c.Str()
			m.MessageID = s
			return ok
		case "content":
			c.WS()
			start := c.I
			if !textBlock(c, &m.Content) {
				return false
			}
			m.Content.Raw = json.RawMessage(c.B[start:c.I])
			return true
		}
		return false
	})
}

func textBlock(c *jsonscan.Cursor, b *ContentBlock) bool {
	b.Type, b.Text = "", ""
	return c.Object(func(key []byte) bool {
		s, ok := c.StrBytes()
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
