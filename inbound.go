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
	"sync"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/wire"
)

// maxNamedRequestID bounds how much of a refused requestId is echoed.
const maxNamedRequestID = 64

// router takes what the agent sends the client off the read loop: updates
// and permission requests to the dispatcher, elicitations to the
// elicitor, fs and terminal requests to their services, each request
// within the budget. It is given what it needs when the agent is wired;
// it holds no agent.
type router struct {
	ctx        context.Context               // the agent's: ends when it is shut down or dies
	debug      DebugOptions                  // its logger (never nil) and OnSkippedLine
	onComplete func(acp.ElicitationComplete) // Elicitation.OnComplete
	modes      []acp.ElicitationMode         // the elicitation modes advertised
	conn       *wire.Conn                    // set once the connection is made, before it starts
	sessions   *sessionTable
	foreign    *foreign
	dispatcher *dispatcher
	requests   *requestBudget
	replies    *replier // set with conn
	elicitor   *elicitor
	files      *fileService
	terminals  *terminalService
	fileSlots  chan struct{} // fs requests holding file content (maxFileRequests)
	cb         *callbacks
	wg         *sync.WaitGroup // the agent's goroutines
	rec        *wireRecorder   // nil: not recording
	gen        int
	die        func(error) // ends the agent
	stderrTail func() string
}

// inbound routes each request and notification; it runs on the read loop
// and must not block except for backpressure: room in the update queue
// and a share of the request budget for a request.
func (r *router) inbound(m wire.Message) {
	if r.ctx.Err() != nil {
		return // the agent is being shut down: start nothing
	}
	var in *inflight
	if m.ID != nil {
		switch err := r.requests.acquire(len(m.Params)); {
		case errors.Is(err, ErrFlood):
			r.flooded(fmt.Sprintf("more than %d requests or %d bytes of them waited for an answer while a call waited for the agent's", liftedFactor*r.requests.maxN, liftedFactor*r.requests.maxBytes))
			return
		case err != nil:
			return // the agent is gone
		}
		in = r.replies.newInflight(m.ID, r.requests, len(m.Params))
	}
	switch m.Method {
	case "session/update":
		r.enqueue(item{kind: itemUpdate, size: itemOverhead + len(m.Params), params: m.Params})
		r.ackNotificationSentAsRequest(m, in)
	case "session/request_permission":
		if in == nil {
			r.debug.Logger.Warn("acphost: session/request_permission without an id: cannot be answered")
			return
		}
		it := item{kind: itemPermission, size: itemOverhead + len(m.Params), params: m.Params, in: in.cancellable(r.ctx)}
		if !r.dispatcher.openNow(&it) {
			r.enqueue(it)
		}
	case "elicitation/create":
		r.elicit(m, in)
	case "elicitation/complete":
		r.elicitationComplete(m.Params)
		r.ackNotificationSentAsRequest(m, in)
	case "$/cancel_request":
		r.conn.CancelRequest(m.Params)
		r.ackNotificationSentAsRequest(m, in)
	default:
		if in == nil {
			return // unknown notifications are ignored, as the spec asks
		}
		h := r.service(m.Method)
		switch {
		case h == nil:
			in.goRefuse(acp.CodeMethodNotFound, "method not found: "+m.Method)
		case r.sessions.known(sessionIDIn(m.Params)) == nil:
			r.foreign.refuse(in, m.Method, sessionIDIn(m.Params))
		default:
			r.serveRequest(m, in.cancellable(r.ctx), h)
		}
	}
}

// enqueue queues it for the dispatcher; an agent that floods the lifted
// queue is stopped.
func (r *router) enqueue(it item) {
	if r.dispatcher.q.push(it, true) {
		return
	}
	it.in.finish()
	r.flooded(fmt.Sprintf("more than %d bytes of updates waited for delivery while a call waited for the agent's answer", liftedFactor*r.dispatcher.q.limitBytes))
}

// flooded stops reading an agent that sent more than the lifted bounds
// allow, and ends it (see ErrFlood).
func (r *router) flooded(what string) {
	r.conn.Halt()
	r.die(&ProtocolError{Msg: what, Err: ErrFlood, Stderr: r.stderrTail()})
}

