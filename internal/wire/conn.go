// Package wire is the host's JSON-RPC 2.0 connection: a Conn numbers,
// writes and answers the calls over a stream of messages, framed as one
// compact message per line over a byte stream (NewConn: an agent's stdio,
// an SSH channel, pipes) or read and written whole by a transport that
// frames messages itself (NewMessageConn: a WebSocket's text messages).
package wire

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/internal/fastjson"
)

// Conn is one JSON-RPC 2.0 connection, over a stream of its own: lines
// over a byte stream (NewConn) or the whole messages of a transport that
// frames them (NewMessageConn). It owns the host's side of the protocol:
// the ids of the host's calls (one counter, prompts included), the table
// of calls awaiting their answer, the registry of the peer's requests
// being handled (for $/cancel_request), replies and notifications. Its
// read loop hands every request and notification to Options.Inbound and
// every answer to its call, in wire order.
//
// When reading ends, Done is closed and new calls fail with ErrClosed;
// the calls already waiting keep waiting until Close gives them its cause,
// so that every one of them fails with the same, explained, error.
type Conn struct {
	s    *stream
	opts Options

	mu      sync.Mutex
	nextID  uint64
	calls   map[uint64]Pending
	watches map[uint64][]*watch // what waits for a call's end (Watch), by its id
	handled map[string]Handled
	refuse  error // why new calls fail: ErrClosed once reading ended, Close's cause once closed
	closed  bool

	started  atomic.Bool
	errMu    sync.Mutex
	readErr  error
	readDone chan struct{} // closed when reading has ended
	done     chan struct{} // closed when the read loop has ended
}

// Pending is the host's side of a call awaiting its answer: exactly one
// of its methods is called, once.
type Pending interface {
	// Answer runs on the read loop as the answer is read, before anything
	// read after it is handed on. result and rpcErr are the raw members
	// (rpcErr nil for a result); they are only valid during the call.
	Answer(result, rpcErr json.RawMessage)
	// Fail runs when the connection is closed before the answer came,
	// with Close's cause.
	Fail(cause error)
}

// Handled is a request of the peer's being handled, registered (Track)
// so that the peer's $/cancel_request reaches it.
type Handled interface {
	// Cancel runs, on the read loop, for a $/cancel_request naming it.
	Cancel()
}

// ErrClosed is returned by calls and notifications made after reading
// ended and before Close.
var ErrClosed = errors.New("connection closed")

// ErrMalformedAnswer matches the error of a call answered with an error
// member that is not a JSON-RPC error object.
var ErrMalformedAnswer = errors.New("malformed error in answer")

// Options configures a Conn. Every hook may be nil; each runs on the read
// loop, and reading waits while it runs.
type Options struct {
	// MaxMessage bounds one incoming message (a line, on the line
	// framing): a longer one ends reading with a *LineError. Zero means
	// 64 MiB.
	MaxMessage int
	// Inbound receives every request and notification, in wire order. It
	// must not block for long. Nil: they are dropped.
	Inbound func(Message)
	// Skipped sees each message that is not a JSON-RPC 2.0 envelope, and
	// each response whose id is no JSON-RPC id. The slice is only valid
	// during the call. Nil: they are dropped silently.
	Skipped func(msg []byte)
	// Trace sees every message in both directions ("recv", on the read
	// loop; "send", on the writing goroutine, under the write lock),
	// without its framing. The slice is only valid during the call. Nil:
	// no trace.
	Trace func(dir string, msg []byte)
	// Ended runs once reading has ended (new calls then fail with
	// ErrClosed), before Done is closed: what watches the connection needs
	// no goroutine of its own. Nil: nothing runs.
	Ended func()
}

// NewConn returns a connection reading lines from r and writing them to
// w, one compact message per line. A write blocked on a peer that stopped
// reading is ended by AbortWrites through w's SetWriteDeadline if it has
// one, else its Close. Reading begins with Start.
func NewConn(r io.Reader, w io.Writer, opts Options) *Conn {
	opts.MaxMessage = cmp.Or(max(opts.MaxMessage, 0), defaultMax)
	return newConn(&lines{src: r, w: w, max: opts.MaxMessage}, opts)
}

// NewMessageConn returns a connection over a transport that frames
// messages itself: each message is read and written whole, and one over
// Options.MaxMessage ends reading as a line over it does. Reading begins
// with Start.
func NewMessageConn(m Messages, opts Options) *Conn {
	opts.MaxMessage = cmp.Or(max(opts.MaxMessage, 0), defaultMax)
	return newConn(messages{m: m, max: opts.MaxMessage}, opts)
}

