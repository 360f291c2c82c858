// Elicitation: the agent asks the user for structured input
// (elicitation/create, form and URL modes) and reports the end of a URL
// flow (elicitation/complete). A request belongs to a session (sessionId)
// or to one of the client's own requests awaiting its answer outside a
// session (requestId: authenticate, session/new, …). Requests are served
// off the read loop by OnElicitation, within the request budget; a
// cancelled turn settles the session's open ones with "cancel", the end of
// its request a request-scoped one.

package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/acphost/acphost/internal/wire"
)

// ElicitationMode is how an elicitation asks: a form or a URL to open. The
// set is open; a request in a mode the client did not advertise is refused.
type ElicitationMode string

// The elicitation modes of ACP v1.
const (
	ModeForm ElicitationMode = "form"
	ModeURL  ElicitationMode = "url"
)

// ElicitationAction is the answer's kind.
type ElicitationAction string

// The answers of ACP v1: the user submitted (or, in URL mode, consented
// to open the URL), explicitly declined, or dismissed without choosing.
const (
	ElicitAccept  ElicitationAction = "accept"
	ElicitDecline ElicitationAction = "decline"
	ElicitCancel  ElicitationAction = "cancel"
)

// ElicitationScope says what an elicitation belongs to.
type ElicitationScope string

// The scopes of ACP v1: a session (and maybe a tool call of it), or one of
// the client's JSON-RPC requests outside a session (during authentication
// or configuration, before a session is started).
const (
	ScopeSession ElicitationScope = "session"
	ScopeRequest ElicitationScope = "request"
)

// ElicitationRequest is an elicitation/create from the agent, decoded.
// Everything in it is the agent's: show text through SafeText, and in URL
// mode show the whole URL and ask before opening it.
type ElicitationRequest struct {
	// Scope is ScopeSession (SessionID set) or ScopeRequest (RequestID
	// set, SessionID empty): exactly one of sessionId and requestId is sent.
	Scope     ElicitationScope
	SessionID string
	// ToolCallID is the tool call the request belongs to, if the agent
	// said (an MCP server's elicitation during a tool call, Claude's
	// AskUserQuestion).
	ToolCallID string
	// RequestID is, in request scope, the id of the client's request the
	// elicitation belongs to, exactly as the agent sent it. The client
	// serves only an id of one of its own requests that awaits its answer
	// (its ids are numbers), and says which in Method.
	RequestID json.RawMessage
	// Method is, in request scope, the method of the client's request the
	// elicitation belongs to: "initialize", "authenticate", "session/new",
	// "session/load", …. Set by the client as it routes the request (not
	// by ParseElicitationRequest).
	Method  string
	Mode    ElicitationMode
	Message string
	// Form is the requested schema, in form mode; nil otherwise.
	Form *FormSchema
	// URL and ElicitationID are set in URL mode. The URL is not opened,
	// fetched or checked by the client beyond parsing as absolute: show it
	// whole, check its scheme and host, and open it only with consent.
	URL, ElicitationID string
	// Raw is the request's params, exactly as received.
	Raw json.RawMessage
}

// ElicitationAnswer is what the hook answers, and what the client sent.
type ElicitationAnswer struct {
	Action ElicitationAction
	// Content is an accepted form's values by field name: string, a Go
	// number type (integers for integer fields), bool or []string. It is
	// validated against the requested schema before it is sent; ignored
	// for decline and cancel and in URL mode.
	Content map[string]any
	// Reason and Err say why the client sent this answer (in the answer
	// event, not read from the hook): ReasonHook, ReasonInvalid (Err is the
	// hook's error, panic or a *FormContentError), ReasonTimeout,
	// ReasonCancelled, ReasonWithdrawn, ReasonRequestEnded (Err matches
	// ErrRequestEnded) or ReasonClosed.
	Reason AnswerReason
	Err    error
}

// ElicitationFunc answers an elicitation. It runs on a goroutine of its own
// (never the read loop or the dispatcher), so it may wait for a person;
// ctx ends when the turn is cancelled, when the agent withdraws the request
// ($/cancel_request), when ElicitationTimeout fires, when the client's
// request a request-scoped elicitation belongs to ends (it is answered,
// fails or is abandoned: context.Cause(ctx) then matches ErrRequestEnded)
// or when the client closes — the request has then already been answered
// "cancel" (-32800 for a withdrawal) and the return value is ignored.
type ElicitationFunc func(ctx context.Context, req *ElicitationRequest) (ElicitationAnswer, error)

