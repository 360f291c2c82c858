// Inbound: what the agent sends the client, routed from the read loop
// within the request budget, and the answers to its requests.

package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/wire"
)

// inbound routes each request and notification; it runs on the read loop
// and must not block except for backpressure: room in the update queue
// and a share of the request budget for a request.
func (a *agent) inbound(m wire.Message) {
	if a.ctx.Err() != nil {
		return // the agent is being shut down: start nothing
	}
	var in *inflight
	if m.ID != nil {
		switch err := a.requests.acquire(len(m.Params)); {
		case errors.Is(err, ErrFlood):
			a.flooded(fmt.Sprintf("more than %d requests or %d bytes of them waited for an answer while a call waited for the agent's", liftedFactor*a.requests.maxN, liftedFactor*a.requests.maxBytes))
			return
		case err != nil:
			return // the agent is gone
		}
		in = a.replies.newInflight(m.ID, a.requests, len(m.Params))
	}
	switch m.Method {
	case "session/update":
		a.enqueue(item{kind: itemUpdate, size: itemOverhead + len(m.Params), params: m.Params})
		a.ackNotificationSentAsRequest(m, in)
	case "session/request_permission":
		if in == nil {
			a.opts.Debug.Logger.Warn("acphost: session/request_permission without an id: cannot be answered")
			return
		}
		it := item{kind: itemPermission, size: itemOverhead + len(m.Params), params: m.Params, in: in.cancellable(a.ctx)}
		if !a.dispatcher.openNow(&it) {
			a.enqueue(it)
		}
	case "elicitation/create":
		a.elicit(m, in)
	case "elicitation/complete":
		a.elicitationComplete(m.Params)
		a.ackNotificationSentAsRequest(m, in)
	case "$/cancel_request":
		a.conn.CancelRequest(m.Params)
		a.ackNotificationSentAsRequest(m, in)
	default:
		if in == nil {
			return // unknown notifications are ignored, as the spec asks
		}
		h := a.service(m.Method)
		switch {
		case h == nil:
			in.goRefuse(acp.CodeMethodNotFound, "method not found: "+m.Method)
		case a.sessions.known(sessionIDIn(m.Params)) == nil:
			a.foreign.refuse(in, m.Method, sessionIDIn(m.Params))
		default:
			a.serveRequest(m, in.cancellable(a.ctx), h)
		}
	}
}

// enqueue queues it for the dispatcher; an agent that floods the lifted
// queue is stopped.
func (a *agent) enqueue(it item) {
	if a.dispatcher.q.push(it, true) {
		return
	}
	it.in.finish()
	a.flooded(fmt.Sprintf("more than %d bytes of updates waited for delivery while a call waited for the agent's answer", liftedFactor*a.dispatcher.q.limitBytes))
}

// flooded stops reading an agent that sent more than the lifted bounds
// allow, and ends it (see ErrFlood).
func (a *agent) flooded(what string) {
	a.conn.Halt()
	a.die(&ProtocolError{Msg: what, Err: ErrFlood, Stderr: a.stderrTail()})
}

// ackNotificationSentAsRequest answers {} to a notification method the
// agent sent with an id, so it does not wait forever.
func (a *agent) ackNotificationSentAsRequest(m wire.Message, in *inflight) {
	if in != nil {
		in.goAnswer(struct{}{}, nil)
	}
}

