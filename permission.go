package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/internal/fastjson"
	"github.com/acphost/acphost/internal/wire"
)

// PermissionKind is the kind of a permission option: a hint for icons and
// policies. The set is open; unknown kinds are kept as sent.
type PermissionKind string

// The permission option kinds of ACP v1.
const (
	AllowOnce    PermissionKind = "allow_once"
	AllowAlways  PermissionKind = "allow_always"
	RejectOnce   PermissionKind = "reject_once"
	RejectAlways PermissionKind = "reject_always"
)

// IsAllow reports whether k is allow_once or allow_always.
func (k PermissionKind) IsAllow() bool { return k == AllowOnce || k == AllowAlways }

// IsReject reports whether k is reject_once or reject_always.
func (k PermissionKind) IsReject() bool { return k == RejectOnce || k == RejectAlways }

// PermissionRequest is a session/request_permission from the agent, decoded.
type PermissionRequest struct {
	// SessionID is the session asking.
	SessionID string
	// ToolCall is the tool call the agent wants to run, merged with what
	// earlier tool_call and tool_call_update updates said about the same id.
	ToolCall ToolCall
	// Options are the answers the agent offers, in the agent's order.
	Options []PermissionOption
	// Presentation is the permission prompt text some agents attach.
	Presentation Presentation
	// Raw is the request's params, exactly as received.
	Raw json.RawMessage

	toolSet ToolCallFields // which toolCall fields the agent sent
}

// PermissionOption is one answer the agent offers.
type PermissionOption struct {
	// ID is the optionId, byte-exact; answer with it.
	ID   string
	Name string
	Kind PermissionKind
	// Meta is the option's decoded metadata (structured changes, description).
	Meta OptionMeta
	// Raw is the option object as received.
	Raw json.RawMessage
}

// AnswerReason says why a permission request got its answer.
type AnswerReason string

// The reasons of a PermissionAnswer.
const (
	ReasonHook      AnswerReason = "hook"      // OnPermission (the caller's own function, or a policy) chose an offered option: a UI that asked a person shows it as theirs
	ReasonDefault   AnswerReason = "default"   // no OnPermission: the default choice
	ReasonPlanMode  AnswerReason = "plan_mode" // plan mode rejected a tool that can change things
	ReasonInvalid   AnswerReason = "invalid"   // OnPermission returned an error, a panic, "" or an id not offered
	ReasonTimeout   AnswerReason = "timeout"   // PermissionTimeout fired
	ReasonCancelled AnswerReason = "cancelled" // the turn was cancelled
	ReasonWithdrawn AnswerReason = "withdrawn" // the agent sent $/cancel_request
	// ReasonRequestEnded: the client's request a request-scoped elicitation
	// belongs to ended (answered, failed or abandoned) before the hook
	// answered; elicitations only.
	ReasonRequestEnded AnswerReason = "request_ended"
	ReasonClosed       AnswerReason = "closed" // the client closed
)

// PermissionAnswer is what the client answered to a permission request.
type PermissionAnswer struct {
	// OptionID is the selected option; empty when Cancelled.
	OptionID string
	// Option is the selected option, nil when Cancelled.
	Option *PermissionOption
	// Cancelled is true for the {"outcome":"cancelled"} answer.
	Cancelled bool
	Reason    AnswerReason
	// Err is the hook's error or panic, for ReasonInvalid.
	Err error
}

func answerCancelled(r AnswerReason) PermissionAnswer {
	return PermissionAnswer{Cancelled: true, Reason: r}
}

// DefaultPermission is the choice made when ACPOptions.OnPermission is nil:
// AllowOption (allow_once first), else RejectOption (reject_once first);
// "" (answered "cancelled") when the agent offered neither kind.
func DefaultPermission(req *PermissionRequest) string {
	if id := AllowOption(req); id != "" {
		return id
	}
	return RejectOption(req)
}

