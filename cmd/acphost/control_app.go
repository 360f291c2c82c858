package main

import (
	"fmt"

	"github.com/acphost/acphost"
)

// openControl opens the run's control socket; without the store (or when
// the socket cannot be made) acphost cancel and --no-wait cannot reach it.
func (a *app) openControl() {
	if a.store == nil {
		return
	}
	ctl, err := listenControl(a.store.Dir, a.control)
	if err != nil {
		a.diag(styleYellow, "%v; acphost cancel and --no-wait cannot reach this acphost", err)
		return
	}
	a.mu.Lock()
	a.ctl = ctl
	a.mu.Unlock()
}

// closeControl closes the control socket (idempotent).
func (a *app) closeControl() {
	a.mu.Lock()
	ctl := a.ctl
	a.mu.Unlock()
	if ctl != nil {
		ctl.Close()
	}
}

func (a *app) controlPath() string {
	if a.ctl == nil {
		return ""
	}
	return a.ctl.path
}

// control answers a request on the control socket: cancel the running
// turn as Ctrl-C does, or queue a prompt as one typed during a turn.
func (a *app) control(req controlRequest) controlReply {
	a.mu.Lock()
	var id string
	if a.sess != nil {
		id = a.sess.ID()
	}
	released := a.released
	a.mu.Unlock()
	switch {
	case released || a.quitting():
		return controlReply{Error: "this acphost is ending", Ending: true}
	case req.Session == "" || req.Session != id:
		return controlReply{Error: fmt.Sprintf("this acphost no longer has session %s open", acphost.SafeText(req.Session))}
	}
	switch req.Op {
	case opCancel:
		return controlReply{OK: true, Running: a.cancelTurn("cancelling the turn (acphost cancel)")}
	case opPrompt:
		n, err := a.in.enqueue(req.Text)
		if err != nil {
			return controlReply{Error: err.Error(), Ending: true}
		}
		text := fmt.Sprintf("queued (%d, from acphost --no-wait): %s", n, oneLine(acphost.SafeText(req.Text), 60))
		if a.out != nil {
			a.out.forget()
		}
		a.note(styleDim, text)
		return controlReply{OK: true, Queued: n}
	}
	return controlReply{Error: "unknown request"}
}
