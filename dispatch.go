package acphost

import (
	"encoding/json"
	"sync"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/acpinternal"
)

// itemKind says what a queued item asks the dispatcher to do.
type itemKind uint8

const (
	itemUpdate     itemKind = iota // deliver a session/update
	itemPermission                 // start handling a session/request_permission
	itemBarrier                    // run barrier in dispatch order (a prompt's answer, an answer's stream event, …)
)

// item is one entry of the ordered queue.
type item struct {
	kind    itemKind
	size    int // bytes counted against the queue's byte bound: params and itemOverhead
	params  json.RawMessage
	barrier func()
	in      *inflight
	req     *acp.PermissionRequest // a permission request's params, when already parsed (see openNow)
}

// queue is the FIFO between the read loop and the dispatcher. Updates and
// permission requests are bounded: when more than limit items or
// limitBytes bytes wait (besides the batch being delivered; one item is
// always taken), the read loop waits, which pauses reading and pushes back
// on the agent. While a host→agent call other than a prompt waits for its
// answer (or a write to the agent is blocked: see lift) the count is not
// bounded and the bytes may reach liftedFactor times limitBytes, so a call
// made from OnUpdate can be answered although OnUpdate holds the
// dispatcher; an agent that sends more than that meanwhile has flooded the
// client (push reports false). An item's size counts its params and
// itemOverhead.
type queue struct {
	mu         sync.Mutex
	cond       sync.Cond
	items      []item
	bytes      int  // the params bytes of items
	busy       bool // the dispatcher is delivering a batch
	limit      int
	limitBytes int
	lifted     int
	waiting    bool // the read loop waits for room
	closed     bool
}

func newQueue(limit, limitBytes int) *queue {
	q := &queue{limit: limit, limitBytes: limitBytes}
	q.cond.L = &q.mu
	return q
}

// push appends it, waiting for room when bounded; it reports false, taking
// nothing, when the lifted bounds are exceeded.
func (q *queue) push(it item, bounded bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for bounded && !q.closed && q.over(it.size) {
		if q.lifted > 0 {
			if q.bytes+it.size > liftedFactor*q.limitBytes {
				return false
			}
			break
		}
		q.waiting = true
		q.cond.Wait()
	}
	q.waiting = false
	q.items = append(q.items, it)
	q.bytes += it.size
	q.cond.Broadcast()
	return true
}

// over reports whether taking size more bytes would pass the bounds.
// len is the number of items waiting (Stats.Queued).
func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *queue) over(size int) bool {
	return len(q.items) > 0 && (len(q.items) >= q.limit || q.bytes+size > q.limitBytes)
}

// full reports whether the read loop waits for room.
func (q *queue) full() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}

// popAll takes every queued item at once (waiting for one), handing back
// the previous batch's slice for reuse; ok is false once the queue is closed
// and empty. Taking batches keeps locking and wake-ups off the per-update
// path while the agent streams.
func (q *queue) popAll(done []item) (batch []item, ok bool) {
	clear(done)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.busy = false
	for len(q.items) == 0 {
		if q.closed {
			return nil, false
		}
		q.cond.Wait()
	}
	batch, q.items = q.items, done[:0]
	q.bytes = 0
	q.busy = true
	q.cond.Broadcast()
	return batch, true
}

// barrier runs f in dispatch order: at once (on the caller's goroutine, with
// the dispatcher held off) when nothing is queued or being delivered, else
// queued behind what is. Saves a hand-off when a turn ends after its
// updates were all delivered.
func (q *queue) barrier(f func()) {
	q.mu.Lock()
	if len(q.items) == 0 && !q.busy && !q.closed {
		f()
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, item{kind: itemBarrier, barrier: f})
	q.cond.Broadcast()
	q.mu.Unlock()
}

// lift raises (+1) or lowers (-1) the count of calls that suspend the bound.
func (q *queue) lift(delta int) {
	q.mu.Lock()
	q.lifted += delta
	q.cond.Broadcast()
	q.mu.Unlock()
}