// firstOf returns the first option of this kind.
func (req *PermissionRequest) firstOf(kind PermissionKind) *PermissionOption {
	for i := range req.Options {
		if req.Options[i].Kind == kind {
			return &req.Options[i]
		}
	}
	return nil
}

// Option returns the offered option with this id, or nil.
func (req *PermissionRequest) Option(id string) *PermissionOption {
	for i := range req.Options {
		if req.Options[i].ID == id {
			return &req.Options[i]
		}
	}
	return nil
}

// rejectAnswer is the answer for errors and timeouts: the first reject_once
// option, else any reject-kind option, else "cancelled".
func (req *PermissionRequest) rejectAnswer(r AnswerReason, err error) PermissionAnswer {
	id := RejectOption(req)
	o := req.Option(id)
	if id == "" || o == nil {
		return PermissionAnswer{Cancelled: true, Reason: r, Err: err}
	}
	return PermissionAnswer{OptionID: o.ID, Option: o, Reason: r, Err: err}
}

// broker decides the agent's permission requests, each answered exactly
// once and never from the dispatcher: what needs no hook (plan mode, the
// default choice) at once, the rest on broker goroutines, which are kept
// for the next request (see start), the hook bounded by PermissionTimeout.
type broker struct {
	ctx      context.Context // the agent's: its end answers "closed" and ends idle brokers
	wg       *sync.WaitGroup // the agent's goroutines
	cb       *callbacks      // runs the hook
	conn     *wire.Conn      // the answers, and the requests $/cancel_request can reach
	q        *queue          // the answers' stream events, in dispatch order
	log      *slog.Logger
	timeout  time.Duration // PermissionTimeout
	planMode func() bool   // the client's plan mode: reject what can change things
	poisoned func() bool   // the agent is abandoned: ask nobody

	idle  chan *pendingPermission // idle broker goroutines take requests here
	idleN atomic.Int32
}

// pendingPermission is one request being decided. settle answers it exactly
// once, whoever gets there first (hook, timeout, cancel, close).
type pendingPermission struct {
	b      *broker
	s      *sessionState
	t      *turn // the turn it arrived in, if any
	id     json.RawMessage
	req    *PermissionRequest
	ctx    context.Context
	cancel context.CancelFunc
	in     *inflight
	once   sync.Once
	ask    *toolAsk // where an allow is noted for detection (checkChange); nil: no tool call
}

// settle answers the request unless it was answered already; it reports
// whether this call answered.
func (p *pendingPermission) settle(ans PermissionAnswer) bool {
	if !p.claim(ans) {
		return false
	}
	p.send(ans)
	return true
}

// claim makes ans the request's only answer, ends the hook's ctx and queues
// the answer's stream event, if its turn has a stream; send must follow.
func (p *pendingPermission) claim(ans PermissionAnswer) bool {
	first := false
	p.once.Do(func() {
		first = true
		if p.ask != nil && ans.Option != nil && ans.Option.Kind.IsAllow() {
			p.ask.allowed.Store(true)
		}
		p.cancel()
		p.s.mu.Lock()
		delete(p.s.pending, p)
		p.s.mu.Unlock()
		p.b.conn.Untrack(p.id)
		if p.t == nil {
			return
		}
		p.t.waitingPerms.Add(-1)
		p.t.touch()
		if p.t.emitFn != nil { // only a stream shows answers
			p.b.q.push(item{kind: itemAnswer, answer: &permissionAnswered{p: p, ans: ans}}, false)
		}
	})
	return first
}

