package acphost

import (
	"log/slog"

	"github.com/acphost/acphost/acp"
)

// TurnInfo is what ACPOptions.Debug.OnTurn is told of a turn beginning.
type TurnInfo struct {
	// Session is the turn's session; its ID may change before the prompt
	// is sent (a restart that could not keep the conversation).
	Session *Session
	// Agent is what the agent said of itself in initialize (the agent
	// running as the turn began).
	Agent acp.Implementation
}

// TurnWatch is what ACPOptions.Debug.OnTurn returns for one turn. The
// zero value watches nothing.
type TurnWatch struct {
	// Meta is sent as the session/prompt's _meta, its keys in order: the
	// W3C trace context ("traceparent", "tracestate") whose keys ACP
	// reserves there, say, so that the agent's own spans can join the
	// host's trace. Nil: no _meta.
	Meta map[string]string
	// Event receives each event of the turn, exactly as GenerateStream's
	// emit would (for a GenerateCtx or Generate turn too), just before
	// emit and on the same goroutine: one call at a time, in order, the
	// last the turn's end (EventDone or EventError). It must not block;
	// a panic in it is logged and the event still reaches emit.
	Event func(StreamEvent)
	// End receives the turn's Response and error as the turn's call
	// returns them, after its last event, on the goroutine that called it.
	End func(Response, error)
}

// tee sends each event to w.Event, then to emit (if any): a panic in
// Event is logged and the event still reaches emit.
func (w TurnWatch) tee(log *slog.Logger, emit func(StreamEvent)) func(StreamEvent) {
	watch := w.Event
	return func(ev StreamEvent) {
		func() {
			defer func() {
				if r := recover(); r != nil {
					log.Error("acphost: callback panicked", "callback", "OnTurn's Event", "panic", r)
				}
			}()
			watch(ev)
		}()
		if emit != nil {
			emit(ev)
		}
	}
}