func newConn(f framer, opts Options) *Conn {
	return &Conn{
		s:     &stream{f: f, trace: opts.Trace, born: time.Now()},
		opts:  opts,
		calls: map[uint64]Pending{}, handled: map[string]Handled{},
		readDone: make(chan struct{}), done: make(chan struct{}),
	}
}

// Start starts the read loop, once: call it when everything the hooks
// use is in place. Calls may be written before it; their answers are
// read once it has begun.
func (c *Conn) Start() {
	if c.started.CompareAndSwap(false, true) {
		go c.read()
	}
}

func (c *Conn) read() {
	defer close(c.done)
	c.setErr(c.readAll())
	c.mu.Lock()
	if c.refuse == nil {
		c.refuse = ErrClosed
	}
	c.mu.Unlock()
	if c.opts.Ended != nil {
		c.opts.Ended()
	}
}

// readAll reads messages until reading ends, routing each, and returns
// why it ended.
func (c *Conn) readAll() error {
	for {
		msg, err := c.s.next()
		if err != nil {
			return err
		}
		c.route(msg)
	}
}

// route hands on one message: a request or notification to Inbound, a
// response to its call; anything else is skipped.
func (c *Conn) route(msg []byte) {
	var env envelope
	if msg[0] != '{' || !env.decode(msg) || env.JSONRPC != "2.0" {
		c.skip(msg)
		return
	}
	if c.opts.Trace != nil {
		c.opts.Trace("recv", msg)
	}
	switch {
	case env.Method != "":
		if c.opts.Inbound != nil {
			// The members point into the stream's buffer: keep copies.
			c.opts.Inbound(Message{ID: bytes.Clone(env.ID), Method: env.Method, Params: bytes.Clone(env.Params)})
		}
	case len(env.ID) > 0 && (len(env.Result) > 0 || len(env.Error) > 0):
		if string(env.Error) == "null" {
			env.Error = nil // {"result":…,"error":null} is a result
		}
		if !c.answer(env.ID, env.Result, env.Error) {
			c.skip(msg)
		}
	default:
		c.skip(msg)
	}
}

func (c *Conn) skip(msg []byte) {
	if c.opts.Skipped != nil {
		c.opts.Skipped(msg)
	}
}

func (c *Conn) setErr(err error) {
	c.errMu.Lock()
	c.readErr = err
	c.errMu.Unlock()
	close(c.readDone)
}

// ReadDone is closed when reading has ended (EOF, an error, Halt), before
// Options.Ended runs.
func (c *Conn) ReadDone() <-chan struct{} { return c.readDone }

// ReadErr returns the error that ended reading (nil before it ended).
func (c *Conn) ReadErr() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.readErr
}

// Halt makes the read loop stop at the next message: nothing more is
// handed to Inbound, Skipped or Trace.
func (c *Conn) Halt() { c.s.halted.Store(true) }

// AbortWrites ends a write blocked on a peer that stopped reading, and
// fails every later one with ErrWritesAborted: the connection is then
// unusable for writing (the peer may have received part of a message).
func (c *Conn) AbortWrites() { c.s.abortWrites() }

// WriteBlockedFor returns how long the write in progress has been going
// on: 0 when none is. A write that lasts means a peer that stopped reading.
func (c *Conn) WriteBlockedFor() time.Duration { return c.s.writeBlockedFor() }

// Done is closed when the read loop has ended (and Options.Ended has
// returned).
func (c *Conn) Done() <-chan struct{} { return c.done }

// answer hands a response to its call; it runs on the read loop. A
// response whose id no call has is dropped; one whose id is no JSON-RPC id
// (a negative or fractional number, a boolean, an object…) is skipped.
func (c *Conn) answer(rawID, result, rpcErr json.RawMessage) bool {
	id, err := strconv.ParseUint(string(rawID), 10, 64)
	if err != nil {
		return rawID[0] == '"' || string(rawID) == "null"
	}
	c.mu.Lock()
	p := c.calls[id]
	delete(c.calls, id)
	ws := c.takeWatches(id)
	c.mu.Unlock()
	runWatches(ws)
	if p != nil {
		p.Answer(result, rpcErr)
	}
	return true
}

