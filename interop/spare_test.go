//go:build interop

package interop

import (
	"context"
	"testing"
	"time"

	"github.com/acphost/acphost"
)

// testSpare measures "a new conversation → its first update" two ways:
// cold (Start, then the prompt) and from a Pool's spare process (its
// session already open). The log line SPARE is the table's row.
func testSpare(t *testing.T, a Agent) {
	opts := func(t *testing.T) acphost.ACPOptions {
		o := prepare(t, a).opts
		o.OnPermission = allowOnce
		return o
	}
	firstUpdate := func(t *testing.T, s *acphost.Session, t0 time.Time) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
		defer cancel()
		var first time.Duration
		_, err := s.GenerateStream(ctx, prompt("sh:out1.txt"), func(ev acphost.StreamEvent) {
			if first == 0 {
				first = time.Since(t0)
			}
		})
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
		return first
	}

	o := opts(t)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := acphost.Start(ctx, o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	cold := firstUpdate(t, c.Session(), t0)
	c.Close()

	p, err := acphost.NewPool(ctx, acphost.PoolOptions{Agent: opts(t), Min: 1, Max: 2, Spare: 1})
	if err != nil {
		t.Fatalf("NewPool: %v", err)
	}
	defer p.Close()
	t0 = time.Now()
	s, err := p.NewSession(ctx, acphost.SessionOptions{})
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	spare := firstUpdate(t, s, t0)
	t.Logf("SPARE %s: new conversation → first update: cold %v, from a spare %v", a.Name, cold.Round(time.Millisecond), spare.Round(time.Millisecond))
}