// elicit routes an elicitation/create: refused at once (off the read loop)
// when it does not decode, names a session this connection does not know
// or a request of the client's not awaiting its answer, or asks in a mode
// not advertised. A session-scoped one is then opened on the dispatcher,
// after every update read before it; a request-scoped one, which has no
// session, turn or stream to keep in order with, is started at once (the
// dispatcher may be the very goroutine that waits for the request it
// belongs to: OnUpdate may open a session).
func (a *agent) elicit(m wire.Message, in *inflight) {
	if in == nil {
		a.opts.Debug.Logger.Warn("acphost: elicitation/create without an id: cannot be answered")
		return
	}
	req, err := acp.ParseElicitationRequest(m.Params)
	if err != nil {
		in.goRefuse(acp.CodeInvalidParams, err.Error())
		return
	}
	var s *sessionState
	if req.Scope == acp.ScopeSession {
		if s = a.sessions.known(req.SessionID); s == nil {
			a.foreign.refuse(in, m.Method, req.SessionID)
			return
		}
	}
	if !slices.Contains(a.opts.elicitationModes(), req.Mode) || a.elicitor.hookFor(s) == nil {
		in.goRefuse(acp.CodeInvalidParams, "elicitation mode "+strconv.Quote(string(req.Mode))+" was not advertised")
		return
	}
	p := a.elicitor.newPending(s, in.cancellable(a.ctx), req)
	if s != nil {
		a.enqueue(item{kind: itemBarrier, size: itemOverhead + len(m.Params), in: in, barrier: p.open})
		return
	}
	method, unwatch, ok := a.conn.Watch(req.RequestID, p.requestEnded)
	if !ok {
		a.refuseUnknownRequest(in, req.RequestID)
		return
	}
	req.Method, p.unwatch = method, unwatch
	p.start(false)
}

// refuseUnknownRequest answers a request-scoped elicitation whose
// requestId names no request of the client's awaiting its answer: an
// agent cannot pose as part of a request it was not asked (SPEC.md,
// Containment). It is counted with the foreign messages.
func (a *agent) refuseUnknownRequest(in *inflight, requestID json.RawMessage) {
	named := cutBytes(string(requestID), maxNamedRequestID) // the agent's bytes: not echoed whole
	a.foreign.count("a request of the client's that awaits no answer", "method", "elicitation/create", "requestId", acp.SafeText(named))
	in.goRefuse(acp.CodeInvalidParams, "unknown request: "+strconv.Quote(named)+" names no request of the client's awaiting its answer outside a session")
}

// maxNamedRequestID bounds how much of a refused requestId is echoed.
const maxNamedRequestID = 64

// elicitationComplete delivers an elicitation/complete for an accepted URL
// elicitation to Elicitation.OnComplete, on the dispatcher in wire order;
// unknown and completed ids are ignored, as the spec asks.
func (a *agent) elicitationComplete(params json.RawMessage) {
	var w struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &w) != nil || a.opts.Elicitation.OnComplete == nil {
		return
	}
	c, ok := a.elicitor.urls.complete(w.ElicitationID)
	if !ok {
		return
	}
	a.enqueue(item{kind: itemBarrier, size: itemOverhead + len(params), barrier: func() {
		_ = a.cb.safely("Elicitation.OnComplete", func() { a.opts.Elicitation.OnComplete(c) })
	}})
}

// service returns the handler of an agent→client method the client serves.
func (a *agent) service(method string) func(context.Context, json.RawMessage) (any, error) {
	if h := a.files.handler(method); h != nil {
		return h
	}
	return a.terminals.handler(method)
}

func (a *agent) skipped(line []byte) {
	a.c.rec.line(a.gen, "skip", line)
	if a.opts.Debug.OnSkippedLine != nil {
		a.opts.Debug.OnSkippedLine(line)
	}
	a.opts.Debug.Logger.Debug("acphost: skipped a stdout line that is not JSON-RPC 2.0", "bytes", len(line))
}

// serveRequest answers an agent→client request on a goroutine of its own
// with a ctx that $/cancel_request or the agent's end cancels.
func (a *agent) serveRequest(m wire.Message, in *inflight, handle func(ctx context.Context, params json.RawMessage) (any, error)) {
	a.wg.Go(func() {
		if holdsFile(m.Method) {
			select {
			case a.fileSlots <- struct{}{}:
				defer func() { <-a.fileSlots }() // after the answer is written: it holds the content too
			case <-in.ctx.Done():
				in.answer(nil, errRequestCancelled)
				return
			}
		}
		result, err := handle(in.ctx, m.Params)
		switch {
		case in.ctx.Err() != nil:
			in.answer(nil, errRequestCancelled)
		case err != nil:
			in.answer(nil, wireError(err))
		default:
			in.answer(result, nil)
		}
	})
}
