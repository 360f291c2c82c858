package ask

import (
	"context"
	"testing"
	"time"
)

// Timed adds the time its callback takes to the turn's wait; Reset starts
// over.
func TestWait(t *testing.T) {
	var w Wait
	f := Timed(&w, func(ctx context.Context, d time.Duration) (int, error) {
		time.Sleep(d) // the callback's own duration, measured: not synchronisation
		return 1, nil
	})
	if n, err := f(context.Background(), 20*time.Millisecond); n != 1 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
	if got := w.Total(); got < 20*time.Millisecond {
		t.Errorf("Total %v after a 20ms wait", got)
	}
	w.Reset()
	if got := w.Total(); got != 0 {
		t.Errorf("Total %v after Reset", got)
	}
}
