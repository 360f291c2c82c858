package acphost

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
)

// levels records the level of each record logged.
type levels struct {
	mu  sync.Mutex
	got []slog.Level
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, r.Level)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

// TestContainmentFallbackWarnsOncePerProcess: where cgroups cannot be
// had, the step down is a warning the first time in the process, for each
// mode, and a debug record after — not a warning at every agent start; a
// logger that drops warnings does not use it up.
func TestContainmentFallbackWarnsOncePerProcess(t *testing.T) {
	t.Parallel()
	var w fallbackWarnings
	reason := errors.New("no cgroup v2 delegation")
	w.log(ContainProcessGroup, reason, slog.New(slog.DiscardHandler))
	h := &levels{}
	log := slog.New(h)
	for range 3 {
		w.log(ContainProcessGroup, reason, log)
		w.log(ContainPIDNamespace, reason, log)
	}
	want := []slog.Level{slog.LevelWarn, slog.LevelWarn, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug, slog.LevelDebug}
	if len(h.got) != len(want) {
		t.Fatalf("levels %v, want %v", h.got, want)
	}
	for i := range want {
		if h.got[i] != want[i] {
			t.Fatalf("levels %v, want %v", h.got, want)
		}
	}
}
