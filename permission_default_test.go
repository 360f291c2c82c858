package acphost

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// warnings records the Warn records logged.
type warnings struct {
	slog.Handler
	mu  sync.Mutex
	got []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.got = append(w.got, r.Message)
		w.mu.Unlock()
	}
	return nil
}

func (w *warnings) count(sub string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, m := range w.got {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}

// TestDefaultPermissionWarnsOncePerClient: with no OnPermission the
// client allows (the seed's contract), and says so to the Logger once per
// client — not per request; a client with a hook says nothing.
func TestDefaultPermissionWarnsOncePerClient(t *testing.T) {
	t.Parallel()
	ask := fakeagent.Turn{Steps: []fakeagent.Step{
		fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("t2", "rm", "delete")),
		fakeagent.Say(fakeagent.Text("{{answer}}")),
	}}
	for _, hooked := range []bool{false, true} {
		w := &warnings{Handler: slog.DiscardHandler}
		opts := ACPOptions{}
		opts.Debug.Logger = slog.New(w)
		if hooked {
			opts.OnPermission = AllowAll()
		}
		c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{ask, ask}}, opts)
		for range 2 {
			resp, err := c.Generate(Request{Prompt: "go"})
			if err != nil || resp.Text != "allow" {
				t.Fatalf("hooked %v: %q, %v", hooked, resp.Text, err)
			}
		}
		want := 1
		if hooked {
			want = 0
		}
		if n := w.count("no OnPermission is set"); n != want {
			t.Errorf("hooked %v: %d warnings, want %d: %q", hooked, n, want, w.got)
		}
	}
}
