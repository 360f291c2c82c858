package acphost

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/wire"
)

// elicitor answers the agent's elicitations, each exactly once through its
// inflight and never on the read loop or the dispatcher: the hook runs on
// a goroutine of its own, bounded by Elicitation.Timeout; a cancelled turn,
// a withdrawal, the end of the client's request a request-scoped one
// belongs to, or the agent's end answers it "cancel" while the hook may
// still run. What it needs of its agent it is given, as the broker is.
type elicitor struct {
	ctx      context.Context // the agent's: its end answers "closed"
	wg       *sync.WaitGroup // the agent's goroutines
	cb       *callbacks      // runs the hook
	log      *slog.Logger
	timeout  time.Duration   // Elicitation.Timeout
	hook     ElicitationFunc // ACPOptions.Elicitation.OnRequest: the request-scoped ones, and sessions without their own
	poisoned func() bool     // the agent is abandoned: ask nobody
	urls     acceptedURLs    // accepted URL elicitations awaiting elicitation/complete
}

// pendingElicitation is one request being answered, once, through its
// inflight (hook, timeout, cancel, the end of its request, close).
type pendingElicitation struct {
	e   *elicitor
	s   *sessionState // its session; nil in request scope
	t   *turn         // the turn it arrived in, if any
	req *acp.ElicitationRequest
	in  *inflight
	// ctx is the hook's (before Elicitation.Timeout): a child of in.ctx that
	// end also ends, with ErrRequestEnded, when the client's request a
	// request-scoped elicitation belongs to ends.
	ctx     context.Context
	end     context.CancelCauseFunc
	unwatch func() // forgets the watch of its request (request scope)
	// order is the claimed answer's place against its turn's cancel
	// (session scope); set by the claimer, read by send.
	order answerOrder
}

// newPending makes the record of a request read on the read loop; in is
// registered for $/cancel_request already.
func (e *elicitor) newPending(s *sessionState, in *inflight, req *acp.ElicitationRequest) *pendingElicitation {
	p := &pendingElicitation{e: e, s: s, in: in, req: req}
	p.ctx, p.end = context.WithCancelCause(in.ctx)
	return p
}

// hookFor is the hook that answers an elicitation of session s: its own,
// or for a request-scoped one (s nil) the client's.
func (e *elicitor) hookFor(s *sessionState) ElicitationFunc {
	if s != nil {
		return s.onElicitation()
	}
	return e.hook
}

// requestEnded runs when the client's request p belongs to ends (on the
// goroutine that ends it, the read loop for an answer; it may run before
// Watch has returned, so it reads nothing of p's that is set after): the
// hook's ctx ends and p is answered "cancel".
func (p *pendingElicitation) requestEnded() { p.end(ErrRequestEnded) }

// open runs on the dispatcher for a session-scoped request, after every
// update read before it: it binds it to its session's turn, emits the
// stream event and starts it.
func (p *pendingElicitation) open() {
	cancelling := p.s.addPending(p)
	p.s.emitTo(p.t, StreamEvent{Type: EventElicitation, Elicitation: p.req, ID: p.req.ToolCallID})
	p.start(cancelling)
}

func (p *pendingElicitation) arrivedIn(t *turn) {
	p.t = t
	if t != nil {
		p.in.askedIn(t) // a person is asked: not idle
	}
}

// start asks the hook on a goroutine of its own — unless the client is
// closing or the turn it arrived in is being cancelled (cancelling), when
// it is answered "cancel" at once.
func (p *pendingElicitation) start(cancelling bool) {
	e := p.e
	switch {
	case e.ctx.Err() != nil:
		p.goSettle(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonClosed})
	case cancelling, e.poisoned(): // a cancelled turn, or an abandoned agent
		p.goSettle(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonCancelled})
	default:
		e.wg.Go(p.run)
	}
}

// run asks the hook, bounded by Elicitation.Timeout; the request's ctx
// ending ($/cancel_request, the end of its request, the client's end, a
// settle by a cancelled turn) answers it while the hook may still run. A
// request whose ctx ended before the hook was asked is answered without
// asking it.
func (p *pendingElicitation) run() {
	if p.ctx.Err() != nil {
		p.ended(p.ctx)
		return
	}
	ctx, cancel := p.ctx, context.CancelFunc(func() {})
	if d := p.e.timeout; d > 0 {
		ctx, cancel = context.WithTimeout(p.ctx, d)
	}
	defer cancel()
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		p.ended(ctx)
	})
	ans := p.ask(ctx)
	switch {
	case !stop():
		<-fired
	case ctx.Err() != nil:
		p.ended(ctx)
	default:
		p.settle(ans)
	}
}

// ended answers a request whose ctx ended before the hook answered.
func (p *pendingElicitation) ended(ctx context.Context) {
	switch {
	case p.e.ctx.Err() != nil:
		p.settle(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonClosed})
	case p.in.ctx.Err() != nil: // withdrawn by the agent (or settled already)
		p.settleWith(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonWithdrawn}, errRequestCancelled)
	case p.ctx.Err() != nil: // the client's request it belongs to ended
		p.settle(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonRequestEnded, Err: fmt.Errorf("%w: %s", ErrRequestEnded, p.req.Method)})
	default:
		p.settle(ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonTimeout, Err: ctx.Err()})
	}
}

