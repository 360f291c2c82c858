package sessions

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1.5d": 36 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "x", "-1h", "0s", "1y"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q): no error", in)
		}
	}
}

// A transcript never grows past maxTranscriptBytes: its oldest turns go
// first, whole, the newest are kept, and each text is cut, marked.
func TestTranscriptStaysBounded(t *testing.T) {
	st := &state.Store{Dir: filepath.Join(t.TempDir(), "acphost")}
	r := state.Record{ID: "big", Agent: "demo"}
	answer := strings.Repeat("a", 40<<10)
	const n = 120 // about 5 MiB written
	for i := range n {
		es := TurnEntries("prompt "+strings.Repeat("p", 4<<10)+" #"+strconv.Itoa(i), time.Now(),
			render.TurnResult{Stop: "end_turn", Resp: acphost.Response{Text: answer}}, nil)
		if err := st.AppendTranscript(r, es); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(st.TranscriptPath(r))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > state.MaxTranscriptBytes {
			t.Fatalf("after turn %d the transcript is %d bytes, over %d", i, fi.Size(), state.MaxTranscriptBytes)
		}
	}
	es, _, err := st.ReadTranscript(r)
	if err != nil {
		t.Fatal(err)
	}
	ts := turns(es)
	if len(ts) == 0 || len(ts) >= n {
		t.Fatalf("%d turns kept of %d", len(ts), n)
	}
	if es[0].Type != state.EntryPrompt {
		t.Errorf("the transcript starts mid-turn, with a %q entry", es[0].Type)
	}
	if last := ts[len(ts)-1]; !strings.HasSuffix(last.Prompt, " #"+strconv.Itoa(n-1)) {
		t.Errorf("the newest turn was not kept: %q", last.Prompt[len(last.Prompt)-10:])
	}
	a := ts[0].Answer
	if len(a) > state.MaxEntryText || !strings.HasSuffix(a, state.CutMark) {
		t.Errorf("an answer of %d bytes was kept as %d bytes (ends %q)", len(answer), len(a), a[max(len(a)-10, 0):])
	}
	// The file holds only whole JSON lines.
	b, _ := os.ReadFile(st.TranscriptPath(r))
	for l := range bytes.Lines(b) {
		if !json.Valid(l) {
			t.Fatalf("a line is not JSON: %.60q", l)
		}
	}
}
