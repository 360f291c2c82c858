package otelacphost

import (
	"context"
	"errors"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// turnWatch is one turn's spans. Its methods run one at a time (see
// acphost.TurnWatch: events in order, then End), so it needs no lock.
type turnWatch struct {
	t     *Telemetry
	ctx   context.Context // carries the turn's span
	span  trace.Span
	start time.Time
	agent string

	tools        map[string]trace.Span // open tool spans by toolCallId
	toolsDropped int
	perms        map[*acp.PermissionRequest]trace.Span // awaiting their answer
	elicits      map[*acp.ElicitationRequest]trace.Span
	usage        *acp.UsageUpdate // the last the turn saw
	end          acphost.EventType
}

// beginTurn starts a turn's span and returns its watch.
func (t *Telemetry) beginTurn(ctx context.Context, ti acphost.TurnInfo) acphost.TurnWatch {
	name := bounded(ti.Agent.Name)
	spanName := "invoke_agent"
	if name != "" {
		spanName += " " + name
	}
	attrs := []attribute.KeyValue{keyOperation.String("invoke_agent"), keyConversation.String(bounded(ti.Session.ID()))}
	if name != "" {
		attrs = append(attrs, keyAgentName.String(name))
	}
	if v := bounded(ti.Agent.Version); v != "" {
		attrs = append(attrs, keyAgentVersion.String(v))
	}
	w := &turnWatch{t: t, start: time.Now(), agent: name}
	w.ctx, w.span = t.tracer.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(w.start), trace.WithAttributes(attrs...))
	t.activeTurns.Add(ctx, 1)
	return acphost.TurnWatch{Meta: traceMeta(w.ctx), Event: w.event, End: w.finish}
}

// event follows one event of the turn. Text, thoughts and most updates
// cost a switch.
func (w *turnWatch) event(ev acphost.StreamEvent) {
	switch ev.Type {
	case acphost.EventToolCall:
		w.toolStarted(ev)
	case acphost.EventToolResult:
		w.toolEnded(ev.ID, ev.Status)
	case acphost.EventPermission:
		w.permissionAsked(ev)
	case acphost.EventPermissionAnswer:
		w.permissionAnswered(ev)
	case acphost.EventElicitation:
		w.elicitationAsked(ev)
	case acphost.EventElicitationAnswer:
		w.elicitationAnswered(ev)
	case acphost.EventUsage:
		w.usage = ev.Usage
	case acphost.EventRestart:
		w.restarted(ev.Err)
	case acphost.EventDone, acphost.EventError:
		w.end = ev.Type
	}
}

func (w *turnWatch) toolStarted(ev acphost.StreamEvent) {
	if ev.ID == "" {
		return
	}
	if w.tools == nil {
		w.tools = map[string]trace.Span{}
	}
	if len(w.tools) >= maxOpenTools {
		w.toolsDropped++
		return
	}
	name := string(ev.Kind)
	if ev.ToolCall != nil && ev.ToolCall.Name != "" {
		name = ev.ToolCall.Name
	}
	name = bounded(name)
	if name == "" {
		name = "other"
	}
	_, span := w.t.tracer.Start(w.ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperation.String("execute_tool"), keyToolName.String(name),
			keyToolCallID.String(bounded(ev.ID)), keyToolKind.String(toolKind(ev.Kind))))
	w.tools[ev.ID] = span
}

func (w *turnWatch) toolEnded(id string, status acp.ToolStatus) {
	span, ok := w.tools[id]
	if !ok {
		return
	}
	delete(w.tools, id)
	st := known(status, acp.StatusPending, acp.StatusInProgress, acp.StatusCompleted, acp.StatusFailed)
	span.SetAttributes(keyToolStatus.String(st))
	if status == acp.StatusFailed {
		span.SetStatus(codes.Error, "failed")
		span.SetAttributes(keyErrorType.String("tool_failed"))
	}
	span.End()
}

// parent is the context an ask of tool call id starts in: its tool's
// span if open, else the turn's.
func (w *turnWatch) parent(id string) context.Context {
	if span, ok := w.tools[id]; ok {
		return trace.ContextWithSpan(w.ctx, span)
	}
	return w.ctx
}

func (w *turnWatch) permissionAsked(ev acphost.StreamEvent) {
	if ev.Permission == nil {
		return
	}
	if w.perms == nil {
		w.perms = map[*acp.PermissionRequest]trace.Span{}
	}
	_, span := w.t.tracer.Start(w.parent(ev.ID), spanPermission, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyToolCallID.String(bounded(ev.ID)), keyToolKind.String(toolKind(ev.Kind))))
	w.perms[ev.Permission] = span
	w.t.pendingAsks.Add(w.ctx, 1, w.t.askOpts[0]...)
}

