package websocket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost"
)

// keptBytes bounds the capacity of a message buffer kept for the next
// message: a bigger one, left by a big message, is dropped.
const keptBytes = 64 << 10

// Link is one WebSocket connection to one agent, an acphost.MessageLink:
// the acphost client reads and writes whole messages, one per text frame.
// Read and Write carry the same messages as lines, for callers that want
// a byte stream. ReadMessage (or Read) is called from one goroutine,
// WriteMessage and Write from any (each message is sent whole), Stop
// once; the acphost client does all three.
type Link struct {
	conn    *ws.Conn
	raw     *rawConn
	id      string
	max     int64
	ctx     context.Context // ends the link's goroutines and writes; its end drops the connection
	cancel  context.CancelFunc
	live    liveness
	msgs    chan []byte  // the reader hands each message to ReadMessage
	free    chan []byte  // the buffers ReadMessage gave back, for the reader to fill again
	held    []byte       // the message ReadMessage returned last (never blank), nil before one
	lines   messageLines // Read's: the messages as lines
	wmu     sync.Mutex
	wbuf    []byte // a line written in part
	done    chan struct{}
	endOnce sync.Once
	err     error
	stop    sync.Once
	wg      sync.WaitGroup
	binary  atomic.Int64
}

func newLink(conn *ws.Conn, raw *rawConn, id string, max int64, ping time.Duration) *Link {
	conn.SetReadLimit(max)
	l := &Link{conn: conn, raw: raw, id: id, max: max, msgs: make(chan []byte), free: make(chan []byte, 2), done: make(chan struct{})}
	l.free <- nil // two buffers: one being read into while ReadMessage's caller holds the other
	l.free <- nil
	l.lines.ml = l
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Go(l.readLoop)
	if ping >= 0 {
		l.wg.Go(func() {
			keepalive(l.ctx, conn, orDefault(ping, DefaultPingInterval), &l.live, func(err error) {
				l.fail(&acphost.LinkError{Transport: "websocket", Op: "keepalive", Err: err})
			})
		})
	}
	return l
}

// ConnectionID is the Acp-Connection-Id the server named this connection
// with ("" if it sent none).
func (l *Link) ConnectionID() string { return l.id }

// BinaryFrames counts the binary frames received and ignored.
func (l *Link) BinaryFrames() int64 { return l.binary.Load() }

// Promises: the exit status a Bridge reports, a new agent per dial.
func (l *Link) Promises() acphost.Promises {
	return acphost.Promises{Transport: "websocket", ExitStatus: true, Redial: true}
}

// Stderr is nil: the agent's stderr stays on the server.
func (l *Link) Stderr() io.Reader { return nil }

// Done is closed once the connection has ended.
func (l *Link) Done() <-chan struct{} { return l.done }

// Err says why Done closed: an *acphost.ExitError when the server closed
// with 1000 and "exit N" or "signal NAME" (a Bridge's agent ended),
// otherwise an *acphost.LinkError: Op "closed" with a *CloseError for any
// other close frame, "read" for a connection that failed (a dropped TCP
// connection: at once) or a message over MaxMessageBytes (matching
// ErrMessageTooBig), "keepalive" for a server that stopped answering
// pings, "write" for a failed write, "closed" with ErrStopped after Stop.
func (l *Link) Err() error { return l.err }

// ReadMessage returns the next text message that is not blank, whole.
// The slice is the caller's, who may change it, until the next
// ReadMessage, which reuses it. It returns io.EOF once the connection
// has ended.
func (l *Link) ReadMessage() ([]byte, error) {
	if l.held != nil {
		b := l.held[:0]
		if cap(b) > keptBytes {
			b = nil
		}
		l.free <- b // never blocks: the reader holds the other buffer
		l.held = nil
	}
	select {
	case m := <-l.msgs:
		l.held = m
		return m, nil
	case <-l.done:
		return nil, io.EOF
	}
}

// Read returns the messages received, each as one line (its raw CR and
// LF made spaces); io.EOF once the connection has ended. Use it or
// ReadMessage, not both.
func (l *Link) Read(p []byte) (int, error) { return l.lines.Read(p) }

