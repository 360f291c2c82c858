package main

import (
	"fmt"
	"os"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// controlAnswers answers the requests on the run's control socket, on
// its goroutines: cancel the running turn as Ctrl-C does, or queue a
// prompt as one typed during a turn, in the session the run has open.
type controlAnswers struct {
	live    *liveSession
	signals *signals
	in      *tty.Inbox
	output  *output
}

// answer answers one request.
func (c controlAnswers) answer(req control.Request) control.Reply {
	id, released := c.live.open()
	switch {
	case released || c.signals.quitting():
		return control.Reply{Error: "this acphost is ending", Ending: true}
	case req.Session == "" || req.Session != id:
		return control.Reply{Error: fmt.Sprintf("this acphost no longer has session %s open", acp.SafeText(req.Session))}
	}
	switch req.Op {
	case control.OpCancel:
		return control.Reply{OK: true, Running: c.signals.cancelTurn("cancelling the turn (acphost cancel)")}
	case control.OpPrompt:
		n, err := c.in.Enqueue(req.Text)
		if err != nil {
			return control.Reply{Error: err.Error(), Ending: true}
		}
		text := fmt.Sprintf("queued (%d, from acphost --no-wait): %s", n, tty.OneLine(acp.SafeText(req.Text), 60))
		if c.output.out != nil {
			c.output.out.Forget()
		}
		c.output.note(tty.StyleDim, text)
		return control.Reply{OK: true, Queued: n}
	}
	return control.Reply{Error: "unknown request"}
}

// openElsewhere reports another acphost that has r's session open: its
// pid lives and its control socket answers. Two processes must not drive
// one session. A record with a live pid and no socket (the chat could not
// make one, or its pid is someone else's now) is not refused: nothing can
// tell which, and refusing would refuse for ever (see unreachable).
func openElsewhere(r state.Record) error {
	if r.PID == 0 || r.PID == os.Getpid() || !state.ProcessAlive(r.PID) || r.Control == "" {
		return nil
	}
	if !control.Answers(r.Control) {
		return nil // a dead acphost's socket; the pid is someone else's now
	}
	return fmt.Errorf("session %s is open in acphost pid %d: prompt it there, or queue prompts with acphost --resume %s -p TEXT --no-wait",
		acp.SafeText(r.ID), r.PID, acp.SafeText(r.ID))
}
