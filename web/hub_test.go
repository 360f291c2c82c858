package web

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHubBound: the transcript kept never exceeds maxBytes: a long text
// (with characters JSON escapes) is cut into pieces that add up to it, a
// huge tool message reaches the tabs whole and is kept as a note, and a
// bound smaller than any message keeps nothing.
func TestHubBound(t *testing.T) {
	const max = 64 << 10
	h := newHub(max, DefaultMaxTabBytes)
	text := strings.Repeat("<\"\\\n\u2028é", 50<<10)
	h.transcript(msgUser{Type: "user", Turn: 1, Text: text})
	h.transcript(msgDelta{Type: "text", Turn: 1, Delta: text})
	tool := msgTool{Type: "tool", Turn: 1, Tool: toolView{ID: "t", Content: []contentView{}}}
	for range 20 {
		tool.Tool.Content = append(tool.Tool.Content, contentView{Type: "text", Text: strings.Repeat("x", maxFieldBytes)})
	}
	sub, _ := h.subscribe(func(int) []byte { return []byte("{}") })
	h.transcript(tool)
	log, _ := h.snapshot()
	total := 0
	for _, b := range log {
		total += len(b)
	}
	if total > max {
		t.Errorf("kept %d bytes, bound %d", total, max)
	}
	var last msgNote
	json.Unmarshal(log[len(log)-1], &last)
	if last.Kind != "dropped" {
		t.Errorf("the huge tool message was kept as %s", log[len(log)-1][:100])
	}
	if got := sub.next(); len(got) < 20*maxFieldBytes {
		t.Errorf("the tab got %d bytes of the tool message", len(got))
	}

	// The pieces of a text add up to it.
	live, _ := newHub(max, DefaultMaxTabBytes).fit(msgDelta{Type: "text", Turn: 1, Delta: text})
	var sb strings.Builder
	for _, b := range live {
		if len(b) > maxPieceBytes {
			t.Errorf("a piece of %d bytes", len(b))
		}
		var m msgDelta
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(m.Delta)
	}
	if sb.String() != text {
		t.Error("the pieces do not add up to the text")
	}

	tiny := newHub(10, DefaultMaxTabBytes)
	tiny.transcript(msgNote{Type: "note", Kind: "x", Text: "hello"})
	if log, dropped := tiny.snapshot(); len(log) != 0 || dropped != 1 {
		t.Errorf("a bound of 10 bytes kept %d messages (%d dropped)", len(log), dropped)
	}
}

// TestHubCutsATabBehind: a tab that takes nothing is cut off once what is
// queued for it would pass its budget, and its queue is released; a tab
// that takes what it is sent stays.
func TestHubCutsATabBehind(t *testing.T) {
	const budget = 1 << 10
	h := newHub(1<<20, budget)
	stalled, _ := h.subscribe(func(int) []byte { return []byte("{}") })
	reading, _ := h.subscribe(func(int) []byte { return []byte("{}") })
	for i := 0; ; i++ {
		h.transcript(msgNote{Type: "note", Kind: "x", Text: strings.Repeat("n", 200)})
		if b := reading.next(); b == nil {
			t.Fatal("the reading tab got nothing")
		} else {
			reading.written(b)
		}
		select {
		case <-stalled.done:
			stalled.mu.Lock()
			queued, n := stalled.queued, len(stalled.queue)
			stalled.mu.Unlock()
			if queued != 0 || n != 0 {
				t.Errorf("the cut tab still holds %d messages (%d bytes)", n, queued)
			}
			if i > budget/200+1 {
				t.Errorf("cut after %d messages of 200 bytes, budget %d", i+1, budget)
			}
			select {
			case <-reading.done:
				t.Error("the reading tab was cut off too")
			default:
			}
			return
		default:
		}
		if i > 100 {
			t.Fatal("the stalled tab was never cut off")
		}
	}
}