// Send registers p under the next id and writes the request that build
// appends to b for that id, in one write. When the write fails, Send
// returns its error and forgets p — unless Close took p first (settled):
// p then has its Fail. A closed connection refuses the call (settled is
// false): the error is Close's cause, or ErrClosed once reading ended.
func (c *Conn) Send(p Pending, build func(b []byte, id uint64) []byte) (settled bool, err error) {
	c.mu.Lock()
	if c.refuse != nil {
		err := c.refuse
		c.mu.Unlock()
		return false, err
	}
	c.nextID++
	id := c.nextID
	c.calls[id] = p
	c.mu.Unlock()
	err = c.s.write(func(b []byte) []byte { return build(b, id) })
	if err != nil && !c.forget(id) {
		return true, err
	}
	return false, err
}

// forget removes a call that has not been answered; false when it had been
// (or Close had failed it).
func (c *Conn) forget(id uint64) bool {
	c.mu.Lock()
	_, ok := c.calls[id]
	delete(c.calls, id)
	ws := c.takeWatches(id)
	c.mu.Unlock()
	runWatches(ws)
	return ok
}

// watch is one Watch of a call.
type watch struct{ ended func() }

// takeWatches removes and returns the watches of call id, which has just
// left the table; c.mu is held.
func (c *Conn) takeWatches(id uint64) []*watch {
	if len(c.watches) == 0 {
		return nil
	}
	ws := c.watches[id]
	delete(c.watches, id)
	return ws
}

func runWatches(ws []*watch) {
	for _, w := range ws {
		w.ended()
	}
}

// Watch looks up rawID, an id exactly as the peer wrote it, among the
// calls made with Call that await their answer, and reports the call's
// method. Only the ids this connection wrote match: a decimal number
// without sign, fraction or exponent that fits in a uint64 (a string
// holding one, or null, names none); a Send's call (a prompt) is never
// found. When it is found, ended runs once when the call ends — its answer
// is read (on the read loop, before the answer is handed to the call), it
// is withdrawn because its ctx ended, its write fails or Close fails it —
// on the goroutine that ends it, so it must not block; unwatch forgets the
// watch (ended then does not run, unless it is running already). ok is
// false, and nothing is registered, for any other id.
func (c *Conn) Watch(rawID json.RawMessage, ended func()) (method string, unwatch func(), ok bool) {
	id, err := strconv.ParseUint(string(rawID), 10, 64)
	if err != nil {
		return "", nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, isCall := c.calls[id].(*waiter)
	if !isCall {
		return "", nil, false
	}
	if c.watches == nil {
		c.watches = map[uint64][]*watch{}
	}
	wt := &watch{ended: ended}
	c.watches[id] = append(c.watches[id], wt)
	return w.method, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		ws := slices.DeleteFunc(c.watches[id], func(x *watch) bool { return x == wt })
		if len(ws) == 0 {
			delete(c.watches, id)
		} else {
			c.watches[id] = ws
		}
	}, true
}

// Call sends method with params and waits for its answer, ctx or Close.
// A result answer is decoded into result (unless nil); an error answer is
// returned as *Error. atAnswer, if set, runs on the read loop with the
// answer's raw result member (nil if none) before Call returns. When ctx
// ends before the answer, the call is withdrawn: the peer is sent one
// $/cancel_request naming its id, and Call returns ctx's error (wrapping
// ErrWritesAborted too when that write was aborted); a late answer is then dropped (atAnswer
// does not run). A call being answered as ctx ends gets its answer and no
// $/cancel_request. Send makes no such withdrawal: its caller owns the
// call's cancellation (session/prompt's is session/cancel).
func (c *Conn) Call(ctx context.Context, method string, params, result any, atAnswer func(result json.RawMessage)) error {
	body, err := marshalParams(params)
	if err != nil {
		return err
	}
	w := &waiter{method: method, atAnswer: atAnswer, done: make(chan struct{})}
	var id uint64
	settled, err := c.Send(w, func(b []byte, n uint64) []byte {
		id = n
		return appendRequest(b, n, method, body)
	})
	switch {
	case settled:
		<-w.done // failed by Close (its cause) while the request was written
	case err != nil:
		return err
	default:
		select {
		case <-w.done:
		case <-ctx.Done():
			if c.forget(id) {
				return c.withdraw(ctx, id)
			}
			<-w.done // being answered (or failed) right now
		}
	}
	if w.err != nil || result == nil {
		return w.err
	}
	if w.result == nil {
		return json.Unmarshal([]byte("null"), result)
	}
	return json.Unmarshal(w.result, result)
}

