package websocket

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/proc"
)

// agent is one running agent as a bridge connection relays it: a local
// process (procAgent) or a Transport's Link (linkAgent). Write takes whole
// lines for the agent, Read gives what the agent writes; they are called
// from two goroutines at once, and both end once stop has returned.
type agent interface {
	io.Reader
	io.Writer
	// pump drains the agent's stderr into forward (nil: discarded).
	pump(wg *sync.WaitGroup, forward io.Writer)
	// exited is closed once the agent has ended or its link is lost; nil
	// when only the end of Read tells.
	exited() <-chan struct{}
	// end is the close that reports the end: 1000 with "exit N" or
	// "signal NAME", else an error close. Call it after stop.
	end() (ws.StatusCode, string)
	// stop ends the agent and releases what it holds. Called once,
	// perhaps while Read and Write block.
	stop(grace time.Duration)
	// pid is the local process's id, 0 for a Link.
	pid() int
}

// procAgent is a local process: its stdin and stdout, its exit.
type procAgent struct{ p *proc.Process }

func (a procAgent) Read(b []byte) (int, error)  { return a.p.Stdout().Read(b) }
func (a procAgent) Write(b []byte) (int, error) { return a.p.Stdin().Write(b) }
func (a procAgent) exited() <-chan struct{}     { return a.p.Exited() }
func (a procAgent) stop(grace time.Duration)    { a.p.Stop(grace) }
func (a procAgent) pid() int                    { return a.p.Pid() }

// pump drains stderr on a goroutine counted in wg; Stop ends it.
func (a procAgent) pump(wg *sync.WaitGroup, forward io.Writer) { a.p.Pump(wg, forward) }

func (a procAgent) end() (ws.StatusCode, string) {
	exit, _, _ := a.p.Outcome()
	return ws.StatusNormalClosure, exitReason(exit)
}

// stderrWait bounds the wait, after Stop, for a Link's stderr to end
// (its reads must end then; one that does not is left to its fate, as
// the acphost client leaves it).
const stderrWait = time.Second

// linkAgent is a Transport's Link: its Read and Write, or a
// MessageLink's messages as lines.
type linkAgent struct {
	l          acphost.Link
	r          io.Reader
	w          io.Writer
	log        *slog.Logger
	stderrDone chan struct{}
}

func newLinkAgent(l acphost.Link, log *slog.Logger) *linkAgent {
	a := &linkAgent{l: l, r: l, w: l, log: log, stderrDone: make(chan struct{})}
	if ml, ok := l.(acphost.MessageLink); ok {
		a.r, a.w = &messageLines{ml: ml}, messageWriter{ml}
	}
	return a
}

func (a *linkAgent) Read(b []byte) (int, error)  { return a.r.Read(b) }
func (a *linkAgent) Write(b []byte) (int, error) { return a.w.Write(b) }
func (a *linkAgent) exited() <-chan struct{}     { return a.l.Done() }
func (a *linkAgent) pid() int                    { return 0 }

// pump drains the Link's stderr on a goroutine not counted in wg: stop
// waits for it, bounded, so that a Link whose stderr never ends cannot
// hold the connection.
func (a *linkAgent) pump(_ *sync.WaitGroup, forward io.Writer) {
	r := a.l.Stderr()
	if r == nil {
		close(a.stderrDone)
		return
	}
	go func() {
		defer close(a.stderrDone)
		drain(r, forward)
	}()
}

func (a *linkAgent) stop(grace time.Duration) {
	a.l.Stop(grace)
	t := time.NewTimer(stderrWait)
	defer t.Stop()
	select {
	case <-a.stderrDone:
	case <-t.C:
		a.log.Warn("acphost/websocket: the agent's stderr did not end when its link stopped", "transport", a.l.Promises().Transport)
	}
}

// end is the Link's Err as a close: the agent's exit status, or a lost
// link (without Done, the end of Read is all the bridge knows).
func (a *linkAgent) end() (ws.StatusCode, string) {
	if a.l.Done() == nil {
		return ws.StatusInternalError, "agent link ended"
	}
	err := a.l.Err()
	var exit *acphost.ExitError
	if errors.As(err, &exit) {
		if exit.Signal != "" {
			return ws.StatusNormalClosure, "signal " + exit.Signal
		}
		return ws.StatusNormalClosure, "exit " + strconv.Itoa(exit.ExitCode)
	}
	a.log.Info("acphost/websocket: the agent's link was lost", "err", err)
	return ws.StatusInternalError, "agent link lost"
}

// drain copies r to forward (nil, or once it fails: discarded) until r
// ends.
func drain(r io.Reader, forward io.Writer) {
	buf := make([]byte, 4<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && forward != nil {
			if _, werr := forward.Write(buf[:n]); werr != nil {
				forward = nil
			}
		}
		if err != nil {
			return
		}
	}
}

// messageLines reads a MessageLink's messages as lines: raw CR and LF
// (valid JSON has them only as whitespace) made spaces, in place, a
// newline after each.
type messageLines struct {
	ml      acphost.MessageLink
	pending []byte // what Read has not returned yet of the last message
	newline bool   // Read owes the newline that ends the last message
}

func (m *messageLines) Read(p []byte) (int, error) {
	if len(m.pending) == 0 && !m.newline {
		msg, err := m.ml.ReadMessage()
		if err != nil {
			return 0, err
		}
		for i, c := range msg {
			if c == '\n' || c == '\r' {
				msg[i] = ' '
			}
		}
		m.pending, m.newline = msg, true
	}
	n := copy(p, m.pending)
	m.pending = m.pending[n:]
	if len(m.pending) == 0 && n < len(p) {
		p[n] = '\n'
		n++
		m.newline = false
	}
	return n, nil
}

// messageWriter sends each line written as one message (the bridge
// writes whole lines).
type messageWriter struct{ ml acphost.MessageLink }

func (w messageWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		line, rest, _ := bytes.Cut(p, []byte("\n"))
		if !blank(line) {
			if err := w.ml.WriteMessage(line); err != nil {
				return n, err
			}
		}
		n += len(p) - len(rest)
		p = rest
	}
	return n, nil
}
