package wire

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// defaultMax is Options.MaxMessage's default.
const defaultMax = 64 << 20

// ErrLineTooLong is the error, wrapped in a *LineError, that ends reading
// at an incoming message over Options.MaxMessage: a line (whose rest is
// lost: the stream cannot recover) or a whole message of a Messages
// transport.
var ErrLineTooLong = errors.New("message too long")

// LineError is the fatal read error of a message over the limit.
type LineError struct {
	Limit int
	Err   error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("incoming message over %d bytes: %v", e.Limit, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ErrWritesAborted is returned by the writes that Conn.AbortWrites ended
// and by every write after it.
var ErrWritesAborted = errors.New("writes aborted")

// errHalted ends reading after Conn.Halt.
var errHalted = errors.New("stream halted")

// Messages is a transport that frames messages itself, such as a
// WebSocket's text messages: the Conn reads and writes whole messages
// through it, with no line framing of its own.
type Messages interface {
	// ReadMessage returns the next message, whole. The slice is the
	// Conn's, which may change it, until the next ReadMessage, which may
	// reuse it. It returns an error, and no message, once the transport
	// has ended (io.EOF for an orderly end). It is called from one
	// goroutine.
	ReadMessage() ([]byte, error)
	// WriteMessage sends msg as one message; it must not keep msg. Calls
	// do not overlap. One blocked on a peer that stopped reading must end
	// once AbortWrites is called.
	WriteMessage(msg []byte) error
	// AbortWrites ends a blocked WriteMessage; every later one fails
	// without it (the Conn sees to that). It is called at most once, from
	// another goroutine, possibly while WriteMessage blocks.
	AbortWrites()
}

// framer is how messages cross: as lines over a byte stream (lines), or
// whole over a transport that frames them (messages).
type framer interface {
	// next returns the next message, valid until the next call.
	next() ([]byte, error)
	// send writes the message in b in one write and returns b's buffer
	// (lines appends the newline to it) for the next message.
	send(b []byte) ([]byte, error)
	// abort ends a send blocked on a peer that stopped reading.
	abort()
}

// stream is a Conn's side of the framing: the reads, the writes (one
// message at a time, each in one write), and the guards on both.
type stream struct {
	f     framer
	trace func(dir string, msg []byte)

	wmu        sync.Mutex
	wbuf       []byte
	aborted    atomic.Bool
	born       time.Time    // the monotonic origin of writeSince
	writeSince atomic.Int64 // 1 + when the write in progress began, in ns since born; 0: none
	halted     atomic.Bool
}

// next returns the next message that is not blank, without surrounding
// space; errHalted once halted.
func (s *stream) next() ([]byte, error) {
	for {
		msg, err := s.f.next()
		if err != nil {
			return nil, err
		}
		msg = bytes.TrimSpace(msg)
		if len(msg) == 0 {
			continue
		}
		if s.halted.Load() {
			return nil, errHalted
		}
		return msg, nil
	}
}

// write writes the message that build appends to its argument; build
// runs with the write lock held.
func (s *stream) write(build func([]byte) []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = build(s.wbuf[:0])
	return s.flush()
}

// writeResponse writes {"jsonrpc":"2.0","id":<id><member><body>}.
func (s *stream) writeResponse(id []byte, member string, body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := append(s.wbuf[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(append(append(b, id...), member...), body...)
	s.wbuf = append(b, '}')
	return s.flush()
}

// flush sends wbuf, which holds one message; wmu is held.
func (s *stream) flush() error {
	if s.aborted.Load() {
		return ErrWritesAborted
	}
	if s.trace != nil {
		s.trace("send", s.wbuf)
	}
	s.writeSince.Store(int64(time.Since(s.born)) + 1)
	b, err := s.f.send(s.wbuf)
	s.writeSince.Store(0)
	s.wbuf = b
	if cap(s.wbuf) > 1<<20 {
		s.wbuf = nil // don't pin a huge prompt's buffer
	}
	if err != nil && s.aborted.Load() {
		return ErrWritesAborted
	}
	return err
}

func (s *stream) writeBlockedFor() time.Duration {
	since := s.writeSince.Load()
	if since == 0 {
		return 0
	}
	return time.Since(s.born) - time.Duration(since-1)
}

func (s *stream) abortWrites() {
	s.aborted.Store(true)
	s.f.abort()
}

// lines frames one compact message per line over a byte stream, reading
// lines of at most max bytes.
type lines struct {
	src io.Reader
	// r holds what was read and not yet framed; nil while none is (see
	// reader): an idle stream holds only wake, not a 64 KiB buffer.
	r    *bufio.Reader
	pre  prefixReader
	wake [wakeBytes]byte
	w    io.Writer
	max  int
}

// wakeBytes is what an idle stream reads into while it waits for the
// peer; readBytes the buffer it frames lines in, taken from readers once
// something arrived and given back when all of it is framed.
const (
	wakeBytes = 2 << 10
	readBytes = 64 << 10
)

var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, readBytes) }}

// prefixReader reads p, then r; err, once p is read, is what the read
// that filled p reported.
type prefixReader struct {
	p   []byte
	r   io.Reader
	err error
}

func (pr *prefixReader) Read(b []byte) (int, error) {
	if len(pr.p) > 0 {
		n := copy(b, pr.p)
		pr.p = pr.p[n:]
		return n, nil
	}
	if pr.err != nil {
		return 0, pr.err
	}
	return pr.r.Read(b)
}

// reader returns the framing buffer, first waiting for the peer's next
// bytes with none held when everything read before is framed. The line
// next returned last must no longer be in use.
func (l *lines) reader() (*bufio.Reader, error) {
	if l.r != nil && l.r.Buffered() == 0 && len(l.pre.p) == 0 && l.pre.err == nil {
		l.r.Reset(nil)
		readers.Put(l.r)
		l.r = nil
	}
	if l.r != nil {
		return l.r, nil
	}
	for {
		n, err := l.src.Read(l.wake[:])
		if n == 0 && err != nil {
			return nil, err
		}
		if n > 0 {
			l.pre = prefixReader{p: l.wake[:n], r: l.src, err: err}
			l.r = readers.Get().(*bufio.Reader)
			l.r.Reset(&l.pre)
			return l.r, nil
		}
	}
}

// next returns the next line. The slice may point into the reader's
// buffer and is valid only until the next read; decoding copies what it
// keeps.
func (l *lines) next() ([]byte, error) {
	r, err := l.reader()
	if err != nil {
		return nil, err
	}
	frag, err := r.ReadSlice('\n')
	if err == nil {
		return frag, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		if err == io.EOF && len(frag) > 0 {
			return frag, nil
		}
		return nil, err
	}
	buf := bytes.Clone(frag)
	for {
		if len(buf) > l.max {
			return nil, &LineError{Limit: l.max, Err: ErrLineTooLong}
		}
		frag, err = r.ReadSlice('\n')
		buf = append(buf, frag...)
		if err == nil {
			return buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == io.EOF && len(buf) > 0 {
				return buf, nil
			}
			return nil, err
		}
	}
}

// send writes the message and a newline in one Write.
func (l *lines) send(b []byte) ([]byte, error) {
	b = append(b, '\n')
	_, err := l.w.Write(b)
	return b, err
}

// abort sets the writer's deadline in the past when it has one (pipes,
// sockets); otherwise it closes the writer.
func (l *lines) abort() {
	if d, ok := l.w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Unix(1, 0)) == nil {
		return
	}
	if c, ok := l.w.(io.Closer); ok {
		_ = c.Close()
	}
}

// messages frames nothing: its transport hands whole messages, of which
// it refuses those over max.
type messages struct {
	m   Messages
	max int
}

// next returns the next message with its raw CR and LF outside strings
// made spaces (JSON allows them there only as whitespace), in place: each
// message is one line wherever it is recorded or logged, as on the line
// framing.
func (f messages) next() ([]byte, error) {
	msg, err := f.m.ReadMessage()
	if err != nil {
		return nil, err
	}
	if len(msg) > f.max {
		return nil, &LineError{Limit: f.max, Err: ErrLineTooLong}
	}
	flatten(msg)
	return msg, nil
}

func (f messages) send(b []byte) ([]byte, error) { return b, f.m.WriteMessage(b) }
func (f messages) abort()                        { f.m.AbortWrites() }

// flatten turns the raw CR and LF of msg that are outside JSON strings
// into spaces. Those inside a string (where JSON forbids them) stay, and
// the message stays as invalid as it was.
func flatten(msg []byte) {
	if bytes.IndexByte(msg, '\n') < 0 && bytes.IndexByte(msg, '\r') < 0 {
		return
	}
	inString, escaped := false, false
	for i, c := range msg {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == '\n' || c == '\r'):
			msg[i] = ' '
		}
	}
}
