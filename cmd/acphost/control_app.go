package main

import (
	"fmt"
	"os"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// openControl opens the run's control socket; without the store (or when
// the socket cannot be made) acphost cancel and --no-wait cannot reach it.
func (a *app) openControl() {
	if a.store == nil {
		return
	}
	ctl, err := control.Listen(a.store.Dir, a.control)
	if err != nil {
		a.output.diag(tty.StyleYellow, "%v; acphost cancel and --no-wait cannot reach this acphost", err)
		return
	}
	a.live.listening(ctl)
}

// closeControl closes the control socket (idempotent).
func (a *app) closeControl() {
	if ctl := a.live.control(); ctl != nil {
		ctl.Close()
	}
}

// control answers a request on the control socket: cancel the running
// turn as Ctrl-C does, or queue a prompt as one typed during a turn.
func (a *app) control(req control.Request) control.Reply {
	id, released := a.live.open()
	switch {
	case released || a.signals.quitting():
		return control.Reply{Error: "this acphost is ending", Ending: true}
	case req.Session == "" || req.Session != id:
		return control.Reply{Error: fmt.Sprintf("this acphost no longer has session %s open", acphost.SafeText(req.Session))}
	}
	switch req.Op {
	case control.OpCancel:
		return control.Reply{OK: true, Running: a.signals.cancelTurn("cancelling the turn (acphost cancel)")}
	case control.OpPrompt:
		n, err := a.in.Enqueue(req.Text)
		if err != nil {
			return control.Reply{Error: err.Error(), Ending: true}
		}
		text := fmt.Sprintf("queued (%d, from acphost --no-wait): %s", n, oneLine(acphost.SafeText(req.Text), 60))
		if a.output.out != nil {
			a.output.out.Forget()
		}
		a.output.note(tty.StyleDim, text)
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
	if r.PID == 0 || r.PID == os.Getpid() || !processAlive(r.PID) || r.Control == "" {
		return nil
	}
	if !control.Answers(r.Control) {
		return nil // a dead acphost's socket; the pid is someone else's now
	}
	return fmt.Errorf("session %s is open in acphost pid %d: prompt it there, or queue prompts with acphost --resume %s -p TEXT --no-wait",
		acphost.SafeText(r.ID), r.PID, acphost.SafeText(r.ID))
}