// ackNotificationSentAsRequest answers {} to a notification method the
// agent sent with an id, so it does not wait forever.
func (r *router) ackNotificationSentAsRequest(m wire.Message, in *inflight) {
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
func (r *router) elicit(m wire.Message, in *inflight) {
	if in == nil {
		r.debug.Logger.Warn("acphost: elicitation/create without an id: cannot be answered")
		return
	}
	req, err := acp.ParseElicitationRequest(m.Params)
	if err != nil {
		in.goRefuse(acp.CodeInvalidParams, err.Error())
		return
	}
	var s *sessionState
	if req.Scope == acp.ScopeSession {
		if s = r.sessions.known(req.SessionID); s == nil {
			r.foreign.refuse(in, m.Method, req.SessionID)
			return
		}
	}
	if !slices.Contains(r.modes, req.Mode) || r.elicitor.hookFor(s) == nil {
		in.goRefuse(acp.CodeInvalidParams, "elicitation mode "+strconv.Quote(string(req.Mode))+" was not advertised")
		return
	}
	p := r.elicitor.newPending(s, in.cancellable(r.ctx), req)
	if s != nil {
		r.enqueue(item{kind: itemBarrier, size: itemOverhead + len(m.Params), in: in, barrier: p.open})
		return
	}
	method, unwatch, ok := r.conn.Watch(req.RequestID, p.requestEnded)
	if !ok {
		r.refuseUnknownRequest(in, req.RequestID)
		return
	}
	req.Method, p.unwatch = method, unwatch
	p.start(false)
}

// refuseUnknownRequest answers a request-scoped elicitation whose
// requestId names no request of the client's awaiting its answer: an
// agent cannot pose as part of a request it was not asked (SPEC.md,
// Containment). It is counted with the foreign messages.
func (r *router) refuseUnknownRequest(in *inflight, requestID json.RawMessage) {
	named := cutBytes(string(requestID), maxNamedRequestID) // the agent's bytes: not echoed whole
	r.foreign.count("a request of the client's that awaits no answer", "method", "elicitation/create", "requestId", acp.SafeText(named))
	in.goRefuse(acp.CodeInvalidParams, "unknown request: "+strconv.Quote(named)+" names no request of the client's awaiting its answer outside a session")
}

// elicitationComplete delivers an elicitation/complete for an accepted URL
// elicitation to Elicitation.OnComplete, on the dispatcher in wire order;
// unknown and completed ids are ignored, as the spec asks.
func (r *router) elicitationComplete(params json.RawMessage) {
	var w struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &w) != nil || r.onComplete == nil {
		return
	}
	c, ok := r.elicitor.urls.complete(w.ElicitationID)
	if !ok {
		return
	}
	r.enqueue(item{kind: itemBarrier, size: itemOverhead + len(params), barrier: func() {
		_ = r.cb.safely("Elicitation.OnComplete", func() { r.onComplete(c) })
	}})
}

// service returns the handler of an agent→client method the client serves.
func (r *router) service(method string) func(context.Context, json.RawMessage) (any, error) {
	if h := r.files.handler(method); h != nil {
		return h
	}
	return r.terminals.handler(method)
}

func (r *router) skipped(line []byte) {
	if r.rec != nil {
		r.rec.line(r.gen, "skip", line)
	}
	if r.debug.OnSkippedLine != nil {
		r.debug.OnSkippedLine(line)
	}
	r.debug.Logger.Debug("acphost: skipped a stdout line that is not JSON-RPC 2.0", "bytes", len(line))
}

// serveRequest answers an agent→client request on a goroutine of its own
// with a ctx that $/cancel_request or the agent's end cancels.
func (r *router) serveRequest(m wire.Message, in *inflight, handle func(ctx context.Context, params json.RawMessage) (any, error)) {
	r.wg.Go(func() {
		if holdsFile(m.Method) {
			select {
			case r.fileSlots <- struct{}{}:
				defer func() { <-r.fileSlots }() // after the answer is written: it holds the content too
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
