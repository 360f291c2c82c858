package acphost

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// A dialer yields a link to a new agent each time it is called: at Start,
// and for each restart (an unconfirmed cancel, crash recovery). One that
// cannot reach a new agent (promises.redial false) fails with an error
// matching ErrUnsupported after its first link.
type dialer func(ctx context.Context) (link, error)

// link is a connection to one agent: the seam between the agent layer
// (handshake, routing, sessions) and how the agent is reached. The agent
// layer speaks JSON-RPC over stream and asks nothing of the link it does
// not promise. The local subprocess (processLink) is one implementation,
// a caller-supplied stream (streamLink, Connect) the trivial one.
type link interface {
	// stream is the byte stream: r is what the agent writes, w what it
	// reads. w is handed on as it is, so a deadline or Close it has can
	// end a blocked write (see wire.Stream.AbortWrites).
	stream() (r io.Reader, w io.Writer)
	// pump starts draining what the link carries besides the stream
	// (stderr, into forward when set, and the tail), on goroutines
	// counted in wg that end once stop has run.
	pump(wg *sync.WaitGroup, forward io.Writer)
	// stderrTail is the end of the agent's stderr so far ("" without
	// promises.stderr).
	stderrTail() string
	// exited is closed once the agent has ended; nil (never) without
	// promises.exitStatus.
	exited() <-chan struct{}
	// waitExit reports whether the agent ends within d; false at once
	// without promises.exitStatus.
	waitExit(d time.Duration) bool
	// exitError describes the end; call it only after exited is closed.
	exitError(duringTurn bool) *ExitError
	// stop ends the agent: its input closed, then after grace asked to
	// stop, then after grace again ended for good. It returns once the
	// agent is gone as far as the link can tell and what the link holds
	// is released. It is called once.
	stop(grace time.Duration)
	// promises says what this link can do.
	promises() promises
}

// promises is what a link can tell about its agent and do to it; the
// library never claims more than its link promises.
type promises struct {
	stderr     bool // a stderr tail for errors, forwarded to ACPOptions.Stderr
	exitStatus bool // exited and exitError: the end of the agent, not only of the stream
	groupKill  bool // stop reaches every process the agent started
	redial     bool // the dialer yields a new agent again (restart, recovery)
}

// streamLink is a caller-supplied stream (Connect): no stderr, no exit
// status, no process to stop beyond closing closer, and no redial.
type streamLink struct {
	r      io.Reader
	w      io.Writer
	closer io.Closer // may be nil
}

// streamDialer yields the one link over r and w, then fails.
func streamDialer(r io.Reader, w io.Writer, closer io.Closer) dialer {
	used := false
	return func(context.Context) (link, error) {
		if used {
			return nil, fmt.Errorf("acphost: cannot restart a connected agent: %w", ErrUnsupported)
		}
		used = true
		return &streamLink{r: r, w: w, closer: closer}, nil
	}
}

func (l *streamLink) stream() (io.Reader, io.Writer)  { return l.r, l.w }
func (l *streamLink) pump(*sync.WaitGroup, io.Writer) {}
func (l *streamLink) stderrTail() string              { return "" }
func (l *streamLink) exited() <-chan struct{}         { return nil }
func (l *streamLink) waitExit(time.Duration) bool     { return false }
func (l *streamLink) exitError(bool) *ExitError       { return nil }
func (l *streamLink) promises() promises              { return promises{} }

func (l *streamLink) stop(time.Duration) {
	if l.closer != nil {
		l.closer.Close()
	}
}