// ask calls the hook and checks its answer: an error, a panic, an unknown
// action or content that does not fit the schema answers "cancel" (the
// user chose nothing the agent can use), with Err saying why.
func (p *pendingElicitation) ask(ctx context.Context) ElicitationAnswer {
	hook := p.e.hookFor(p.s)
	var ans ElicitationAnswer
	var err error
	if perr := p.e.cb.userCall(goid(), p.req.SessionID, "OnElicitation", func() { ans, err = hook(ctx, p.req) }); perr != nil {
		err = perr
	}
	if err == nil {
		ans, err = checkElicitationAnswer(p.req, ans)
	}
	if err != nil {
		p.e.log.Warn("acphost: OnElicitation answer refused; answered cancel", "session", p.req.SessionID, "method", p.req.Method, "err", err)
		return ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonInvalid, Err: err}
	}
	ans.Reason = ReasonHook
	return ans
}

// goSettle answers from a goroutine of its own, so the caller (the
// dispatcher, the read loop) never waits on the agent's stdin.
func (p *pendingElicitation) goSettle(ans ElicitationAnswer) {
	if ans, rpcErr, ok := p.claim(ans, nil); ok {
		p.e.wg.Go(func() { p.send(ans, rpcErr) })
	}
}

var cancelledElicitation = ElicitationAnswer{Action: acp.ElicitCancel, Reason: ReasonCancelled}

func (p *pendingElicitation) claimCancelled() bool {
	_, _, ok := p.claim(cancelledElicitation, nil)
	return ok
}

func (p *pendingElicitation) sendCancelled() { p.send(cancelledElicitation, nil) }

func (p *pendingElicitation) settle(ans ElicitationAnswer) { p.settleWith(ans, nil) }

// settleWith sends ans (or rpcErr instead) unless the request was answered
// already.
func (p *pendingElicitation) settleWith(ans ElicitationAnswer, rpcErr *wire.Error) {
	if ans, rpcErr, ok := p.claim(ans, rpcErr); ok {
		p.send(ans, rpcErr)
	}
}

// claim makes ans (or rpcErr) the request's only answer — "cancel"
// instead when its turn's cancel was decided first — and returns it: it
// ends the hook's ctx, forgets the request, shows the answer to the
// turn's stream and remembers an accepted URL elicitation for
// elicitation/complete; send must follow.
func (p *pendingElicitation) claim(ans ElicitationAnswer, rpcErr *wire.Error) (ElicitationAnswer, *wire.Error, bool) {
	var o answerOrder
	if p.s != nil {
		o = p.s.orderAnswer(p, p.t, rpcErr == nil && ans.Action == acp.ElicitCancel)
		if o.cancelled && (rpcErr != nil || ans.Action != acp.ElicitCancel) {
			ans, rpcErr = cancelledElicitation, nil
		}
	}
	var event func()
	if p.t != nil && p.t.streams() {
		event = func() { p.showAnswer(ans) }
	}
	if !p.in.claim(event) {
		o.written()
		return ans, rpcErr, false
	}
	p.order = o
	if p.unwatch != nil {
		p.unwatch()
	}
	if rpcErr == nil && ans.Action == acp.ElicitAccept && p.req.Mode == acp.ModeURL {
		p.e.urls.accepted(acp.ElicitationComplete{ElicitationID: p.req.ElicitationID, SessionID: p.req.SessionID, Method: p.req.Method})
	}
	return ans, rpcErr, true
}

// send writes the claimed answer, in its place against its turn's cancel
// (never on the read loop or the dispatcher: it may wait for
// session/cancel to be written).
func (p *pendingElicitation) send(ans ElicitationAnswer, rpcErr *wire.Error) {
	var result any
	if rpcErr == nil {
		result = elicitationResult{Action: ans.Action, Content: ans.Content}
	}
	p.order.wait(p.e.ctx.Done())
	p.in.reply(result, rpcErr)
	p.order.written()
}

type elicitationResult struct {
	Action  acp.ElicitationAction `json:"action"`
	Content map[string]any        `json:"content,omitempty"`
}

// showAnswer tells the turn's stream what was answered (on the
// dispatcher).
func (p *pendingElicitation) showAnswer(ans ElicitationAnswer) {
	p.s.emitTo(p.t, StreamEvent{Type: EventElicitationAnswer, Elicitation: p.req, ElicitationAnswer: &ans, ID: p.req.ToolCallID})
}

// maxURLElicitations bounds the accepted URL elicitations remembered for
// elicitation/complete; past it the oldest are forgotten.
const maxURLElicitations = 256

// acceptedURLs are the accepted URL elicitations awaiting
// elicitation/complete, oldest first.
type acceptedURLs struct {
	mu   sync.Mutex
	urls []acp.ElicitationComplete
}

func (r *acceptedURLs) accepted(c acp.ElicitationComplete) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = slices.DeleteFunc(r.urls, func(u acp.ElicitationComplete) bool { return u.ElicitationID == c.ElicitationID })
	if len(r.urls) >= maxURLElicitations {
		r.urls = slices.Delete(r.urls, 0, 1)
	}
	r.urls = append(r.urls, c)
}

// complete forgets an accepted URL elicitation; ok is false for an id
// unknown or completed already.
func (r *acceptedURLs) complete(id string) (c acp.ElicitationComplete, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, u := range r.urls {
		if u.ElicitationID == id {
			r.urls = slices.Delete(r.urls, i, i+1)
			return u, true
		}
	}
	return acp.ElicitationComplete{}, false
}
