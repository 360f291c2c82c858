package acphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/internal/proc"
	"github.com/acphost/acphost/internal/wire"
)

// A Transport reaches agents. Each Dial yields a Link to a new agent: the
// client dials at Start and again for every restart (an unconfirmed
// cancel, an agent that stopped reading, a crash with ACPOptions.Recover)
// and a Pool dials once per process. Dial runs on the goroutine that
// starts or restarts the agent; ctx ends the dial, not the link. A
// transport that cannot reach a new agent again (Promises.Redial false)
// fails later dials with an error matching ErrUnsupported.
//
// Without ACPOptions.Transport the agent is a local subprocess of
// ACPOptions.Command: one transport among equals, and the only one with
// cgroups, Landlock confinement and host services. The ssh, websocket
// and container packages hold the others; a Transport of your own needs
// nothing from this package but Link.
type Transport interface {
	Dial(ctx context.Context) (Link, error)
}

// A Link is a connection to one agent, made by a Transport. The client
// speaks JSON-RPC over it, one message per line (whole messages over a
// MessageLink), and asks nothing of it that Promises does not say. Read,
// Write, Stderr's reader and Done are used from different goroutines at
// once.
type Link interface {
	// Read reads what the agent sends. It returns an error once the link
	// or the agent has ended.
	io.Reader
	// Write writes what the agent receives, whole lines. A Write blocked on
	// an agent that stopped reading must end once Stop is called: the
	// client calls Stop (from another goroutine, once) to abandon it when
	// the write's call is cancelled or ACPOptions.Timeouts.WriteTimeout passes.
	io.Writer
	// Stderr returns the agent's diagnostic stream, or nil without
	// Promises.Stderr. The client drains it from Dial on; its reads must
	// end (EOF or an error) once Stop has returned — the client waits a
	// second for that, then leaves the reader to its fate.
	Stderr() io.Reader
	// Done is closed once the agent has ended or the link is lost; nil
	// without Promises.ExitStatus (the end of Read then stands for it).
	Done() <-chan struct{}
	// Err says why Done closed: an *ExitError for the agent's own end
	// (ExitCode and Signal set; the client fills in Stderr and
	// DuringTurn), or an error matching ErrLinkLost for a link that
	// failed with the agent perhaps still running. It is called only
	// after Done is closed.
	Err() error
	// Stop ends the agent: its input closed, then after grace asked to
	// stop, then after grace again ended for good — everything it started
	// too, with Promises.GroupKill. It returns once the agent is gone as
	// far as the link can tell and everything the link holds is released;
	// it is called once, and may be called while Read and Write block.
	Stop(grace time.Duration)
	// Promises says what this link can do.
	Promises() Promises
}

// A MessageLink is a Link over a transport that frames messages itself,
// such as a WebSocket's text messages: the client reads and writes whole
// JSON-RPC messages through it, without newlines, and never calls its Read
// and Write. The bounds are the lines': a message over
// ACPOptions.Limits.MaxLineBytes ends the connection with a *ProtocolError
// matching ErrLineTooLong. websocket.Link is one.
type MessageLink interface {
	Link
	// ReadMessage returns the next message the agent sent, whole. The
	// slice is the client's, which may change it, until the next
	// ReadMessage, which may reuse it. It returns an error, and no
	// message, once the link or the agent has ended (io.EOF when every
	// message was read). It is called from one goroutine.
	ReadMessage() ([]byte, error)
	// WriteMessage sends msg, one message, whole; it must not keep msg
	// once it returns. Calls do not overlap. One blocked on an agent that
	// stopped reading must end once Stop is called, as Write must.
	WriteMessage(msg []byte) error
}

// Promises is what a Link can tell about its agent and do to it. The
// client never claims more than its link promises: without ExitStatus an
// agent's end is a closed stream (a *ProtocolError), never an *ExitError.
type Promises struct {
	// Transport names the kind of link: "process", "ssh", "websocket",
	// "exec", "stream" (StreamTransport) or your own.
	Transport string
	// Stderr: Link.Stderr carries the agent's stderr; its tail is kept
	// for errors and it is forwarded to ACPOptions.Process.Stderr.
	Stderr bool
	// ExitStatus: Done and Err report the agent's end, and tell it apart
	// from the link's.
	ExitStatus bool
	// GroupKill: Stop reaches every process the agent started that stayed
	// in its group (a local cgroup reaches even those that left).
	GroupKill bool
	// Redial: the Transport yields a new agent again, so the client can
	// restart this one.
	Redial bool
	// HostFiles: the agent sees the host's files at the host's paths, so
	// serving fs/* and terminal/* (ACPOptions.FS, Terminal) means what
	// the agent expects. Without it the client refuses to start with them.
	HostFiles bool
}