// close lets pop drain what is queued and then report the end.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}

// dispatcher delivers the queued items in wire order on one goroutine, the
// only one that runs OnUpdate and stream emitters. It owns the queue, the
// session of the previous update (most updates repeat it) and the items
// held back while a session/new waits for its answer (see park). It looks
// sessions up in the connection's table, counts what names others, and
// hands permission requests to the broker once their turn has seen them.
type dispatcher struct {
	q        *queue
	cb       *callbacks
	ended    chan struct{} // closed when the dispatcher has ended
	sessions *sessionTable
	foreign  foreign
	perms    *broker

	last      *sessionState
	parked    []item
	parkedSz  int
	releasing bool
}

// run delivers queued items in order until the queue is closed and
// drained.
func (d *dispatcher) run() {
	defer close(d.ended)
	d.cb.setDispatcher(goid())
	var batch []item
	for {
		var ok bool
		if batch, ok = d.q.popAll(batch); !ok {
			return
		}
		for _, it := range batch {
			d.dispatch(it)
		}
	}
}

// dispatch delivers one queued item.
func (d *dispatcher) dispatch(it item) {
	switch it.kind {
	case itemUpdate:
		d.dispatchUpdate(it)
	case itemPermission:
		if it.req != nil {
			d.dispatchPermission(it, it.req)
		} else if req, ok := parsePermission(it); ok {
			d.dispatchPermission(it, req)
		}
	case itemBarrier:
		it.barrier()
	}
}

// dispatchUpdate delivers an update to the session it names, if the
// connection knows it (see park for one being opened); an update for any
// other session is skipped and counted.
func (d *dispatcher) dispatchUpdate(it item) {
	hint := ""
	if d.last != nil {
		hint = d.last.id
	}
	u := acp.DecodeOwnedUpdate(it.params, hint) // it.params: the stream's copy, kept only by the update
	s := d.last
	if s == nil || s.id != u.SessionID() || s.dropped.Load() {
		s = d.sessions.known(u.SessionID())
	}
	if d.park(it, s == nil) {
		return
	}
	if s == nil {
		d.foreign.count("a session it was not given", "method", "session/update", "session", u.SessionID())
		return
	}
	d.last = s
	d.deliverUpdate(s, u)
}

// dispatchPermission opens a permission request of a session the
// connection knows, and refuses one naming any other.
func (d *dispatcher) dispatchPermission(it item, req *acp.PermissionRequest) {
	s := d.sessions.known(req.SessionID)
	if d.park(it, s == nil) {
		return
	}
	if s == nil {
		d.foreign.refuse(it.in, "session/request_permission", req.SessionID)
		return
	}
	d.deliverPermission(s, it.in, req)
}

// parsePermission decodes a permission request's params; malformed ones
// are answered -32602 (off the calling goroutine) and ok is false.
func parsePermission(it item) (req *acp.PermissionRequest, ok bool) {
	req, err := acp.ParsePermissionRequest(it.params)
	if err != nil {
		it.in.goRefuse(acp.CodeInvalidParams, err.Error())
		return nil, false
	}
	return req, true
}

// openNow opens a permission request on the calling goroutine, the read
// loop, when that keeps wire order and runs no user code: nothing is
// queued, being delivered or held back (park), and the turn it arrives in
// has no stream (whose emitter opening calls). It holds the queue's lock
// meanwhile, so the dispatcher stays off the session's state. Opening hands
// the request to a broker goroutine (or answers it off the read loop), so
// the request costs one hand-off (read loop → broker) instead of two
// (read loop → dispatcher → broker). It reports false when the caller must
// queue it (then, if parsed, with its params in it.req).
func (d *dispatcher) openNow(it *item) bool {
	q := d.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 || q.busy || q.closed || len(d.parked) > 0 || d.sessions.isOpening() {
		return false
	}
	req, ok := parsePermission(*it)
	if !ok {
		return true // answered -32602, off the read loop
	}
	it.req = req
	s := d.sessions.known(req.SessionID)
	if s == nil || s.streaming() {
		return false
	}
	d.deliverPermission(s, it.in, req)
	return true
}