// send writes the answer claimed for the request.
func (p *pendingPermission) send(ans PermissionAnswer) {
	result := appendOutcome(make([]byte, 0, 64+len(ans.OptionID)), ans)
	replied(p.b.log, p.id, p.b.conn.ReplyRaw(p.id, result))
	p.in.finish()
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

// permissionAnswered carries an answer to the dispatcher for the stream.
type permissionAnswered struct {
	p   *pendingPermission
	ans PermissionAnswer
}

// open runs on the dispatcher once every earlier update was delivered: it
// merges the tool call, emits the permission event and decides the request,
// or hands it to a broker goroutine. It writes nothing itself, so the
// dispatcher never waits on the agent's stdin.
func (b *broker) open(s *sessionState, it item, req *PermissionRequest) {
	in := it.in
	size := 0
	var ask *toolAsk
	if req.ToolCall.ID != "" {
		var merged *ToolCall
		merged, size = s.tool(&req.ToolCall, req.toolSet)
		req.ToolCall = *merged
		ask = s.markAsked(merged.ID)
	}
	p := &pendingPermission{b: b, s: s, id: it.id, req: req, ctx: in.ctx, cancel: in.cancel, in: in, ask: ask}
	in.perm.Store(p)
	s.mu.Lock()
	p.t = s.turn
	cancelling := p.t != nil && p.t.cancelled
	s.pending[p] = struct{}{}
	s.mu.Unlock()
	if p.t != nil {
		p.t.waitingPerms.Add(1)
	}
	if t := s.current(); t != nil {
		if req.ToolCall.ID != "" {
			t.observeTool(req.ToolCall, size, nil)
		}
		t.emit(StreamEvent{Type: EventPermission, Permission: req, Name: req.ToolCall.Title, ID: req.ToolCall.ID, Kind: req.ToolCall.Kind})
		t.emitting.Done()
	}
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
	if !p.claim(ans) {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		p.send(ans)
	}()
}

// decideAtOnce decides what needs no hook (plan mode, the default choice)
// at once, sparing the broker goroutines.
func (b *broker) decideAtOnce(p *pendingPermission) bool {
	var ans PermissionAnswer
	switch {
	case b.planMode() && !ReadOnlyKind(p.req.ToolCall.Kind):
		ans = p.req.rejectAnswer(ReasonPlanMode, nil)
	case p.s.onPermission() == nil:
		ans = answerCancelled(ReasonDefault)
		if id := DefaultPermission(p.req); id != "" {
			ans = PermissionAnswer{OptionID: id, Option: p.req.Option(id), Reason: ReasonDefault}
		}
	default:
		return false
	}
	b.goSettle(p, ans)
	return true
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
	ctx, cancel := p.ctx, context.CancelFunc(func() {})
	if d := b.timeout; d > 0 {
		ctx, cancel = context.WithTimeout(p.ctx, d)
	}
	defer cancel()
	ended := func() { // ctx ended before the hook answered
		switch {
		case p.ctx.Err() == nil: // only the timeout fired
			p.settle(p.req.rejectAnswer(ReasonTimeout, ctx.Err()))
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
func (b *broker) askHook(ctx context.Context, gid uint64, hook func(context.Context, *PermissionRequest) (string, error), req *PermissionRequest) PermissionAnswer {
	var id string
	var err error
	if perr := b.cb.userCall(gid, req.SessionID, "OnPermission", func() { id, err = hook(ctx, req) }); perr != nil {
		err = perr
	}
	if err != nil {
		return req.rejectAnswer(ReasonInvalid, err)
	}
	o := req.Option(id)
	if id == "" || o == nil {
		return req.rejectAnswer(ReasonInvalid, fmt.Errorf("acphost: OnPermission answered %q, which was not offered", id))
	}
	return PermissionAnswer{OptionID: id, Option: o, Reason: ReasonHook}
}

// emit tells the turn's stream what was answered.
func (pa *permissionAnswered) emit() {
	t := pa.p.s.current()
	if t == nil {
		return
	}
	defer t.emitting.Done()
	if t != pa.p.t {
		return
	}
	ans := pa.ans
	t.emit(StreamEvent{Type: EventPermissionAnswer, Permission: pa.p.req, Answer: &ans, ID: pa.p.req.ToolCall.ID, Name: pa.p.req.ToolCall.Title})
}