// A dialer yields a link to a new agent each time it is called: at Start,
// and for each restart (an unconfirmed cancel, crash recovery).
type dialer func(ctx context.Context) (link, error)

// link is a connection to one agent as the agent layer (handshake,
// routing, sessions) sees it: a Link, or the local subprocess
// (processLink), which keeps its own stderr tail and exit detail.
type link interface {
	// connect makes the JSON-RPC connection over the link, not reading
	// yet: lines over its byte stream, or a MessageLink's whole messages.
	// Its AbortWrites must end a write blocked on an agent that stopped
	// reading: through the writer's deadline or Close (lines), or by
	// stopping the Link.
	connect(opts wire.Options) *wire.Conn
	// pump starts draining what the link carries besides the stream
	// (stderr, into forward when set, and the tail), on goroutines
	// counted in wg that end once stop has run.
	pump(wg *sync.WaitGroup, forward io.Writer)
	// stderrTail is the end of the agent's stderr so far ("" without
	// promises.Stderr).
	stderrTail() string
	// watch has ended run once the agent or the link has ended (never
	// without promises.ExitStatus), on a goroutine counted in wg that ends
	// with it. A local process has no goroutine waiting meanwhile (see
	// proc.Process.OnExit); a Link's Done is waited for on one, which
	// gives up (ended not run) once quit is closed.
	watch(wg *sync.WaitGroup, quit <-chan struct{}, ended func())
	// waitExit reports whether the agent or the link ends within d; false
	// at once without promises.ExitStatus.
	waitExit(d time.Duration) bool
	// end describes the end (an *ExitError or a *LinkError); call it only
	// once it has come (watch, waitExit).
	end(duringTurn bool) error
	// stop is Link.Stop.
	stop(grace time.Duration)
	promises() Promises
}

// transportDialer dials t, checking that what each link promises fits
// the options: host services need the host's files.
func transportDialer(t Transport, opts *ACPOptions) dialer {
	return func(ctx context.Context) (link, error) {
		l, err := t.Dial(ctx)
		if err != nil {
			return nil, err
		}
		p := l.Promises()
		if !p.HostFiles && (opts.FS != nil || opts.Terminal != nil) {
			l.Stop(0)
			return nil, fmt.Errorf("acphost: ACPOptions.FS and Terminal serve the host's files and processes, which a %s agent does not see: %w", p.Transport, ErrUnsupported)
		}
		return &transportLink{l: l, p: p, grace: opts.Timeouts.CloseGrace, stderrDone: make(chan struct{})}, nil
	}
}

// transportLink is a Link as the agent layer sees it.
type transportLink struct {
	l          Link
	p          Promises
	grace      time.Duration // for a stop that abandons a blocked write
	tail       proc.Tail
	stderrDone chan struct{}
	stopOnce   sync.Once // Do returns to every caller once Stop has returned
}

func (t *transportLink) stderrTail() string { return t.tail.String() }
func (t *transportLink) promises() Promises { return t.p }

// connect reads and writes a MessageLink's whole messages, and frames
// lines over any other Link.
func (t *transportLink) connect(opts wire.Options) *wire.Conn {
	if ml, ok := t.l.(MessageLink); ok {
		return wire.NewMessageConn(linkMessages{t: t, ml: ml}, opts)
	}
	return wire.NewConn(t.l, linkWriter{t}, opts)
}

// abandon stops the link in the background, to end a write blocked on an
// agent that stopped reading (a Link has no deadline to end it with): the
// write's caller returns at once, and the agent is replaced before the
// next turn.
func (t *transportLink) abandon() { go t.stop(t.grace) }

// stop stops the link once, however many ask, and waits (a second at
// most) for its stderr to be drained.
func (t *transportLink) stop(grace time.Duration) {
	t.stopOnce.Do(func() { t.l.Stop(grace) })
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case <-t.stderrDone:
	case <-timer.C:
	}
}

// linkWriter is the line framing's writer: aborting writes closes a
// writer without a deadline (wire.Conn.AbortWrites), which abandons the
// link.
type linkWriter struct{ t *transportLink }

func (w linkWriter) Write(p []byte) (int, error) { return w.t.l.Write(p) }

func (w linkWriter) Close() error {
	w.t.abandon()
	return nil
}

// linkMessages is a MessageLink as the connection sees it: aborting
// writes abandons the link.
type linkMessages struct {
	t  *transportLink
	ml MessageLink
}

func (m linkMessages) ReadMessage() ([]byte, error)  { return m.ml.ReadMessage() }
func (m linkMessages) WriteMessage(msg []byte) error { return m.ml.WriteMessage(msg) }
func (m linkMessages) AbortWrites()                  { m.t.abandon() }

