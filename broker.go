package acphost

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/fastjson"
)

// broker decides the agent's permission requests, each answered exactly
// once and never from the dispatcher: what needs no hook (plan mode, the
// default choice) at once, the rest on broker goroutines, which are kept
// for the next request (see start), the hook bounded by PermissionTimeout.
type broker struct {
	ctx      context.Context // the agent's: its end answers "closed" and ends idle brokers
	wg       *sync.WaitGroup // the agent's goroutines
	cb       *callbacks      // runs the hook
	log      *slog.Logger
	timeout  time.Duration // PermissionTimeout
	planMode func() bool   // the client's plan mode: reject what can change things
	poisoned func() bool   // the agent is abandoned: ask nobody

	idle  chan *pendingPermission // idle broker goroutines take requests here
	idleN atomic.Int32

	defaultWarned *atomic.Bool // the client's: the default answer was warned of
}

// pendingPermission is one request being decided, answered once through
// its inflight, whoever gets there first (hook, timeout, cancel, close).
type pendingPermission struct {
	b   *broker
	s   *sessionState
	t   *turn // the turn it arrived in, if any
	req *acp.PermissionRequest
	in  *inflight
	ask *toolAsk // where an allow is noted for detection (checkChange); nil: no tool call
	// order is the claimed answer's place against its turn's cancel; set
	// by the claimer, read by send.
	order answerOrder
}

// settle answers the request unless it was answered already; it reports
// whether this call answered.
func (p *pendingPermission) settle(ans PermissionAnswer) bool {
	ans, ok := p.claim(ans)
	if ok {
		p.send(ans)
	}
	return ok
}

// claim makes ans the request's only answer (see inflight.claim: the
// hook's ctx ends and a stream is shown the answer) — "cancelled" instead
// when its turn's cancel was decided first — and returns it; send must
// follow.
func (p *pendingPermission) claim(ans PermissionAnswer) (PermissionAnswer, bool) {
	o := p.s.orderAnswer(p, p.t, ans.Cancelled)
	if o.cancelled && !ans.Cancelled {
		ans = cancelledAnswer
	}
	var event func()
	if p.t != nil && p.t.streams() {
		event = func() { p.showAnswer(ans) }
	}
	if !p.in.claim(event) {
		o.written()
		return ans, false
	}
	p.order = o
	if p.ask != nil && ans.Option != nil && ans.Option.Kind.IsAllow() {
		p.ask.allowed.Store(true)
	}
	return ans, true
}

func (p *pendingPermission) arrivedIn(t *turn) {
	p.t = t
	if t != nil {
		p.in.askedIn(t)
	}
}

// withdrawn answers a request the agent withdrew ($/cancel_request), off
// the read loop.
func (p *pendingPermission) withdrawn() { p.b.goSettle(p, answerCancelled(ReasonWithdrawn)) }

var cancelledAnswer = answerCancelled(ReasonCancelled)

func (p *pendingPermission) claimCancelled() bool {
	_, ok := p.claim(cancelledAnswer)
	return ok
}

func (p *pendingPermission) sendCancelled() { p.send(cancelledAnswer) }

// send writes the answer claimed for the request, in its place against
// its turn's cancel (never on the read loop or the dispatcher: it may
// wait for session/cancel to be written).
func (p *pendingPermission) send(ans PermissionAnswer) {
	p.order.wait(p.b.ctx.Done())
	p.in.replyRaw(appendOutcome(make([]byte, 0, 64+len(ans.OptionID)), ans))
	p.order.written()
}

// appendOutcome appends the result of a session/request_permission answer.
func appendOutcome(b []byte, ans PermissionAnswer) []byte {
	if ans.Cancelled {
		return append(b, `{"outcome":{"outcome":"cancelled"}}`...)
	}
	b = append(b, `{"outcome":{"outcome":"selected","optionId":`...)
	b = fastjson.AppendString(b, ans.OptionID)
	return append(b, "}}"...)
}

// open decides a request the dispatcher has shown to its session's turn
// (see deliverPermission): at once when it needs no hook, else on a broker
// goroutine. It writes nothing itself, so neither the dispatcher nor the
// read loop (openNow) ever waits on the agent's stdin.
func (b *broker) open(s *sessionState, in *inflight, req *acp.PermissionRequest, ask *toolAsk) {
	p := &pendingPermission{b: b, s: s, req: req, in: in, ask: ask}
	cancelling := s.addPending(p)
	in.onWithdraw(p)
	var ans PermissionAnswer
	switch {
	case b.ctx.Err() != nil: // the agent is gone: ask nobody
		ans = answerCancelled(ReasonClosed)
	case cancelling, b.poisoned(): // a cancelled turn, or an abandoned agent
		ans = answerCancelled(ReasonCancelled)
	case in.ctx.Err() != nil:
		ans = answerCancelled(ReasonWithdrawn) // $/cancel_request came first
	default:
		if !b.decideAtOnce(p) {
			b.start(p)
		}
		return
	}
	b.goSettle(p, ans)
}

// goSettle answers p from a goroutine of its own, so the caller never
// waits on the agent's stdin.
func (b *broker) goSettle(p *pendingPermission, ans PermissionAnswer) {
	ans, ok := p.claim(ans)
	if ok {
		b.wg.Go(func() { p.send(ans) })
	}
}

