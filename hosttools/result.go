package hosttools

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// capResult returns res as it is to be sent, its JSON, and whether it was
// cut: a result whose JSON is over max keeps its content blocks in order
// while they fit (the text block that reaches the cap cut at a rune
// boundary), loses its structured content and meta, and ends with a
// note saying how much there was.
func capResult(res *mcp.CallToolResult, max int) (*mcp.CallToolResult, json.RawMessage, bool) {
	b, err := json.Marshal(res)
	if err != nil {
		cut := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "hosttools: the tool's result cannot be encoded: " + err.Error()}}}
		b, _ = json.Marshal(cut)
		return cut, b, true
	}
	if len(b) <= max {
		return res, b, false
	}
	note := &mcp.TextContent{Text: fmt.Sprintf("[acphost: the tool's result was %d bytes, over the host's cap of %d; the rest is cut]", len(b), max)}
	room := max - 256 // the envelope and the note
	cut := &mcp.CallToolResult{IsError: res.IsError}
	for _, c := range res.Content {
		cb, err := json.Marshal(c)
		if err != nil {
			continue
		}
		if len(cb) <= room {
			cut.Content = append(cut.Content, c)
			room -= len(cb)
			continue
		}
		if t, ok := c.(*mcp.TextContent); ok && room > 64 {
			cut.Content = append(cut.Content, &mcp.TextContent{Text: cutText(t.Text, room-64)})
		}
		break
	}
	cut.Content = append(cut.Content, note)
	b, _ = json.Marshal(cut)
	return cut, b, true
}

// cutText is s cut to at most n bytes of its JSON encoding (escapes
// counted), at a rune boundary.
func cutText(s string, n int) string {
	size := 0
	for i, r := range s {
		w := utf8.RuneLen(r)
		switch {
		case r < 0x20 || r == '"' || r == '\\' || r == '<' || r == '>' || r == '&':
			w = 6 // \u00XX at worst
		case r == utf8.RuneError:
			w = 6
		}
		if size+w > n {
			return s[:i]
		}
		size += w
	}
	return s
}