// pump drains stderr on a goroutine of its own, not counted in wg: a
// Link's stderr that does not end at Stop must not hang Close (see stop).
func (t *transportLink) pump(_ *sync.WaitGroup, forward io.Writer) {
	r := t.l.Stderr()
	if r == nil {
		close(t.stderrDone)
		return
	}
	go func() {
		defer close(t.stderrDone)
		proc.Drain(r, &t.tail, forward)
	}()
}

func (t *transportLink) watch(wg *sync.WaitGroup, quit <-chan struct{}, ended func()) {
	done := t.l.Done()
	if done == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-done:
			ended()
		case <-quit:
		}
	}()
}

func (t *transportLink) waitExit(d time.Duration) bool {
	done := t.l.Done()
	if done == nil {
		return false
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// end is the link's Err with what the client knows added: the stderr
// tail (once drained, bounded) and whether a turn ran.
func (t *transportLink) end(duringTurn bool) error {
	err := t.l.Err()
	timer := time.NewTimer(200 * time.Millisecond)
	select {
	case <-t.stderrDone:
	case <-timer.C:
	}
	timer.Stop()
	var exit *ExitError
	var lost *LinkError
	switch {
	case errors.As(err, &exit):
		e := *exit
		e.Stderr, e.DuringTurn = t.tail.String(), duringTurn
		return &e
	case errors.As(err, &lost):
		e := *lost
		e.DuringTurn = duringTurn
		if e.Transport == "" {
			e.Transport = t.p.Transport
		}
		return &e
	default:
		return &LinkError{Transport: t.p.Transport, Op: "closed", DuringTurn: duringTurn, Err: err}
	}
}

// StreamTransport reaches one agent over a connection that already
// exists — an in-process agent over pipes, a socket: Reader is what the
// agent writes, Writer what it reads, and the client's Close closes Closer
// (nil: nothing). Give it to Start as ACPOptions.Transport. There is no
// process to supervise: no stderr, no exit status, no confinement, and
// the client cannot restart the agent (one that does not confirm a
// cancellation fails the next turn). The agent is taken to see the host's
// files, so FS and Terminal are served, and Dir defaults to the current
// directory as for a local agent. It connects one client, once.
type StreamTransport struct {
	Reader io.Reader
	Writer io.Writer
	Closer io.Closer
	used   atomic.Bool
}

// Dial returns the stream as a Link the first time, and fails with
// ErrUnsupported after: the stream reaches one agent, once. Start does not
// call it (it runs the stream itself); it serves a program that composes
// transports of its own.
func (t *StreamTransport) Dial(context.Context) (Link, error) {
	l, ok := t.take()
	if !ok {
		return nil, fmt.Errorf("acphost: a StreamTransport connects once: %w", ErrUnsupported)
	}
	return l, nil
}

// dialer yields the one link over the stream, then fails: a connected
// agent cannot be restarted.
func (t *StreamTransport) dialer() dialer {
	return func(context.Context) (link, error) {
		l, ok := t.take()
		if !ok {
			return nil, fmt.Errorf("acphost: cannot restart a connected agent: %w", ErrUnsupported)
		}
		return l, nil
	}
}

// take is the stream's one link, the first time it is asked for.
func (t *StreamTransport) take() (*streamLink, bool) {
	if t.used.Swap(true) {
		return nil, false
	}
	return &streamLink{r: t.Reader, w: t.Writer, closer: t.Closer}, true
}

// streamLink is a StreamTransport's connection: no stderr, no exit status,
// no process to stop beyond closing closer, and no redial. It is both the
// client's own link and, from Dial, a Link.
type streamLink struct {
	r      io.Reader
	w      io.Writer
	closer io.Closer // may be nil
}

func (l *streamLink) Read(p []byte) (int, error)  { return l.r.Read(p) }
func (l *streamLink) Write(p []byte) (int, error) { return l.w.Write(p) }
func (l *streamLink) Stderr() io.Reader           { return nil }
func (l *streamLink) Done() <-chan struct{}       { return nil }
func (l *streamLink) Err() error                  { return nil }
func (l *streamLink) Stop(grace time.Duration)    { l.stop(grace) }
func (l *streamLink) Promises() Promises          { return l.promises() }

func (l *streamLink) connect(opts wire.Options) *wire.Conn           { return wire.NewConn(l.r, l.w, opts) }
func (l *streamLink) pump(*sync.WaitGroup, io.Writer)                {}
func (l *streamLink) stderrTail() string                             { return "" }
func (l *streamLink) watch(*sync.WaitGroup, <-chan struct{}, func()) {}
func (l *streamLink) waitExit(time.Duration) bool                    { return false }
func (l *streamLink) end(bool) error                                 { return nil }

// promises: a connected stream is the host's own business; its files are
// taken to be the host's (an in-process agent), as before transports.
func (l *streamLink) promises() Promises { return Promises{Transport: "stream", HostFiles: true} }

func (l *streamLink) stop(time.Duration) {
	if l.closer != nil {
		l.closer.Close()
	}
}
