package acp

import (
	"bytes"
	"encoding/json"

	"github.com/acphost/acphost/internal/fastjson"
)

// decodeFast decodes the most frequent updates — message and thought
// chunks with a text block, tool calls and tool call updates — in one pass
// without reflection. ok is false for any other kind, any member it does not
// know, and anything unusual (a member of the wrong type, bad UTF-8); the
// caller then uses the general decoder, which gives the same result for
// every input this one accepts (FuzzDecodeUpdate checks that). hint is a
// session id to reuse instead of allocating a new string when equal. With
// shared, params is the client's own copy of what it read, never written
// again (Raw must not be modified), and a chunk's text is a string of its
// bytes rather than a copy when it has no escapes: one allocation and its
// size saved per chunk.
func decodeFast(params json.RawMessage, hint string, shared bool) (Update, bool) {
	c := fastjson.Cursor{B: params}
	var f fastUpdate // on the stack until the shape is known
	var session string
	var sawSession, sawUpdate bool
	ok := c.Object(func(key []byte) bool {
		switch string(key) {
		case "sessionId":
			s, ok := c.StrBytes()
			if ok && string(s) == hint {
				session = hint
			} else {
				session = string(s)
			}
			sawSession = true
			return ok
		case "update":
			sawUpdate = true
			return f.read(&c)
		}
		return false
	})
	if !ok || !sawSession || !sawUpdate || !c.End() {
		return nil, false
	}
	h := newHeader(session, f.kind, params)
	switch f.kind {
	case KindAgentMessageChunk, KindAgentThoughtChunk:
		var block ContentBlock
		if !textBlock(f.tool.Content, &block, shared) {
			return nil, false
		}
		return &MessageChunk{updateHeader: h, MessageID: f.messageID, Content: block}, true
	case KindToolCall, KindToolCallUpdate:
		tc, set := f.tool.toolCall()
		return &ToolCallUpdate{updateHeader: h, ToolCall: tc, Set: set, State: tc}, true
	}
	return nil, false
}

// fastUpdate is what decodeFast reads of the update object. Repeated
// members are read again, the last one winning, as in encoding/json.
type fastUpdate struct {
	kind      UpdateKind
	messageID string
	tool      wireToolCall // and a chunk's content, in tool.Content
}

func (f *fastUpdate) read(c *fastjson.Cursor) bool {
	return c.Object(func(key []byte) bool {
		switch string(key) {
		case "sessionUpdate":
			s, ok := c.StrBytes()
			f.kind = fastKind(s)
			return ok && f.kind != ""
		case "messageId":
			return fastString(c, &f.messageID)
		}
		handled, ok := f.tool.readMember(c, key)
		return handled && ok // any other member: the general decoder knows more kinds
	})
}

// readMember reads the member key of a tool call object into w; handled is
// false for a member that is not a tool call's. The content is kept raw.
func (w *wireToolCall) readMember(c *fastjson.Cursor, key []byte) (handled, ok bool) {
	switch string(key) {
	case "toolCallId":
		return true, fastString(c, &w.ToolCallID)
	case "title":
		return true, fastOptional(c, &w.Title)
	case "kind":
		return true, fastOptional(c, &w.Kind)
	case "status":
		return true, fastOptional(c, &w.Status)
	case "name":
		return true, fastOptional(c, &w.Name)
	case "content":
		return true, fastRaw(c, &w.Content)
	case "locations":
		return true, fastRaw(c, &w.Locations)
	case "rawInput":
		return true, fastRawCopy(c, &w.RawInput)
	case "rawOutput":
		return true, fastRawCopy(c, &w.RawOutput)
	case "_meta":
		return true, fastRawCopy(c, &w.Meta)
	}
	return false, false
}

var toolCallMembers = []string{"toolCallId", "title", "kind", "status", "name", "content", "locations", "rawInput", "rawOutput", "_meta"}

// decodeToolCallFast is decodeToolCall in one pass; ok is false for what
// it leaves to encoding/json (see fastjson.FoldsTo). Other members are
// skipped, as encoding/json skips them.
func decodeToolCallFast(raw json.RawMessage) (tc ToolCall, set ToolCallFields, ok bool) {
	c := fastjson.Cursor{B: raw}
	var w wireToolCall
	ok = c.Object(func(key []byte) bool {
		if handled, ok := w.readMember(&c, key); handled {
			return ok
		}
		if fastjson.FoldsTo(key, toolCallMembers...) {
			return false
		}
		_, ok := c.Value()
		return ok
	})
	if !ok || !c.End() {
		return ToolCall{}, 0, false
	}
	tc, set = w.toolCall()
	return tc, set, true
}

// fastKind returns the kinds the fast path takes, without allocating.
func fastKind(s []byte) UpdateKind {
	switch string(s) {
	case string(KindAgentMessageChunk):
		return KindAgentMessageChunk
	case string(KindAgentThoughtChunk):
		return KindAgentThoughtChunk
	case string(KindToolCall):
		return KindToolCall
	case string(KindToolCallUpdate):
		return KindToolCallUpdate
	}
	return ""
}

// fastString reads a string member; null leaves it as it was.
func fastString(c *fastjson.Cursor, dst *string) bool {
	if c.Null() {
		return true
	}
	s, ok := c.Str()
	*dst = s
	return ok
}

// fastOptional reads a member that may be absent: null clears it.
func fastOptional(c *fastjson.Cursor, dst **string) bool {
	if c.Null() {
		*dst = nil
		return true
	}
	s, ok := c.Str()
	*dst = &s
	return ok
}

// fastRaw keeps a member's JSON as it is, a slice of the params.
func fastRaw(c *fastjson.Cursor, dst *json.RawMessage) bool {
	v, ok := c.Value()
	*dst = v
	return ok
}

// fastRawCopy is fastRaw for members the session's tool records keep: a
// copy, so that a small member does not pin a large update.
func fastRawCopy(c *fastjson.Cursor, dst *json.RawMessage) bool {
	v, ok := c.Value()
	*dst = bytes.Clone(v)
	return ok
}

// textBlock decodes {"type":"text","text":…} and nothing else.
func textBlock(raw json.RawMessage, b *ContentBlock, shared bool) bool {
	c := fastjson.Cursor{B: raw}
	ok := c.Object(func(key []byte) bool {
		switch string(key) {
		case "type":
			s, ok := c.StrBytes()
			b.Type = BlockText
			return ok && string(s) == "text"
		case "text":
			if shared {
				return sharedStr(&c, &b.Text)
			}
			s, ok := c.Str()
			b.Text = s
			return ok
		}
		return false
	})
	b.Raw = raw
	return ok && b.Type == BlockText && c.End()
}

// sharedStr reads a string member into dst: when it has no escapes, as a
// string of the cursor's own bytes, else as the unescaped copy. Only for
// bytes that are never written again.
func sharedStr(c *fastjson.Cursor, dst *string) bool {
	s, ok := c.StrShared()
	*dst = s
	return ok
}
