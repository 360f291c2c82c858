package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/assert"
)

// syncBuffer is a log destination several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestEarlyUpdateShown (issue 26.2): an agent that sends a mode update
// before it answers session/new. New's Start returns only once the client
// has dispatched it (the caller's OnUpdate runs after the server's), so the
// server's hook has seen the update before New knew the session: the
// update must reach the page (a mode note, the mode in the state), with no
// panic in the hook and no race on the session.
func TestEarlyUpdateShown(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}}`),
		BeforeSessionNew: []fakeagent.Step{{Update: json.RawMessage(`{"sessionUpdate":"current_mode_update","currentModeId":"code"}`)}},
	}
	var logs syncBuffer
	r := newRig(t, script, func(cfg *web.Config) {
		dispatched := make(chan struct{})
		var once sync.Once
		cfg.Agent.OnUpdate = func(u acp.Update) {
			if _, ok := u.(*acp.CurrentModeUpdate); ok {
				once.Do(func() { close(dispatched) })
			}
		}
		lg := slog.New(slog.NewTextHandler(&logs, nil))
		cfg.Agent.Debug.Logger, cfg.Logger = lg, lg
		start := cfg.Start
		cfg.Start = func(ctx context.Context, opts acphost.ACPOptions) (*acphost.ACPClient, error) {
			c, err := start(ctx, opts)
			if err == nil {
				select {
				case <-dispatched:
				case <-ctx.Done():
				}
			}
			return c, err
		}
	})
	tb := r.tab()
	tb.next("the early mode note", func(m msg) bool { return m.typ() == "note" && m.str("text") == "mode: code" })
	assert.NotContains(t, logs.String(), "panicked")
}
