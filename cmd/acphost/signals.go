package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// signals is what the person's interruptions do to a run: a first Ctrl-C
// (or /cancel, or acphost cancel) cancels the running turn; a second one,
// one between turns, SIGTERM and /quit close the agent and end the run,
// which then exits with the code they call for once the agent is closed
// (wait). Any goroutine may call its methods.
type signals struct {
	live   *liveSession // the turn Ctrl-C cancels, the agent quitting closes
	output *output
	in     *tty.Inbox  // the prompts queued meanwhile, for the notice
	editor *lineEditor // the line editor a Ctrl-C between turns goes to, nil without one

	once sync.Once
	quit chan struct{} // closed when a signal (or /quit) asks to exit
	done chan struct{} // closed once that signal has closed the agent
	code int           // the exit status, set before quit is closed
}

func newSignals(live *liveSession, o *output, in *tty.Inbox) *signals {
	return &signals{live: live, output: o, in: in, quit: make(chan struct{}), done: make(chan struct{})}
}

// handle implements Ctrl-C and SIGTERM until done is closed.
func (s *signals) handle(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			s.on(sig, false)
		}
	}
}

// cancelTurn cancels the running turn, if any, as a first Ctrl-C does.
func (s *signals) cancelTurn(why string) bool {
	if s.quitting() {
		return false
	}
	cancel := s.live.interrupt()
	if cancel == nil {
		return false
	}
	more := ""
	if n := s.in.Queued(); n > 0 {
		more = fmt.Sprintf("; %d queued prompt(s) run next", n)
	}
	// The notice first, in place of a running tool's line: the tool's
	// final line comes once the agent has stopped it.
	if s.output.out != nil {
		s.output.out.DropRunningTool()
	}
	s.output.diag(tty.StyleYellow, "%s (Ctrl-C again to quit%s)", why, more)
	cancel()
	return true
}

// on: a first Ctrl-C cancels the running turn; a second one, one between
// turns, SIGTERM and /quit (asked) close the agent and exit.
func (s *signals) on(sig os.Signal, asked bool) {
	if sig == os.Interrupt && !asked && s.cancelTurn("cancelling the turn") {
		return
	}
	if sig == os.Interrupt && !asked && s.editor != nil && s.editor.interrupt() {
		return // the editor clears the line, or quits at an empty one
	}
	s.quitOn(sig, asked)
}

// quitOnInterrupt quits as Ctrl-C at an empty line does.
func (s *signals) quitOnInterrupt() { s.quitOn(os.Interrupt, false) }

// quitOn closes the agent and ends the run, with the exit status the
// signal (or /quit, asked) calls for.
func (s *signals) quitOn(sig os.Signal, asked bool) {
	code := exitInterrupt
	switch {
	case asked:
		code = exitOK
	case sig != os.Interrupt:
		code = exitTerm
	}
	begun := false
	s.once.Do(func() {
		s.code, begun = code, true
		close(s.quit)
	})
	if !begun {
		return
	}
	client, startCancel := s.live.agent()
	if !asked {
		s.output.diag(tty.StyleYellow, "closing the agent")
	}
	if s.editor != nil {
		s.editor.ed.Swallow() // keys typed while the agent closes go nowhere
		if asked && client != nil {
			// An agent that ignores the end of its input takes the
			// close's grace (and a SIGTERM) to go: say why nothing
			// happens meanwhile.
			s.output.note(tty.StyleDim, "closing the agent…")
		}
	}
	if startCancel != nil {
		startCancel()
	}
	if client != nil {
		// A running turn fails with ErrClosed, and the approval prompt's
		// ctx ends.
		_ = client.Close()
	}
	close(s.done)
}

// quitting reports whether a signal (or /quit) asked the run to end.
func (s *signals) quitting() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// quitAsked is closed once a signal (or /quit) asked the run to end.
func (s *signals) quitAsked() <-chan struct{} { return s.quit }

// exitCode is the exit status the signal calls for; only once quitting.
func (s *signals) exitCode() int { return s.code }

// wait waits until the agent is closed, if a signal asked the run to end.
func (s *signals) wait() {
	if s.quitting() {
		<-s.done
	}
}
