package acphost

import (
	"encoding/json"
	"fmt"
	"sync"
)

// itemKind says what a queued item asks the dispatcher to do.
type itemKind uint8

const (
	itemUpdate     itemKind = iota // deliver a session/update
	itemPermission                 // start handling a session/request_permission
	itemBarrier                    // a prompt was answered: end its turn's delivery
	itemAnswer                     // a permission was answered: emit the event
)

// item is one entry of the ordered queue.
type item struct {
	kind    itemKind
	id      json.RawMessage
	params  json.RawMessage
	barrier func()
	answer  *permissionAnswered
	in      *inflight
}

// queue is the FIFO between the read loop and the dispatcher. Updates and
// permission requests are bounded: when more than limit wait (besides the
// batch being delivered), the read loop waits, which pauses reading and
// pushes back on the agent. The bound is lifted while a
// host→agent call other than a prompt waits for its answer, so a call made
// from OnUpdate can always be answered.
type queue struct {
	mu     sync.Mutex
	cond   sync.Cond
	items  []item
	busy   bool // the dispatcher is delivering a batch
	limit  int
	lifted int
	closed bool
}

func newQueue(limit int) *queue {
	q := &queue{limit: limit}
	q.cond.L = &q.mu
	return q
}

// push appends it, waiting for room when bounded.
func (q *queue) push(it item, bounded bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for bounded && !q.closed && q.lifted == 0 && len(q.items) >= q.limit {
		q.cond.Wait()
	}
	q.items = append(q.items, it)
	q.cond.Broadcast()
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

// dispatchLoop delivers queued items in order until the queue is closed and
// drained. It is the only goroutine that runs OnUpdate and stream emitters.
func (a *agent) dispatchLoop() {
	defer a.wg.Done()
	defer close(a.dispatched)
	a.cb.setDispatcher(goid())
	var last *session // the session of the previous update: most updates repeat it
	var batch []item
	for {
		var ok bool
		if batch, ok = a.q.popAll(batch); !ok {
			return
		}
		for _, it := range batch {
			switch it.kind {
			case itemUpdate:
				hint := ""
				if last != nil {
					hint = last.id
				}
				u := decodeUpdate(it.params, hint)
				if last == nil || last.id != u.SessionID() || last.dropped.Load() {
					last = a.session(u.SessionID())
				}
				a.deliverUpdate(last, u)
			case itemPermission:
				if req, ok := a.parsePermission(it.id, it.params, it.in); ok {
					a.openPermission(it.id, req, it.in)
				}
			case itemBarrier:
				it.barrier()
			case itemAnswer:
				a.emitAnswer(it.answer)
			}
		}
	}
}

// deliverUpdate merges tool state, feeds the running turn and calls OnUpdate.
func (a *agent) deliverUpdate(s *session, u Update) {
	switch u := u.(type) {
	case *ToolCallUpdate:
		if u.ToolCall.ID != "" {
			merged, _ := s.tool(&u.ToolCall, u.Set)
			u.State = *merged
		}
	case *CurrentModeUpdate:
		s.setCurrentMode(u.ModeID)
	case *ConfigOptionUpdate:
		s.setState(nil, u.Options)
	}
	if s.replaying.Load() {
		u.(interface{ markReplay() }).markReplay()
	}
	if f := s.onUpdate(); f != nil {
		a.safely("OnUpdate", func() { f(u) })
	}
	if t := s.current(); t != nil {
		t.observe(u)
		t.emitting.Done()
	}
}

// endDelivery runs when the dispatcher reaches a prompt's answer: every
// update before it has been delivered.
func (a *agent) endDelivery(t *turn) {
	t.s.endTurn(t)
	t.s.pruneTools()
	close(t.barrier)
}

// userCall runs user code for session on goroutine id, which is not the
// dispatcher: it is recorded as a callback goroutine (see callbacks) and a
// panic becomes an error. Reading the id costs a stack trace, cheapest where
// the stack is short: a goroutine that calls user code on every run reads
// it at its top.
func (a *agent) userCall(id uint64, session, what string, f func()) error {
	defer a.cb.enter(id, session)()
	return a.safely(what, f)
}

// safely runs user code, turning a panic into a logged error so one bad
// callback cannot take the host down.
func (a *agent) safely(what string, f func()) (err error) {
	a.cb.inUser.Add(1)
	defer func() {
		a.cb.inUser.Add(-1)
		if r := recover(); r != nil {
			err = fmt.Errorf("acphost: %s panicked: %v", what, r)
			a.opts.Logger.Error("acphost: callback panicked", "callback", what, "panic", r)
		}
	}()
	f()
	return nil
}

// flush waits until everything queued so far has been dispatched (or the
// dispatcher has ended).
func (a *agent) flush() {
	done := make(chan struct{})
	a.q.push(item{kind: itemBarrier, barrier: func() { close(done) }}, false)
	select {
	case <-done:
	case <-a.dispatched:
	}
}
