package wire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/acphost/acphost/internal/fastjson"
)

// Conn is one JSON-RPC 2.0 connection over a Stream. It owns the host's
// side of the protocol: the ids of the host's calls (one counter, prompts
// included), the table of calls awaiting their answer, the registry of
// the peer's requests being handled (for $/cancel_request), replies and
// notifications. Its read loop hands every request and notification to
// the inbound handler and every answer to its call, in wire order.
//
// When reading ends, Done is closed and new calls fail with ErrClosed;
// the calls already waiting keep waiting until Close gives them its cause,
// so that every one of them fails with the same, explained, error.
type Conn struct {
	s *Stream

	mu      sync.Mutex
	nextID  uint64
	calls   map[uint64]Pending
	watches map[uint64][]*watch // what waits for a call's end (Watch), by its id
	handled map[string]Handled
	refuse  error // why new calls fail: ErrClosed once reading ended, Close's cause once closed
	closed  bool

	done chan struct{} // closed when the read loop has ended
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

// NewConn returns a connection over s and starts its read loop: inbound
// gets every request and notification (see Stream.Inbound). ended, if not
// nil, runs on the read loop once reading has ended (new calls then fail
// with ErrClosed), before Done is closed: what watches the connection
// needs no goroutine of its own. The stream's Inbound and Response hooks
// belong to the connection; set its other hooks (Skipped, Trace) before.
func NewConn(s *Stream, inbound func(Message), ended func()) *Conn {
	c := &Conn{s: s, calls: map[uint64]Pending{}, handled: map[string]Handled{}, done: make(chan struct{})}
	s.Inbound = inbound
	s.Response = c.answer
	go c.read(ended)
	return c
}

func (c *Conn) read(ended func()) {
	defer close(c.done)
	for c.s.ReadObject(nil) == nil {
	}
	c.mu.Lock()
	if c.refuse == nil {
		c.refuse = ErrClosed
	}
	c.mu.Unlock()
	if ended != nil {
		ended()
	}
}

// Done is closed when the read loop has ended (and its ended has returned).
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
	err = c.s.AppendLine(func(b []byte) []byte { return build(b, id) })
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
	return c.s.AppendLine(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","method":`...)
		b = fastjson.AppendString(b, method)
		return appendParams(b, body)
	})
}

// Reply answers a request of the peer's (see Stream.Reply).
func (c *Conn) Reply(id json.RawMessage, result any, rpcErr *Error) error {
	return c.s.Reply(id, result, rpcErr)
}

// ReplyRaw answers a request with a result already encoded (see
// Stream.ReplyRaw).
func (c *Conn) ReplyRaw(id, result json.RawMessage) error {
	return c.s.ReplyRaw(id, result)
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
