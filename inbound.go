// Inbound: what the agent sends the client, routed from the read loop
// within the request budget, and the answers to its requests.

package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"

	"github.com/acphost/acphost/internal/wire"
)

// inflight is an agent→client request being handled: its share of the
// request budget, and for the requests $/cancel_request can end, a ctx
// that cancel ends (a child of the agent's: its death ends them all).
// Those are registered with the connection as the request is read, so a
// $/cancel_request that arrives before the handler starts is not lost.
type inflight struct {
	budget   *requestBudget
	size     int // the bytes of its share of the request budget
	finished atomic.Bool
	ctx      context.Context
	cancel   context.CancelFunc
	perm     atomic.Pointer[pendingPermission] // set once the broker has it
}

// cancellable gives in a ctx and registers it under id.
func (a *agent) cancellable(id json.RawMessage, in *inflight) *inflight {
	in.ctx, in.cancel = context.WithCancel(a.ctx)
	a.conn.Track(id, in)
	return in
}

// Cancel handles the agent's $/cancel_request for the request: its
// handler sees its ctx end, and a permission request is answered
// "cancelled" at once (off the read loop).
func (in *inflight) Cancel() {
	in.cancel()
	if perm := in.perm.Load(); perm != nil {
		perm.b.goSettle(perm, answerCancelled(ReasonWithdrawn))
	}
}

// finish returns in's share of the request budget, once: call it when the
// request has been answered (or its answer failed). A nil in has no share.
func (in *inflight) finish() {
	if in != nil && in.finished.CompareAndSwap(false, true) {
		in.budget.release(in.size)
	}
}

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
		in = &inflight{budget: a.requests, size: len(m.Params)}
	}
	switch m.Method {
	case "session/update":
		a.enqueue(item{kind: itemUpdate, size: itemOverhead + len(m.Params), params: m.Params})
		a.ackNotificationSentAsRequest(m, in)
	case "session/request_permission":
		if in == nil {
			a.opts.Logger.Warn("acphost: session/request_permission without an id: cannot be answered")
			return
		}
		it := item{kind: itemPermission, size: itemOverhead + len(m.Params), id: m.ID, params: m.Params, in: a.cancellable(m.ID, in)}
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
			a.goReplyError(in, m.ID, CodeMethodNotFound, "method not found: "+m.Method)
		case a.known(sessionIDIn(m.Params)) == nil:
			a.refuseForeign(in, m.ID, m.Method, sessionIDIn(m.Params))
		default:
			a.serveRequest(m, a.cancellable(m.ID, in), h)
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
	a.stream.Halt()
	a.die(&ProtocolError{Msg: what, Err: ErrFlood, Stderr: a.stderrTail()})
}

// ackNotificationSentAsRequest answers {} to a notification method the
// agent sent with an id, so it does not wait forever.
func (a *agent) ackNotificationSentAsRequest(m wire.Message, in *inflight) {
	if m.ID != nil {
		a.goReply(in, m.ID, struct{}{}, nil)
	}
}

// sessionIDIn reads the sessionId of a request's params ("" if none).
// It reads as the handlers do (encoding/json: the last of duplicate keys,
// any case), so the session checked is the session served.
func sessionIDIn(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.SessionID
}

// refuseForeign answers a request that names a session this connection
// never opened: it reaches no hook (SPEC.md, Containment).
func (a *agent) refuseForeign(in *inflight, id json.RawMessage, method, session string) {
	a.countForeign("a session it was not given", "method", method, "session", session)
	a.goReplyError(in, id, CodeInvalidParams, "unknown session: "+strconv.Quote(session))
}

// parsePermission decodes a permission request's params; malformed ones
// are answered -32602 (off the calling goroutine) and ok is false.
func (a *agent) parsePermission(it item) (req *PermissionRequest, ok bool) {
	req, err := ParsePermissionRequest(it.params)
	if err != nil {
		a.untrack(it.id)
		it.in.cancel()
		a.goReplyError(it.in, it.id, CodeInvalidParams, err.Error())
		return nil, false
	}
	return req, true
}

// refusePermission refuses a permission request that names a session this
// connection never opened.
func (a *agent) refusePermission(it item, session string) {
	a.untrack(it.id)
	it.in.cancel()
	a.refuseForeign(it.in, it.id, "session/request_permission", session)
}

// countForeign reports a message for a session the connection does not
// know.
// countForeign counts a message that names what the agent was not given
// (a session, a request), logging the first ones with attrs.
func (a *agent) countForeign(what string, attrs ...any) {
	if a.c.foreign.Add(1) <= 100 { // the first ones tell the story; a flood would drown the log
		a.opts.Logger.Warn("acphost: the agent named "+what, attrs...)
	}
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
	if a.opts.OnSkippedLine != nil {
		a.opts.OnSkippedLine(line)
	}
	a.opts.Logger.Debug("acphost: skipped a stdout line that is not JSON-RPC 2.0", "bytes", len(line))
}

// goReplyError answers a request with an error, off the read loop.
func (a *agent) goReplyError(in *inflight, id json.RawMessage, code int, msg string) {
	a.goReply(in, id, nil, &wire.Error{Code: code, Message: msg})
}

// goReply answers a request off the read loop, then returns its share of
// the request budget.
func (a *agent) goReply(in *inflight, id json.RawMessage, result any, rpcErr *wire.Error) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer in.finish()
		a.reply(id, result, rpcErr)
	}()
}

func (a *agent) reply(id json.RawMessage, result any, rpcErr *wire.Error) {
	replied(a.opts.Logger, id, a.conn.Reply(id, result, rpcErr))
}

// replied logs a reply that could not be written (the agent is going).
func replied(log *slog.Logger, id json.RawMessage, err error) {
	if err != nil {
		log.Debug("acphost: reply failed", "id", string(id), "err", err)
	}
}

// untrack forgets an agent→client request: $/cancel_request no longer
// reaches it.
func (a *agent) untrack(id json.RawMessage) { a.conn.Untrack(id) }