// decideAtOnce decides what needs no hook (plan mode, the default choice)
// at once, sparing the broker goroutines.
func (b *broker) decideAtOnce(p *pendingPermission) bool {
	var ans PermissionAnswer
	switch {
	case b.planMode() && !p.req.ReadOnly():
		ans = rejectAnswer(p.req, ReasonPlanMode, nil)
	case p.s.onPermission() == nil:
		ans = answerCancelled(ReasonDefault)
		if id := DefaultPermission(p.req); id != "" {
			ans = PermissionAnswer{OptionID: id, Option: p.req.Option(id), Reason: ReasonDefault}
			b.warnDefault(p.req, id)
		}
	default:
		return false
	}
	b.goSettle(p, ans)
	return true
}

// warnDefault warns the Logger, once per client, that a request was
// allowed because no OnPermission is set: the seed's contract, kept, but
// one a host treating its agent as hostile should choose, not inherit.
func (b *broker) warnDefault(req *acp.PermissionRequest, id string) {
	if b.defaultWarned == nil || b.defaultWarned.Swap(true) {
		return
	}
	b.log.Warn("acphost: no OnPermission is set, so the agent's permission requests are allowed (the first allow option); set ACPOptions.OnPermission (RejectChanges, AllowReads, or a person) to decide",
		"session", req.SessionID, "kind", req.ToolCall.Kind, "option", id)
}

// maxIdleBrokers bounds the broker goroutines kept waiting for requests.
const maxIdleBrokers = 4

// start hands p to an idle broker goroutine, or starts one. Brokers are
// reused, so a host answering request after request neither starts a
// goroutine nor reads a goroutine id (see userCall) for each; an idle one
// ends with the agent, or at once when enough others wait.
func (b *broker) start(p *pendingPermission) {
	select {
	case b.idle <- p:
		return
	default:
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		id := goid()
		for {
			b.decide(id, p)
			if b.idleN.Add(1) > maxIdleBrokers {
				b.idleN.Add(-1)
				return
			}
			select {
			case p = <-b.idle:
				b.idleN.Add(-1)
			case <-b.ctx.Done():
				b.idleN.Add(-1)
				return
			}
		}
	}()
}

// decide decides one request on broker goroutine id: the hook (or the
// default) bounded by PermissionTimeout, with panics and bad answers turned
// into a rejection. A timeout or the client's end answers the request while
// the hook is still running.
func (b *broker) decide(id uint64, p *pendingPermission) {
	hook := p.s.onPermission()
	ctx, cancel := p.in.ctx, context.CancelFunc(func() {})
	if d := b.timeout; d > 0 {
		ctx, cancel = context.WithTimeout(p.in.ctx, d)
	}
	defer cancel()
	ended := func() { // ctx ended before the hook answered
		switch {
		case p.in.ctx.Err() == nil: // only the timeout fired
			p.settle(rejectAnswer(p.req, ReasonTimeout, ctx.Err()))
		case b.ctx.Err() != nil:
			p.settle(answerCancelled(ReasonClosed))
		}
		// Otherwise a cancel or $/cancel_request already answered it.
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		ended()
	})
	ans := b.askHook(ctx, id, hook, p.req)
	switch {
	case !stop():
		<-fired // it answered; part of this goroutine's work
	case ctx.Err() != nil:
		ended() // ctx ended, but the AfterFunc had not started yet
	default:
		p.settle(ans)
	}
}

// askHook calls OnPermission and validates its answer.
func (b *broker) askHook(ctx context.Context, gid uint64, hook func(context.Context, *acp.PermissionRequest) (string, error), req *acp.PermissionRequest) PermissionAnswer {
	var id string
	var err error
	if perr := b.cb.userCall(gid, req.SessionID, "OnPermission", func() { id, err = hook(ctx, req) }); perr != nil {
		err = perr
	}
	if err != nil {
		return rejectAnswer(req, ReasonInvalid, err)
	}
	o := req.Option(id)
	if id == "" || o == nil {
		return rejectAnswer(req, ReasonInvalid, fmt.Errorf("acphost: OnPermission answered %q, which was not offered", id))
	}
	return PermissionAnswer{OptionID: id, Option: o, Reason: ReasonHook}
}

// showAnswer tells the turn's stream what was answered (on the
// dispatcher, in wire order).
func (p *pendingPermission) showAnswer(ans PermissionAnswer) {
	p.s.emitTo(p.t, StreamEvent{Type: EventPermissionAnswer, Permission: p.req, Answer: &ans, ID: p.req.ToolCall.ID, Name: p.req.ToolCall.Title})
}

// rejectAnswer is the answer for errors and timeouts: the first reject_once
// option, else any reject-kind option, else "cancelled".
func rejectAnswer(req *acp.PermissionRequest, r AnswerReason, err error) PermissionAnswer {
	id := RejectOption(req)
	o := req.Option(id)
	if id == "" || o == nil {
		return PermissionAnswer{Cancelled: true, Reason: r, Err: err}
	}
	return PermissionAnswer{OptionID: o.ID, Option: o, Reason: r, Err: err}
}