func (w *turnWatch) permissionAnswered(ev acphost.StreamEvent) {
	span, ok := w.perms[ev.Permission]
	if !ok || ev.Answer == nil {
		return
	}
	delete(w.perms, ev.Permission)
	w.t.pendingAsks.Add(w.ctx, -1, w.t.askOpts[0]...)
	ans := ev.Answer
	by := string(ans.Reason)
	attrs := make([]attribute.KeyValue, 0, 4)
	if w.t.decision != nil {
		if who, rule, ok := w.t.decision(ev.ID, ans); ok {
			by = who
			if rule != "" {
				attrs = append(attrs, keyRule.String(bounded(rule)))
			}
		}
	}
	attrs = append(attrs, keyAnsweredBy.String(by))
	if ans.Cancelled {
		attrs = append(attrs, keyOutcome.String("cancelled"))
	} else {
		attrs = append(attrs, keyOutcome.String("selected"))
		if ans.Option != nil {
			attrs = append(attrs, keyOptionKind.String(known(ans.Option.Kind, acp.AllowOnce, acp.AllowAlways, acp.RejectOnce, acp.RejectAlways)))
		}
	}
	span.SetAttributes(attrs...)
	if ans.Reason == acphost.ReasonInvalid {
		span.SetStatus(codes.Error, "invalid answer")
	}
	span.End()
}

func (w *turnWatch) elicitationAsked(ev acphost.StreamEvent) {
	if ev.Elicitation == nil {
		return
	}
	if w.elicits == nil {
		w.elicits = map[*acp.ElicitationRequest]trace.Span{}
	}
	_, span := w.t.tracer.Start(w.parent(ev.ID), spanElicitation, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyElicitMode.String(known(ev.Elicitation.Mode, acp.ModeForm, acp.ModeURL))))
	w.elicits[ev.Elicitation] = span
	w.t.pendingAsks.Add(w.ctx, 1, w.t.askOpts[1]...)
}

func (w *turnWatch) elicitationAnswered(ev acphost.StreamEvent) {
	span, ok := w.elicits[ev.Elicitation]
	if !ok || ev.ElicitationAnswer == nil {
		return
	}
	delete(w.elicits, ev.Elicitation)
	w.t.pendingAsks.Add(w.ctx, -1, w.t.askOpts[1]...)
	ans := ev.ElicitationAnswer
	span.SetAttributes(keyAnsweredBy.String(string(ans.Reason)),
		keyOutcome.String(known(ans.Action, acp.ElicitAccept, acp.ElicitDecline, acp.ElicitCancel)))
	if ans.Reason == acphost.ReasonInvalid {
		span.SetStatus(codes.Error, "invalid answer")
	}
	span.End()
}

// restarted records the restart before the turn: from the turn's call
// (the restart ran in it, after the turn took its session) to now.
func (w *turnWatch) restarted(err error) {
	var re *acphost.RestartError
	if !errors.As(err, &re) {
		return
	}
	attrs := []attribute.KeyValue{keyRestartHow.String(known(re.How, "load", "resume", "new")), keyContextLost.Bool(re.ContextLost)}
	if re.Reason != nil {
		attrs = append(attrs, keyErrorType.String(errorType(re.Reason)))
	}
	_, span := w.t.tracer.Start(w.ctx, spanRestart, trace.WithTimestamp(w.start), trace.WithAttributes(attrs...))
	if re.ContextLost {
		span.SetStatus(codes.Error, "context lost")
	}
	span.End()
	w.span.SetAttributes(keyRestarted.Bool(true))
	w.t.restarts.Add(w.ctx, 1, metric.WithAttributes(keyRestartHow.String(known(re.How, "load", "resume", "new")), keyContextLost.Bool(re.ContextLost)))
}