// WriteMessage sends msg as one text frame. It blocks while the server
// does not read, until Stop (or the keepalive) ends the link. A message
// over MaxMessageBytes is refused (ErrMessageTooBig). Once the link has
// ended it returns Err.
func (l *Link) WriteMessage(msg []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	select {
	case <-l.done:
		return l.writeErr()
	default:
	}
	if int64(len(msg)) > l.max {
		return fmt.Errorf("%w: a message written over %d bytes", ErrMessageTooBig, l.max)
	}
	return l.send(msg)
}

// Write sends each whole line in p as one text frame, keeping a partial
// line until its newline arrives; blank lines are dropped. It blocks as
// WriteMessage does.
func (l *Link) Write(p []byte) (int, error) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	select {
	case <-l.done:
		return 0, l.writeErr()
	default:
	}
	n := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if int64(len(l.wbuf)+len(p)) > l.max {
				return n, fmt.Errorf("%w: a line written over %d bytes", ErrMessageTooBig, l.max)
			}
			l.wbuf = append(l.wbuf, p...)
			return n + len(p), nil
		}
		line := p[:i]
		if len(l.wbuf) > 0 {
			line = append(l.wbuf, line...)
		}
		if line = bytes.TrimSuffix(line, []byte("\r")); !blank(line) {
			if err := l.send(line); err != nil {
				return n, err
			}
		}
		l.wbuf = l.wbuf[:0]
		n += i + 1
		p = p[i+1:]
	}
	return n, nil
}

// send writes one text frame; l.wmu is held.
func (l *Link) send(msg []byte) error {
	l.live.enter()
	err := l.conn.Write(l.ctx, ws.MessageText, msg)
	l.live.leave()
	if err != nil {
		l.fail(&acphost.LinkError{Transport: "websocket", Op: "write", Err: err})
		return l.writeErr()
	}
	return nil
}

// writeErr is the error of a write after the end.
func (l *Link) writeErr() error {
	<-l.done
	if l.err != nil {
		return l.err
	}
	return io.ErrClosedPipe
}

// readLoop reads frames until the connection ends, into the two buffers
// in turn, handing each text message to ReadMessage. Its reads take no
// ctx: fail drops the connection, which ends them.
func (l *Link) readLoop() {
	buf := <-l.free
	for {
		data, err := readText(context.Background(), l.conn, &l.live, &l.binary, buf)
		if err != nil {
			l.fail(l.readEnd(err))
			return
		}
		// Waiting for the consumer is backpressure, not a dead peer.
		l.live.enter()
		select {
		case l.msgs <- data:
		case <-l.ctx.Done():
			l.live.leave()
			return
		}
		select {
		case buf = <-l.free:
		case <-l.ctx.Done():
			l.live.leave()
			return
		}
		l.live.leave()
	}
}

// readEnd describes the end of the connection seen by the reader.
func (l *Link) readEnd(err error) error {
	if l.ctx.Err() != nil {
		return &acphost.LinkError{Transport: "websocket", Op: "closed", Err: ErrStopped}
	}
	var ce ws.CloseError
	if errors.As(err, &ce) {
		cerr := &CloseError{Code: int(ce.Code), Reason: ce.Reason}
		if code, sig, ok := parseExitReason(ce.Reason); ok && ce.Code == ws.StatusNormalClosure {
			return &acphost.ExitError{ExitCode: code, Signal: sig, Err: cerr}
		}
		return &acphost.LinkError{Transport: "websocket", Op: "closed", Err: cerr}
	}
	if errors.Is(err, ws.ErrMessageTooBig) {
		err = fmt.Errorf("%w: over %d bytes", ErrMessageTooBig, l.max)
	}
	return &acphost.LinkError{Transport: "websocket", Op: "read", Err: err}
}

// end records why the link ended, once, and closes Done.
func (l *Link) end(err error) {
	l.endOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// fail ends the link with err and drops the connection.
func (l *Link) fail(err error) {
	l.end(err)
	l.cancel()
	l.raw.close()
}

// Stop sends a normal close, waits up to grace for the server's, then
// drops the connection. It returns once the link's goroutines have
// ended. The server (a Bridge) then stops the agent; the link cannot see
// that happen.
func (l *Link) Stop(grace time.Duration) {
	l.stop.Do(func() {
		closed, _ := closeWithin(l.conn, ws.StatusNormalClosure, "", grace, nil)
		l.fail(&acphost.LinkError{Transport: "websocket", Op: "closed", Err: ErrStopped})
		<-closed
		l.wg.Wait()
	})
}
