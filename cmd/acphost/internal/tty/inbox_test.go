package tty

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A question answered with /quit (or /exit) is not answered: Ask ends
// with ErrQuit and OnQuit runs; the next question gets the next line; a
// prompt (not a question) still reads /quit as a line, the chat's own
// command.
func TestInboxQuitIsNotAnAnswer(t *testing.T) {
	in := NewInbox(strings.NewReader("/quit\n  /exit \nAda\n/quit\n"))
	quit := make(chan struct{}, 2)
	in.OnQuit = func() { quit <- struct{}{} }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 2 {
		if line, ok, err := in.Ask(ctx); !errors.Is(err, ErrQuit) {
			t.Fatalf("Ask = %q, %v, %v; want ErrQuit", line, ok, err)
		}
		select {
		case <-quit:
		case <-ctx.Done():
			t.Fatal("OnQuit did not run")
		}
	}
	if line, ok, err := in.Ask(ctx); line != "Ada" || !ok || err != nil {
		t.Fatalf("Ask = %q, %v, %v; want Ada", line, ok, err)
	}
	if line, _, ok, err := in.Next(ctx); line != "/quit" || !ok || err != nil {
		t.Fatalf("Next = %q, %v, %v; want the line /quit", line, ok, err)
	}
}