// withdraw tells the peer that call id, whose ctx ended, is abandoned,
// and returns ctx's error; a withdrawal that could not be written because
// writes were aborted (a peer that stopped reading) says so too.
func (c *Conn) withdraw(ctx context.Context, id uint64) error {
	err := c.Notify("$/cancel_request", cancelParams{RequestID: id})
	if errors.Is(err, ErrWritesAborted) {
		return fmt.Errorf("%w (withdrawing the call: %w)", ctx.Err(), err)
	}
	return ctx.Err()
}

// cancelParams are the params of a $/cancel_request for one of our calls.
type cancelParams struct {
	RequestID uint64 `json:"requestId"`
}

// waiter is Call's Pending.
type waiter struct {
	method   string
	atAnswer func(json.RawMessage)
	done     chan struct{}
	result   json.RawMessage // a copy
	err      error
}

func (w *waiter) Answer(result, rpcErr json.RawMessage) {
	if len(rpcErr) > 0 {
		e := new(Error)
		if err := json.Unmarshal(rpcErr, e); err != nil {
			w.err = fmt.Errorf("%w: %w", ErrMalformedAnswer, err)
		} else {
			w.err = e
		}
	} else {
		w.result = bytes.Clone(result)
	}
	if w.atAnswer != nil {
		w.atAnswer(result)
	}
	close(w.done)
}

func (w *waiter) Fail(cause error) {
	w.err = cause
	close(w.done)
}

// Notify writes a notification.
func (c *Conn) Notify(method string, params any) error {
	c.mu.Lock()
	refuse := c.refuse
	c.mu.Unlock()
	if refuse != nil {
		return refuse
	}
	body, err := marshalParams(params)
	if err != nil {
		return err
	}
	return c.s.write(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":`...)
		b = fastjson.AppendString(b, method)
		return appendParams(b, body)
	})
}

// Reply answers a request of the peer's, echoing its raw id byte-exact.
// Exactly one of result and rpcErr is used.
func (c *Conn) Reply(id json.RawMessage, result any, rpcErr *Error) error {
	member, v := `,"result":`, result
	if rpcErr != nil {
		member, v = `,"error":`, rpcErr
	}
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.s.writeResponse(id, member, body)
}

// ReplyRaw is Reply with a result that is already encoded (nil: null).
func (c *Conn) ReplyRaw(id, result json.RawMessage) error {
	if len(result) == 0 {
		result = json.RawMessage("null")
	}
	return c.s.writeResponse(id, `,"result":`, result)
}

// Track registers a request of the peer's, under its raw id, until
// Untrack, so a $/cancel_request naming it reaches h.
func (c *Conn) Track(id json.RawMessage, h Handled) {
	c.mu.Lock()
	c.handled[string(id)] = h
	c.mu.Unlock()
}

// Untrack forgets a request registered by Track.
func (c *Conn) Untrack(id json.RawMessage) {
	c.mu.Lock()
	delete(c.handled, string(id))
	c.mu.Unlock()
}

// CancelRequest handles the params of a $/cancel_request from the peer:
// the request it names, if registered, is cancelled.
func (c *Conn) CancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	c.mu.Lock()
	h := c.handled[string(p.RequestID)]
	c.mu.Unlock()
	if h != nil {
		h.Cancel()
	}
}

// Close fails every call awaiting its answer with cause, at once, and
// makes later calls and notifications fail with it. It neither stops the
// read loop nor closes the stream. Only the first Close counts.
func (c *Conn) Close(cause error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed, c.refuse = true, cause
	calls, watches := c.calls, c.watches
	c.calls, c.watches = map[uint64]Pending{}, nil
	c.mu.Unlock()
	for _, ws := range watches {
		runWatches(ws)
	}
	for _, p := range calls {
		p.Fail(cause)
	}
}

func marshalParams(params any) ([]byte, error) {
	if params == nil {
		return nil, nil
	}
	return json.Marshal(params)
}

// appendRequest appends a request; params is encoded JSON (nil: none).
func appendRequest(b []byte, id uint64, method string, params []byte) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":`...)
	b = fastjson.AppendString(b, method)
	return appendParams(b, params)
}

func appendParams(b, params []byte) []byte {
	if params != nil {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, '}')
}