// park holds an item back while a session/new waits for its answer: an
// agent may speak of the new session (unknown) before answering, and
// every item after one held back is held too, to keep wire order. They are
// dispatched when no session/new waits any more (releaseParked), up to the
// queue's bounds; past them they are dispatched at once, unknown sessions
// then counting as foreign.
func (d *dispatcher) park(it item, unknown bool) bool {
	if d.releasing || (!unknown && len(d.parked) == 0) || !d.sessions.isOpening() {
		return false
	}
	if len(d.parked) >= d.q.limit || d.parkedSz+it.size > d.q.limitBytes {
		d.releaseParked()
		return false
	}
	d.parked = append(d.parked, it)
	d.parkedSz += it.size
	return true
}

// releaseParked dispatches the items park held back, in order; it runs
// on the dispatcher.
func (d *dispatcher) releaseParked() {
	parked := d.parked
	d.parked, d.parkedSz = nil, 0
	d.releasing = true
	for _, it := range parked {
		d.dispatch(it)
	}
	d.releasing = false
}

// deliverUpdate merges tool state, feeds the running turn and calls OnUpdate.
func (d *dispatcher) deliverUpdate(s *sessionState, u acp.Update) {
	toolSize := 0 // the merged tool call's size, counted once for the session and the turn
	switch u := u.(type) {
	case *acp.ToolCallUpdate:
		if u.ToolCall.ID != "" {
			var merged *acp.ToolCall
			merged, toolSize = s.tool(&u.ToolCall, u.Set)
			u.State = *merged
			s.checkChange(merged)
		}
	case *acp.CurrentModeUpdate:
		s.setCurrentMode(u.ModeID)
	case *acp.ConfigOptionUpdate:
		s.setState(nil, u.Options)
	case *acp.AvailableCommandsUpdate, *acp.SessionInfoUpdate, *acp.UsageUpdate:
		s.noteDetails(u)
	}
	if s.replaying.Load() {
		acpinternal.MarkReplay(u)
	}
	if f := s.onUpdate(); f != nil {
		d.cb.safely("OnUpdate", func() { f(u) })
	}
	if t := s.current(); t != nil {
		t.observe(u, toolSize)
		t.emitting.Done()
	}
}

// deliverPermission merges the request's tool call with what the
// session's updates said of it, shows the request to the running turn
// (its tool call, and the permission event on its stream) and hands it to
// the broker, which decides it off this goroutine.
func (d *dispatcher) deliverPermission(s *sessionState, in *inflight, req *acp.PermissionRequest) {
	size := 0
	var ask *toolAsk
	if req.ToolCall.ID != "" {
		var merged *acp.ToolCall
		merged, size = s.tool(&req.ToolCall, req.ToolCallSet)
		req.ToolCall = *merged
		if ask = s.markAsked(merged.ID); ask != nil && req.AnyOptionWrites() {
			ask.change = true
		}
	}
	if t := s.current(); t != nil {
		if req.ToolCall.ID != "" {
			t.observeTool(req.ToolCall, size, nil)
		}
		t.emit(StreamEvent{Type: EventPermission, Permission: req, Name: req.ToolCall.Title, ID: req.ToolCall.ID, Kind: req.ToolCall.Kind})
		t.emitting.Done()
	}
	d.perms.open(s, in, req, ask)
}

// flush waits until everything queued so far has been dispatched (or the
// dispatcher has ended).
func (d *dispatcher) flush() {
	done := make(chan struct{})
	d.q.push(item{kind: itemBarrier, barrier: func() { close(done) }}, false)
	select {
	case <-done:
	case <-d.ended:
	}
}
