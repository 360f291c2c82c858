// Package wire is the host's JSON-RPC 2.0 over newline-delimited JSON: a
// Stream frames one compact object per line, a Conn numbers, writes and
// answers the calls over it.
package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/internal/fastjson"
)

// DefaultMaxLine is the default limit on one incoming line.
const DefaultMaxLine = 64 << 20

// ErrLineTooLong is returned (wrapped in *LineError) by ReadObject for a line
// over the limit. The stream cannot recover: the rest of that line is lost.
var ErrLineTooLong = errors.New("line too long")

// LineError is a fatal read error with the size seen so far.
type LineError struct {
	Limit int
	Err   error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("incoming line over %d bytes: %v", e.Limit, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// Stream frames messages over a reader and a writer.
type Stream struct {
	src io.Reader
	// r holds what was read and not yet framed; nil while none is (see
	// readLine): an idle stream holds only wake, not a 64 KiB buffer.
	r       *bufio.Reader
	pre     prefixReader
	wake    [wakeBytes]byte
	w       io.Writer
	closers []io.Closer
	maxLine int
	// Inbound receives every request and notification, on the read
	// goroutine, in wire order. It must not block for long: reading stops
	// while it runs.
	Inbound func(Message)
	// Response is called with each response's raw id, result and error.
	// The slices are only valid during the call. It returns true when it
	// took the response; ReadObject returns the others.
	Response func(id, result, rpcErr json.RawMessage) (taken bool)
	// Skipped is called, on the read goroutine, for each line that is not a
	// JSON-RPC 2.0 envelope. The slice is only valid during the call.
	Skipped func(line []byte)
	// Trace, if set, sees every message in both directions ("recv"/"send").
	Trace func(dir string, msg []byte)

	wmu        sync.Mutex
	wbuf       []byte
	aborted    atomic.Bool
	born       time.Time    // the monotonic origin of writeSince
	writeSince atomic.Int64 // 1 + when the write in progress began, in ns since born; 0: none

	errMu    sync.Mutex
	readErr  error
	readDone chan struct{} // closed when reading has ended

	closeOnce sync.Once
	closeErr  error
	halted    atomic.Bool
}

// New returns a Stream reading lines from r (at most maxLine bytes each; 0
// means DefaultMaxLine) and writing to w. Close closes the closers.
func New(r io.Reader, w io.Writer, maxLine int, closers ...io.Closer) *Stream {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &Stream{src: r, w: w, maxLine: maxLine, closers: closers, readDone: make(chan struct{}), born: time.Now()}
}

// wakeBytes is what an idle stream reads into while it waits for the
// agent; readBytes the buffer it frames lines in, taken from readers once
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

// reader returns the framing buffer, first waiting for the agent's next
// bytes with none held when everything read before is framed. The line
// readLine returned last must no longer be in use.
func (s *Stream) reader() (*bufio.Reader, error) {
	if s.r != nil && s.r.Buffered() == 0 && len(s.pre.p) == 0 && s.pre.err == nil {
		s.r.Reset(nil)
		readers.Put(s.r)
		s.r = nil
	}
	if s.r != nil {
		return s.r, nil
	}
	for {
		n, err := s.src.Read(s.wake[:])
		if n == 0 && err != nil {
			return nil, err
		}
		if n > 0 {
			s.pre = prefixReader{p: s.wake[:n], r: s.src, err: err}
			s.r = readers.Get().(*bufio.Reader)
			s.r.Reset(&s.pre)
			return s.r, nil
		}
	}
}

// WriteObject marshals v and writes it with a trailing newline in one Write.
func (s *Stream) WriteObject(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.WriteLine(data)
}

// Reply writes a response to an incoming request, echoing its raw id
// byte-exact. Exactly one of result and rpcErr is used.
func (s *Stream) Reply(id json.RawMessage, result any, rpcErr *Error) error {
	member, v := `,"result":`, result
	if rpcErr != nil {
		member, v = `,"error":`, rpcErr
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.writeResponse(id, member, body)
}

// ReplyRaw is Reply with a result that is already encoded (nil: null).
func (s *Stream) ReplyRaw(id, result json.RawMessage) error {
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	return s.writeResponse(id, `,"result":`, result)
}

func (s *Stream) writeResponse(id json.RawMessage, member string, body []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	b := append(s.wbuf[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(append(append(b, id...), member...), body...)
	s.wbuf = append(b, '}')
	return s.flushLine()
}

// Error is a JSON-RPC error object; Conn.Call returns a peer's as its error.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// WriteLine writes one encoded message (without newline) in one Write.
func (s *Stream) WriteLine(data []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = append(s.wbuf[:0], data...)
	return s.flushLine()
}

// AppendLine writes the message that build appends to its argument, in one
// Write; build runs with the stream's write lock held.
func (s *Stream) AppendLine(build func([]byte) []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.wbuf = build(s.wbuf[:0])
	return s.flushLine()
}

// flushLine writes wbuf, which holds one message, and a newline; wmu is held.
func (s *Stream) flushLine() error {
	if s.aborted.Load() {
		return ErrWritesAborted
	}
	if s.Trace != nil {
		s.Trace("send", s.wbuf)
	}
	s.wbuf = append(s.wbuf, '\n')
	s.writeSince.Store(int64(time.Since(s.born)) + 1)
	_, err := s.w.Write(s.wbuf)
	s.writeSince.Store(0)
	if cap(s.wbuf) > 1<<20 {
		s.wbuf = nil // don't pin a huge prompt's buffer
	}
	if err != nil && s.aborted.Load() {
		return ErrWritesAborted
	}
	return err
}

// WriteBlockedFor returns how long the write in progress has been going
// on: 0 when none is. A write that lasts means a peer that stopped reading.
func (s *Stream) WriteBlockedFor() time.Duration {
	since := s.writeSince.Load()
	if since == 0 {
		return 0
	}
	return time.Since(s.born) - time.Duration(since-1)
}

// ErrWritesAborted is returned by the writes that AbortWrites ended and by
// every write after it.
var ErrWritesAborted = errors.New("writes aborted")

// AbortWrites ends a write blocked on a peer that stopped reading, and
// fails every later one: the stream is then unusable for writing (the
// peer may have received part of a message). The writer's deadline is set
// in the past when it has one (pipes, sockets); otherwise it is closed.
func (s *Stream) AbortWrites() {
	s.aborted.Store(true)
	if d, ok := s.w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Unix(1, 0)) == nil {
		return
	}
	if c, ok := s.w.(io.Closer); ok {
		_ = c.Close()
	}
}

// Message is an incoming request (ID set) or notification (ID nil).
type Message struct {
	ID     json.RawMessage
	Method string
	Params json.RawMessage
}

// envelope is the JSON-RPC 2.0 frame, decoded once per line.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// ReadObject reads lines until a response arrives that Response does not
// take, and decodes it into v; with v nil such a response is reported to
// Skipped, and ReadObject returns only when reading ends. Requests and
// notifications are handed to Inbound on the way, in wire order; blank
// lines and lines that are not JSON-RPC 2.0 envelopes are reported to
// Skipped and dropped.
func (s *Stream) ReadObject(v any) error {
	for {
		line, err := s.readLine()
		if err != nil {
			s.setErr(err)
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if s.halted.Load() {
			s.setErr(ErrHalted)
			return ErrHalted
		}
		var env envelope
		if line[0] != '{' || !env.decode(line) || env.JSONRPC != "2.0" {
			s.skip(line)
			continue
		}
		if s.Trace != nil {
			s.Trace("recv", line)
		}
		switch {
		case env.Method != "":
			// The members point into the reader's buffer: keep copies.
			s.Inbound(Message{ID: bytes.Clone(env.ID), Method: env.Method, Params: bytes.Clone(env.Params)})
		case len(env.ID) > 0 && (len(env.Result) > 0 || len(env.Error) > 0):
			if string(env.Error) == "null" {
				env.Error = nil // {"result":…,"error":null} is a result
			}
			if s.Response != nil && s.Response(env.ID, env.Result, env.Error) {
				continue
			}
			if v == nil || json.Unmarshal(line, v) != nil {
				s.skip(line)
				continue
			}
			return nil
		default:
			s.skip(line)
		}
	}
}

var envelopeNames = []string{"jsonrpc", "id", "method", "params", "result", "error"}

// decode reads the envelope of a line as json.Unmarshal would, in one pass
// when it can: the members then point into line. Anything unusual (a member
// name in another case, invalid UTF-8, invalid JSON) takes json.Unmarshal.
func (env *envelope) decode(line []byte) bool {
	c := fastjson.Cursor{B: line}
	ok := c.Object(func(key []byte) bool {
		switch string(key) {
		case "jsonrpc":
			return envelopeString(&c, &env.JSONRPC)
		case "method":
			return envelopeString(&c, &env.Method)
		case "id":
			return envelopeRaw(&c, &env.ID)
		case "params":
			return envelopeRaw(&c, &env.Params)
		case "result":
			return envelopeRaw(&c, &env.Result)
		case "error":
			return envelopeRaw(&c, &env.Error)
		}
		if fastjson.FoldsTo(key, envelopeNames...) {
			return false
		}
		_, ok := c.Value()
		return ok
	})
	if ok && c.End() {
		return true
	}
	var slow envelope // a variable of its own, so env stays on the caller's stack
	ok = json.Unmarshal(line, &slow) == nil
	*env = slow
	return ok
}

// envelopeString reads a string member (null leaves it as it was), without
// allocating for the version and the frequent methods.
func envelopeString(c *fastjson.Cursor, dst *string) bool {
	if c.Null() {
		return true
	}
	b, ok := c.StrBytes()
	*dst = internString(b)
	return ok
}

func envelopeRaw(c *fastjson.Cursor, dst *json.RawMessage) bool {
	v, ok := c.Value()
	*dst = v
	return ok
}

// internString avoids allocating the strings every line carries.
func internString(b []byte) string {
	switch string(b) {
	case "2.0":
		return "2.0"
	case "session/update":
		return "session/update"
	case "session/request_permission":
		return "session/request_permission"
	}
	return string(b)
}

func (s *Stream) skip(line []byte) {
	if s.Skipped != nil {
		s.Skipped(line)
	}
}

// readLine returns the next line. The slice may point into the reader's
// buffer and is valid only until the next read; decoding copies what it keeps.
func (s *Stream) readLine() ([]byte, error) {
	r, err := s.reader()
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
		if len(buf) > s.maxLine {
			return nil, &LineError{Limit: s.maxLine, Err: ErrLineTooLong}
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

func (s *Stream) setErr(err error) {
	s.errMu.Lock()
	if s.readErr == nil {
		s.readErr = err
		close(s.readDone)
	}
	s.errMu.Unlock()
}

// ReadDone is closed when reading has ended (EOF or an error).
func (s *Stream) ReadDone() <-chan struct{} { return s.readDone }

// ReadErr returns the error that ended reading, if any.
func (s *Stream) ReadErr() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.readErr
}

// ErrHalted ends reading after Halt.
var ErrHalted = errors.New("stream halted")

// Halt makes the reader stop at the next line: nothing more is handed to
// Inbound, Skipped or Trace.
func (s *Stream) Halt() { s.halted.Store(true) }

// Close closes the underlying closers once.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		for _, c := range s.closers {
			if err := c.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}
