package main

import (
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// transcriptSink records each turn in the session's transcript, around
// the sink that shows it: the narrowest hook, one call as a turn ends.
// The transcript is the current session's (live), of the agent cfg names
// (read as each turn ends: a continued session may have changed it before
// the first); a failure to write it is said on output.
type transcriptSink struct {
	render.Sink
	store  *state.Store
	cfg    *config
	live   *liveSession
	output *output

	mu       sync.Mutex
	prompt   string
	since    time.Time
	refused  map[string]string // tool call id → why its permission was refused, this turn
	reported bool              // a failure to write was said once
}

func (t *transcriptSink) BeginTurn(prompt string, echo bool) {
	t.mu.Lock()
	t.prompt, t.since, t.refused = prompt, time.Now(), map[string]string{}
	t.mu.Unlock()
	t.Sink.BeginTurn(prompt, echo)
}

// event notes the permission answers, so that the transcript says a
// rejected tool call was rejected even when the agent reports it completed.
func (t *transcriptSink) Event(ev acphost.StreamEvent) {
	if ev.Type == acphost.EventPermissionAnswer && ev.Answer != nil {
		why := render.Refusal(ev.Answer)
		t.mu.Lock()
		if t.refused != nil && why != "" && len(t.refused) < state.MaxTranscriptTools {
			t.refused[ev.ID] = why
		} else if why == "" {
			delete(t.refused, ev.ID)
		}
		t.mu.Unlock()
	}
	t.Sink.Event(ev)
}

func (t *transcriptSink) EndTurn(r render.TurnResult) {
	t.Sink.EndTurn(r)
	sess := t.live.session()
	if sess == nil {
		return
	}
	t.mu.Lock()
	prompt, since, refused := t.prompt, t.since, t.refused
	t.mu.Unlock()
	rec := state.Record{ID: sess.ID()}
	rec.Agent, rec.Command = recordAgent(*t.cfg)
	err := t.store.AppendTranscript(rec, sessions.TurnEntries(prompt, since, r, refused))
	if err == nil {
		return
	}
	t.mu.Lock()
	said := t.reported
	t.reported = true
	t.mu.Unlock()
	if !said {
		t.output.diag(tty.StyleYellow, "%s; this session's history is not recorded", acp.SafeText(err.Error()))
	}
}