// ErrRequestEnded is the cause of a request-scoped elicitation's ctx
// ending because the client's request it belongs to ended first: the agent
// answered it (or failed it) without waiting for the user, or the client
// gave up on it. The agent is answered "cancel".
var ErrRequestEnded = errors.New("acphost: the request the elicitation belongs to has ended")

// ElicitationComplete is the agent's elicitation/complete: the out-of-band
// interaction of a URL elicitation this client accepted has finished.
type ElicitationComplete struct {
	ElicitationID string
	// SessionID is the session of the URL elicitation it completes;
	// empty for a request-scoped one.
	SessionID string
	// Method is, for a request-scoped URL elicitation, the method of the
	// client's request it belonged to (that request may have ended since).
	Method string
}

// ParseElicitationRequest decodes elicitation/create params. Exactly one
// scope is needed: a sessionId (a string) or a requestId (any JSON value,
// null included, kept raw: which request it names is the client's to
// check). Form mode needs a requestedSchema (see ParseFormSchema), URL mode
// an elicitationId and an absolute URL; other modes are kept with neither.
func ParseElicitationRequest(params json.RawMessage) (*ElicitationRequest, error) {
	var w struct {
		SessionID       *string         `json:"sessionId"`
		RequestID       json.RawMessage `json:"requestId"`
		ToolCallID      string          `json:"toolCallId"`
		Mode            ElicitationMode `json:"mode"`
		Message         *string         `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		ElicitationID   string          `json:"elicitationId"`
		URL             string          `json:"url"`
	}
	if err := json.Unmarshal(params, &w); err != nil {
		return nil, fmt.Errorf("elicitation/create: %w", err)
	}
	if w.Message == nil {
		return nil, errors.New("elicitation/create: no message")
	}
	req := &ElicitationRequest{ToolCallID: w.ToolCallID, Mode: w.Mode, Message: *w.Message, Raw: params}
	switch hasRequest := len(w.RequestID) > 0; {
	case w.SessionID != nil && hasRequest:
		return nil, errors.New("elicitation/create: both a sessionId and a requestId")
	case w.SessionID != nil:
		req.Scope, req.SessionID = ScopeSession, *w.SessionID
	case hasRequest:
		req.Scope, req.RequestID = ScopeRequest, w.RequestID
	default:
		return nil, errors.New("elicitation/create: neither a sessionId nor a requestId")
	}
	switch w.Mode {
	case ModeForm:
		f, err := ParseFormSchema(w.RequestedSchema)
		if err != nil {
			return nil, fmt.Errorf("elicitation/create: %w", err)
		}
		req.Form = f
	case ModeURL:
		if w.ElicitationID == "" {
			return nil, errors.New("elicitation/create: url mode without an elicitationId")
		}
		if err := checkFormat("uri", w.URL); err != nil {
			return nil, fmt.Errorf("elicitation/create: url %q: %w", SafeText(w.URL), err)
		}
		req.URL, req.ElicitationID = w.URL, w.ElicitationID
	case "":
		return nil, errors.New("elicitation/create: no mode")
	}
	return req, nil
}

// elicitationModes are the modes the client advertises: none without
// OnElicitation, else ElicitationModes (nil: form and url).
func (o *ACPOptions) elicitationModes() []ElicitationMode {
	if o.OnElicitation == nil {
		return nil
	}
	if o.ElicitationModes == nil {
		return []ElicitationMode{ModeForm, ModeURL}
	}
	return o.ElicitationModes
}

// elicitationCapability is clientCapabilities.elicitation, or nil.
func (o *ACPOptions) elicitationCapability() map[string]any {
	modes := o.elicitationModes()
	if len(modes) == 0 {
		return nil
	}
	caps := map[string]any{}
	for _, m := range modes {
		caps[string(m)] = map[string]any{}
	}
	return caps
}

// onElicitation is the session's elicitation hook: its handle's, else the
// client's.
func (s *sessionState) onElicitation() ElicitationFunc {
	if h := s.pub.Load(); h != nil && h.opts.OnElicitation != nil {
		return h.opts.OnElicitation
	}
	return s.a.opts.OnElicitation
}

// hook is the hook that answers p: its session's, or for a request-scoped
// one the client's.
func (p *pendingElicitation) hook() ElicitationFunc {
	if p.s != nil {
		return p.s.onElicitation()
	}
	return p.a.opts.OnElicitation
}

// maxURLElicitations bounds the accepted URL elicitations remembered for
// elicitation/complete; past it the oldest are forgotten.
const maxURLElicitations = 256

// elicitations is a connection's open elicitations by session (nil for the
// request-scoped ones), and the accepted URL elicitations awaiting
// elicitation/complete.
type elicitations struct {
	mu   sync.Mutex
	open map[*sessionState]map[*pendingElicitation]struct{}
	urls []ElicitationComplete // accepted, oldest first
}

func (r *elicitations) add(p *pendingElicitation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		r.open = map[*sessionState]map[*pendingElicitation]struct{}{}
	}
	if r.open[p.s] == nil {
		r.open[p.s] = map[*pendingElicitation]struct{}{}
	}
	r.open[p.s][p] = struct{}{}
}

func (r *elicitations) remove(p *pendingElicitation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.open[p.s], p)
	if len(r.open[p.s]) == 0 {
		delete(r.open, p.s)
	}
}

func (r *elicitations) ofSession(s *sessionState) []*pendingElicitation {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*pendingElicitation, 0, len(r.open[s]))
	for p := range r.open[s] {
		out = append(out, p)
	}
	return out
}

func (r *elicitations) accepted(c ElicitationComplete) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = slices.DeleteFunc(r.urls, func(u ElicitationComplete) bool { return u.ElicitationID == c.ElicitationID })
	if len(r.urls) >= maxURLElicitations {
		r.urls = slices.Delete(r.urls, 0, 1)
	}
	r.urls = append(r.urls, c)
}

// complete forgets an accepted URL elicitation; ok is false for an id
// unknown or completed already.
func (r *elicitations) complete(id string) (c ElicitationComplete, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, u := range r.urls {
		if u.ElicitationID == id {
			r.urls = slices.Delete(r.urls, i, i+1)
			return u, true
		}
	}
	return ElicitationComplete{}, false
}

// pendingElicitation is one request being answered. settle answers it
// exactly once, whoever gets there first (hook, timeout, cancel, the end of
// its request, close).
type pendingElicitation struct {
	a   *agent
	s   *sessionState // its session; nil in request scope
	t   *turn         // the turn it arrived in, if any
	id  json.RawMessage
	req *ElicitationRequest
	in  *inflight
	// ctx is the hook's (before ElicitationTimeout): a child of in.ctx that
	// end also ends, with ErrRequestEnded, when the client's request a
	// request-scoped elicitation belongs to ends.
	ctx     context.Context
	end     context.CancelCauseFunc
	unwatch func() // forgets the watch of its request (request scope)
	once    sync.Once
}

// elicit routes an elicitation/create read by the read loop: refused at
// once (off the read loop) when it does not decode, names a session this
// connection does not know or a request of the client's not awaiting its
// answer, or asks in a mode not advertised. A session-scoped one is then
// opened on the dispatcher, after every update read before it; a
// request-scoped one, which has no session, turn or stream to keep in
// order with, is started at once (the dispatcher may be the very goroutine
// that waits for the request it belongs to: OnUpdate may open a session).
func (a *agent) elicit(m wire.Message, in *inflight) {
	if in == nil {
		a.opts.Logger.Warn("acphost: elicitation/create without an id: cannot be answered")
		return
	}
	req, err := ParseElicitationRequest(m.Params)
	if err != nil {
		a.goReplyError(in, m.ID, CodeInvalidParams, err.Error())
		return
	}
	p := &pendingElicitation{a: a, id: m.ID, req: req}
	if req.Scope == ScopeSession {
		if p.s = a.known(req.SessionID); p.s == nil {
			a.refuseForeign(in, m.ID, m.Method, req.SessionID)
			return
		}
	}
	if !slices.Contains(a.opts.elicitationModes(), req.Mode) || p.hook() == nil {
		a.goReplyError(in, m.ID, CodeInvalidParams, "elicitation mode "+strconv.Quote(string(req.Mode))+" was not advertised")
		return
	}
	p.in = a.cancellable(m.ID, in)
	p.ctx, p.end = context.WithCancelCause(p.in.ctx)
	if req.Scope == ScopeSession {
		a.enqueue(item{kind: itemBarrier, size: itemOverhead + len(m.Params), in: p.in, barrier: p.open})
		return
	}
	method, unwatch, ok := a.conn.Watch(req.RequestID, p.requestEnded)
	if !ok {
		a.untrack(m.ID)
		p.in.cancel()
		a.refuseUnknownRequest(in, m.ID, req.RequestID)
		return
	}
	req.Method, p.unwatch = method, unwatch
	p.start(false)
}

// requestEnded runs when the client's request p belongs to ends (on the
// goroutine that ends it, the read loop for an answer; it may run before
// Watch has returned, so it reads nothing of p's that is set after): the
// hook's ctx ends and p is answered "cancel".
func (p *pendingElicitation) requestEnded() { p.end(ErrRequestEnded) }

// refuseUnknownRequest answers a request-scoped elicitation whose
// requestId names no request of the client's awaiting its answer: an
// agent cannot pose as part of a request it was not asked (SPEC.md,
// Containment). It is counted with the foreign messages.
func (a *agent) refuseUnknownRequest(in *inflight, id, requestID json.RawMessage) {
	named := cutBytes(string(requestID), maxNamedRequestID) // the agent's bytes: not echoed whole
	a.countForeign("a request of the client's that awaits no answer", "method", "elicitation/create", "requestId", SafeText(named))
	a.goReplyError(in, id, CodeInvalidParams, "unknown request: "+strconv.Quote(named)+" names no request of the client's awaiting its answer outside a session")
}

// maxNamedRequestID bounds how much of a refused requestId is echoed.
const maxNamedRequestID = 64

// open runs on the dispatcher for a session-scoped request: it binds it to
// its session's turn, emits the stream event and starts it.
func (p *pendingElicitation) open() {
	s := p.s
	s.mu.Lock()
	p.t = s.turn
	cancelling := p.t != nil && p.t.cancelled
	s.mu.Unlock()
	if p.t != nil {
		p.t.waitingPerms.Add(1) // a person is asked: not idle
	}
	if t := s.current(); t != nil {
		t.emit(StreamEvent{Type: EventElicitation, Elicitation: p.req, ID: p.req.ToolCallID})
		t.emitting.Done()
	}
	p.start(cancelling)
}

// start registers the request and asks the hook on a goroutine of its own
// — unless the client is closing or the turn it arrived in is being
// cancelled (cancelling), when it is answered "cancel" at once.
func (p *pendingElicitation) start(cancelling bool) {
	a := p.a
	a.elicits.add(p)
	switch {
	case a.ctx.Err() != nil:
		p.goSettle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonClosed})
	case cancelling, a.poisoned.Load(): // a cancelled turn, or an abandoned agent
		p.goSettle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonCancelled})
	default:
		a.wg.Add(1)
		go p.run()
	}
}

// run asks the hook, bounded by ElicitationTimeout; the request's ctx
// ending ($/cancel_request, the end of its request, the client's end, a
// settle by a cancelled turn) answers it while the hook may still run. A
// request whose ctx ended before the hook was asked is answered without
// asking it.
func (p *pendingElicitation) run() {
	a := p.a
	defer a.wg.Done()
	if p.ctx.Err() != nil {
		p.ended(p.ctx)
		return
	}
	ctx, cancel := p.ctx, context.CancelFunc(func() {})
	if d := a.opts.ElicitationTimeout; d > 0 {
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
	case p.a.ctx.Err() != nil:
		p.settle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonClosed})
	case p.in.ctx.Err() != nil: // withdrawn by the agent (or settled already)
		p.settleWith(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonWithdrawn}, &wire.Error{Code: CodeRequestCancelled, Message: "request cancelled"})
	case p.ctx.Err() != nil: // the client's request it belongs to ended
		p.settle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonRequestEnded, Err: fmt.Errorf("%w: %s", ErrRequestEnded, p.req.Method)})
	default:
		p.settle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonTimeout, Err: ctx.Err()})
	}
}

// ask calls the hook and checks its answer: an error, a panic, an unknown
// action or content that does not fit the schema answers "cancel" (the
// user chose nothing the agent can use), with Err saying why.
func (p *pendingElicitation) ask(ctx context.Context) ElicitationAnswer {
	hook := p.hook()
	var ans ElicitationAnswer
	var err error
	if perr := p.a.cb.userCall(goid(), p.req.SessionID, "OnElicitation", func() { ans, err = hook(ctx, p.req) }); perr != nil {
		err = perr
	}
	if err == nil {
		ans, err = p.req.check(ans)
	}
	if err != nil {
		p.a.opts.Logger.Warn("acphost: OnElicitation answer refused; answered cancel", "session", p.req.SessionID, "method", p.req.Method, "err", err)
		return ElicitationAnswer{Action: ElicitCancel, Reason: ReasonInvalid, Err: err}
	}
	ans.Reason = ReasonHook
	return ans
}

// check validates a hook's answer and returns it as it will be sent.
func (req *ElicitationRequest) check(ans ElicitationAnswer) (ElicitationAnswer, error) {
	switch ans.Action {
	case ElicitDecline, ElicitCancel:
		return ElicitationAnswer{Action: ans.Action}, nil
	case ElicitAccept:
	default:
		return ans, fmt.Errorf("%w: action %q", ErrElicitationContent, ans.Action)
	}
	if req.Form == nil {
		return ElicitationAnswer{Action: ElicitAccept}, nil
	}
	content, err := req.Form.Validate(ans.Content)
	if err != nil {
		return ans, err
	}
	return ElicitationAnswer{Action: ElicitAccept, Content: content}, nil
}

// goSettle answers from a goroutine of its own, so the caller (the
// dispatcher, a cancelling turn) never waits on the agent's stdin.
func (p *pendingElicitation) goSettle(ans ElicitationAnswer) {
	p.a.wg.Add(1)
	go func() {
		defer p.a.wg.Done()
		p.settle(ans)
	}()
}

func (p *pendingElicitation) settle(ans ElicitationAnswer) { p.settleWith(ans, nil) }

// settleWith sends ans (or rpcErr instead) unless the request was answered
// already: it ends the hook's ctx, forgets the request, queues the answer
// event for the turn's stream and writes the answer.
func (p *pendingElicitation) settleWith(ans ElicitationAnswer, rpcErr *wire.Error) {
	p.once.Do(func() {
		a := p.a
		p.in.cancel()
		if p.unwatch != nil {
			p.unwatch()
		}
		a.untrack(p.id)
		a.elicits.remove(p)
		if t := p.t; t != nil {
			t.waitingPerms.Add(-1)
			t.touch()
			if t.emitFn != nil {
				a.dispatcher.q.push(item{kind: itemBarrier, barrier: func() { p.emitAnswer(ans) }}, false)
			}
		}
		if rpcErr == nil && ans.Action == ElicitAccept && p.req.Mode == ModeURL {
			a.elicits.accepted(ElicitationComplete{ElicitationID: p.req.ElicitationID, SessionID: p.req.SessionID, Method: p.req.Method})
		}
		var result any
		if rpcErr == nil {
			result = elicitationResult{Action: ans.Action, Content: ans.Content}
		}
		replied(a.opts.Logger, p.id, a.conn.Reply(p.id, result, rpcErr))
		p.in.finish()
	})
}

type elicitationResult struct {
	Action  ElicitationAction `json:"action"`
	Content map[string]any    `json:"content,omitempty"`
}

// emitAnswer tells the turn's stream what was answered (on the
// dispatcher).
func (p *pendingElicitation) emitAnswer(ans ElicitationAnswer) {
	t := p.s.current()
	if t == nil {
		return
	}
	defer t.emitting.Done()
	if t == p.t {
		t.emit(StreamEvent{Type: EventElicitationAnswer, Elicitation: p.req, ElicitationAnswer: &ans, ID: p.req.ToolCallID})
	}
}

// cancelElicitations answers the session's open elicitations "cancel"
// (a turn of it is being cancelled).
func (a *agent) cancelElicitations(s *sessionState) {
	for _, p := range a.elicits.ofSession(s) {
		p.goSettle(ElicitationAnswer{Action: ElicitCancel, Reason: ReasonCancelled})
	}
}

// elicitationComplete delivers an elicitation/complete for an accepted URL
// elicitation to OnElicitationComplete, on the dispatcher in wire order;
// unknown and completed ids are ignored, as the spec asks.
func (a *agent) elicitationComplete(params json.RawMessage) {
	var w struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &w) != nil || a.opts.OnElicitationComplete == nil {
		return
	}
	c, ok := a.elicits.complete(w.ElicitationID)
	if !ok {
		return
	}
	a.enqueue(item{kind: itemBarrier, size: itemOverhead + len(params), barrier: func() {
		_ = a.cb.safely("OnElicitationComplete", func() { a.opts.OnElicitationComplete(c) })
	}})
}
