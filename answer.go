// Answering the agent: every agent→client request — a permission, an
// elicitation, an fs or terminal call, one refused — is answered exactly
// once, by whoever gets there first: its hook or handler, a timeout, the
// agent's $/cancel_request, a cancelled turn, the client's end. inflight is
// that one answer; the kinds of request add only what is theirs.

package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/wire"
)

// replier is what every request's answer needs of its connection: where
// answers are written, where a failed write is logged, the goroutines that
// write answers off the read loop and the dispatcher, and the queue that
// carries answer events to a turn's stream in dispatch order.
type replier struct {
	conn *wire.Conn
	log  *slog.Logger
	wg   *sync.WaitGroup // the agent's goroutines
	q    *queue
}

// inflight is one agent→client request being handled: its share of the
// request budget and, for the requests $/cancel_request can end, a ctx
// that cancel ends (a child of the agent's: its death ends them all).
// Those are registered with the connection as the request is read (see
// cancellable), so a $/cancel_request that arrives before the handler
// starts is not lost. claim makes one caller its answerer, once.
type inflight struct {
	rp       *replier
	id       json.RawMessage
	budget   *requestBudget
	size     int                // the bytes of its share of the request budget
	ctx      context.Context    // set by cancellable, which also tracks it; nil for a request $/cancel_request cannot end
	cancel   context.CancelFunc // nil with ctx
	withdraw atomic.Value       // a withdrawer: what $/cancel_request does besides ending ctx
	waiter   waiter             // the turn that waits for this answer (see askedIn); nil: none
	claimed  sync.Once
	finished atomic.Bool
}

// newInflight takes a request whose share of the budget was acquired.
func (rp *replier) newInflight(id json.RawMessage, budget *requestBudget, size int) *inflight {
	return &inflight{rp: rp, id: id, budget: budget, size: size}
}

// cancellable gives in a ctx, a child of life, and registers it under its
// id for $/cancel_request.
func (in *inflight) cancellable(life context.Context) *inflight {
	in.ctx, in.cancel = context.WithCancel(life)
	in.rp.conn.Track(in.id, in)
	return in
}

// Cancel handles the agent's $/cancel_request for the request: its
// handler sees its ctx end, and the withdrawer registered with onWithdraw
// is told (a permission is answered "cancelled" at once).
func (in *inflight) Cancel() {
	in.cancel()
	if w, ok := in.withdraw.Load().(withdrawer); ok {
		w.withdrawn()
	}
}

// withdrawer is told of a $/cancel_request for its request.
type withdrawer interface{ withdrawn() }

// onWithdraw registers what $/cancel_request does besides ending the ctx;
// one concrete type per process (an atomic.Value's rule): the
// permissions'.
func (in *inflight) onWithdraw(w withdrawer) { in.withdraw.Store(w) }

// waiter is what a request asks of the turn that waits for its answer
// (a *turn): to count it while a person is asked, and whether the turn
// streams the answer's event.
type waiter interface {
	askBegan()
	askEnded()
	streams() bool
}

// askedIn records that w waits for a person to answer this request (it is
// not idle meanwhile); claim ends that. Call it before the request can be
// claimed by another goroutine.
func (in *inflight) askedIn(w waiter) {
	in.waiter = w
	w.askBegan()
}

// claim makes the caller the request's only answerer: the first call ends
// the request's ctx, stops $/cancel_request reaching it, ends its turn's
// wait and, when that turn has a stream, queues event for the dispatcher
// (which runs it in wire order). It reports whether this call claimed it;
// the claimer must then answer (reply, replyRaw).
func (in *inflight) claim(event func()) bool {
	first := false
	in.claimed.Do(func() {
		first = true
		if in.cancel != nil { // cancellable: it has a ctx and is tracked
			in.cancel()
			in.rp.conn.Untrack(in.id)
		}
		if w := in.waiter; w != nil {
			w.askEnded()
			if event != nil && w.streams() {
				in.rp.q.push(item{kind: itemBarrier, barrier: event}, false)
			}
		}
	})
	return first
}

// reply writes the claimed request's answer and returns its share of the
// request budget.
func (in *inflight) reply(result any, rpcErr *wire.Error) {
	in.replied(in.rp.conn.Reply(in.id, result, rpcErr))
}

// replyRaw is reply with a result already encoded.
func (in *inflight) replyRaw(result []byte) {
	in.replied(in.rp.conn.ReplyRaw(in.id, result))
}

func (in *inflight) replied(err error) {
	if err != nil && !errors.Is(err, wire.ErrWritesAborted) {
		// Refused by the link (a MessageLink's bound on a message
		// written) with the agent still there: it gets an answer that
		// fits instead, or it would wait for one that never comes.
		err = in.rp.conn.Reply(in.id, nil, errAnswerNotSent)
	}
	if err != nil { // the agent is going
		in.rp.log.Debug("acphost: reply failed", "id", string(in.id), "err", err)
	}
	in.finish()
}

// answer claims the request and, if this call claimed it, replies.
func (in *inflight) answer(result any, rpcErr *wire.Error) {
	if in.claim(nil) {
		in.reply(result, rpcErr)
	}
}

// goAnswer is answer off the calling goroutine (the read loop, the
// dispatcher, a cancelling turn), which must never wait on the agent's
// stdin.
func (in *inflight) goAnswer(result any, rpcErr *wire.Error) {
	if !in.claim(nil) {
		return
	}
	in.rp.wg.Go(func() { in.reply(result, rpcErr) })
}

// goRefuse answers the request with a JSON-RPC error, off the calling
// goroutine.
func (in *inflight) goRefuse(code int, msg string) {
	in.goAnswer(nil, &wire.Error{Code: code, Message: msg})
}

// finish returns in's share of the request budget, once: call it when the
// request has been answered (or its answer failed, or the agent is being
// stopped). A nil in has no share.
func (in *inflight) finish() {
	if in != nil && in.finished.CompareAndSwap(false, true) {
		in.budget.release(in.size)
	}
}

// answerOrder is where the answer to a request waiting for a person (a
// permission, a session's elicitation) stands against its turn's cancel,
// as sessionState.orderAnswer decided it when the answer was claimed.
type answerOrder struct {
	// cancelled: the cancel was decided first, so the answer must be
	// "cancelled", written once after (closed when session/cancel has
	// been written, or the turn ended without it; nil: no wait).
	cancelled bool
	after     <-chan struct{}
	// tracked counts, for the turn whose session/cancel waits for it, this
	// answer decided before the cancel until it is written (turn.answering).
	tracked *sync.WaitGroup
}

// wait holds a cancelled turn's answer until session/cancel has been
// written, or the agent (dead: done) cannot be written to anyway. Never
// on the read loop or the dispatcher.
func (o *answerOrder) wait(done <-chan struct{}) {
	if o.after != nil {
		select {
		case <-o.after:
		case <-done:
		}
	}
}

// written tells a cancel waiting for this answer that it is on the wire
// (or failed, or was never claimed).
func (o *answerOrder) written() {
	if o.tracked != nil {
		o.tracked.Done()
	}
}

// errAnswerNotSent answers a request whose answer the link refused to
// write (see replied).
var errAnswerNotSent = &wire.Error{Code: acp.CodeInternalError, Message: "the answer could not be sent: the link refused it (over its message bound)"}

// errRequestCancelled answers a request the agent withdrew.
var errRequestCancelled = &wire.Error{Code: acp.CodeRequestCancelled, Message: "request cancelled"}
