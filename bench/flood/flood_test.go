package flood

import (
	"encoding/json"
	"testing"
)

// TestChunkLineLayouts checks that every layout is one valid JSON-RPC
// notification with the same content.
func TestChunkLineLayouts(t *testing.T) {
	for _, layout := range []string{"ts", "sorted", "params-first"} {
		for _, esc := range []bool{false, true} {
			cfg := DefaultConfig()
			cfg.Layout, cfg.Escape, cfg.Size = layout, esc, 64
			line := chunkLine("s1", cfg)
			if line[len(line)-1] != '\n' {
				t.Fatalf("%s: no newline", layout)
			}
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Method  string `json:"method"`
				Params  struct {
					SessionID string `json:"sessionId"`
					Update    struct {
						SessionUpdate string `json:"sessionUpdate"`
						Content       struct{ Type, Text string }
					} `json:"update"`
				} `json:"params"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%s: %v: %s", layout, err, line)
			}
			u := m.Params.Update
			if m.JSONRPC != "2.0" || m.Method != "session/update" || m.Params.SessionID != "s1" ||
				u.SessionUpdate != "agent_message_chunk" || u.Content.Type != "text" || len(u.Content.Text) != 64 {
				t.Fatalf("%s: %+v", layout, m)
			}
			if esc != (u.Content.Text[63] == '\n') {
				t.Fatalf("%s escape=%v: %q", layout, esc, u.Content.Text)
			}
		}
	}
}

func TestOverride(t *testing.T) {
	c, err := DefaultConfig().Override("n=5 size=10 perm=1 interval=2ms forever=1 layout=sorted escape=1")
	if err != nil || c.N != 5 || c.Size != 10 || !c.Perm || c.Interval.Milliseconds() != 2 || !c.Forever || c.Layout != "sorted" || !c.Escape {
		t.Fatalf("%+v %v", c, err)
	}
	if _, err := DefaultConfig().Override("bogus=1"); err == nil {
		t.Fatal("unknown key accepted")
	}
}