// finish ends the turn's span, and any span of it still open.
func (w *turnWatch) finish(resp acphost.Response, err error) {
	for id, span := range w.tools {
		span.SetAttributes(keyToolStatus.String("unfinished"))
		span.End()
		delete(w.tools, id)
	}
	for req, span := range w.perms {
		span.SetAttributes(keyOutcome.String("unanswered"))
		span.End()
		delete(w.perms, req)
		w.t.pendingAsks.Add(w.ctx, -1, w.t.askOpts[0]...)
	}
	for req, span := range w.elicits {
		span.SetAttributes(keyOutcome.String("unanswered"))
		span.End()
		delete(w.elicits, req)
		w.t.pendingAsks.Add(w.ctx, -1, w.t.askOpts[1]...)
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	if resp.SessionID != "" {
		attrs = append(attrs, keyConversation.String(bounded(resp.SessionID)))
	}
	if resp.StopReason != "" {
		attrs = append(attrs, keyFinishReasons.StringSlice([]string{known(resp.StopReason,
			acp.StopEndTurn, acp.StopMaxTokens, acp.StopMaxTurnRequests, acp.StopRefusal, acp.StopCancelled)}))
	}
	if len(resp.ToolCalls) > 0 {
		attrs = append(attrs, keyToolCalls.Int(len(resp.ToolCalls)))
	}
	if resp.Truncated {
		attrs = append(attrs, keyTruncated.Bool(true))
	}
	if w.toolsDropped > 0 {
		attrs = append(attrs, keyToolsDropped.Int(w.toolsDropped))
	}
	if u := w.usage; u != nil {
		attrs = append(attrs, keyContextUsed.Int64(clampInt64(u.Used)), keyContextSize.Int64(clampInt64(u.Size)))
		if u.Cost != nil {
			attrs = append(attrs, keyCostAmount.Float64(u.Cost.Amount), keyCostCurrency.String(bounded(u.Cost.Currency)))
		}
	}
	metricAttrs := []attribute.KeyValue{keyOperation.String("invoke_agent")}
	if w.agent != "" {
		metricAttrs = append(metricAttrs, keyAgentName.String(w.agent))
	}
	if in, out, ok := tokens(resp); ok {
		attrs = append(attrs, keyInputTokens.Int64(in), keyOutputTokens.Int64(out))
		w.t.tokenUsage.Record(w.ctx, in, metric.WithAttributes(append(metricAttrs, keyTokenType.String("input"))...))
		w.t.tokenUsage.Record(w.ctx, out, metric.WithAttributes(append(metricAttrs, keyTokenType.String("output"))...))
	}
	if err != nil {
		et := errorType(err)
		attrs = append(attrs, keyErrorType.String(et))
		metricAttrs = append(metricAttrs, keyErrorType.String(et))
		// A cancellation the agent confirmed ends the turn (EventDone):
		// the person's stop button, not a failure.
		if w.end != acphost.EventDone {
			w.span.SetStatus(codes.Error, et)
		}
	}
	w.span.SetAttributes(attrs...)
	now := time.Now()
	w.span.End(trace.WithTimestamp(now))
	w.t.turnDuration.Record(w.ctx, now.Sub(w.start).Seconds(), metric.WithAttributes(metricAttrs...))
	w.t.activeTurns.Add(w.ctx, -1)
}

// tokens is the turn's token use, where the Response reports it. The hook
// point for typed end-of-turn usage: acphost's Response carries none yet,
// so this reports nothing.
func tokens(acphost.Response) (in, out int64, ok bool) { return 0, 0, false }

func toolKind(k acp.ToolKind) string {
	return known(k, acp.ToolRead, acp.ToolEdit, acp.ToolDelete, acp.ToolMove, acp.ToolSearch, acp.ToolExecute,
		acp.ToolThink, acp.ToolFetch, acp.ToolSwitchMode, acp.ToolOther)
}

func clampInt64(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}

// errorType names an error by what happened, from a fixed set (the
// message may hold the agent's words, which stay out of telemetry).
func errorType(err error) string {
	var rpc *acphost.RPCError
	var loop *acphost.CrashLoopError
	switch {
	case errors.As(err, &loop):
		return "crash_loop"
	case errors.Is(err, acphost.ErrContextLost):
		return "context_lost"
	case errors.Is(err, acphost.ErrCancelUnconfirmed):
		return "cancel_unconfirmed"
	case errors.Is(err, acphost.ErrTurnTimeout):
		return "turn_timeout"
	case errors.Is(err, acphost.ErrIdleTimeout):
		return "idle_timeout"
	case errors.Is(err, acphost.ErrWriteTimeout):
		return "write_timeout"
	case errors.Is(err, acphost.ErrUnaskedChange), errors.Is(err, acphost.ErrPlanModeBypassed):
		return "unasked_change"
	case errors.Is(err, acphost.ErrLinkLost):
		return "link_lost"
	case errors.Is(err, acphost.ErrAgentExited):
		return "agent_exited"
	case errors.Is(err, acphost.ErrProtocol):
		return "protocol"
	case errors.Is(err, acphost.ErrClosed):
		return "closed"
	case errors.Is(err, acphost.ErrReentrant):
		return "reentrant"
	case errors.Is(err, acphost.ErrAuthRequired):
		return "auth_required"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.As(err, &rpc):
		return "rpc_error"
	}
	return "_OTHER"
}
