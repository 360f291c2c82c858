package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// errCancelCalled is the cause of a turn stopped by Cancel.
var errCancelCalled = fmt.Errorf("acphost: turn stopped by Cancel: %w", context.Canceled)

// Cancel stops the running turn of every session, if any, exactly as
// cancelling its context would (see GenerateCtx); the turn's call returns
// an error matching context.Canceled. It does not wait for the turn to end.
// It is the stop button for callers that hold no context; calling it
// between turns does nothing.
func (c *ACPClient) Cancel() {
	c.mu.Lock()
	handles := append([]*Session(nil), c.handles...)
	c.mu.Unlock()
	for _, h := range handles {
		h.Cancel()
	}
}

// cancelTurn is the stop button: session/cancel, every pending permission
// of the session answered "cancelled" (and later ones too, until the next
// turn), updates still delivered, then a bounded wait for the answer.
func (a *agent) cancelTurn(t *turn, answered <-chan promptOutcome, cause error) (Response, error) {
	a.beginCancel(t)
	grace := time.NewTimer(a.opts.CancelGrace)
	defer grace.Stop()
	select {
	case out := <-answered:
		return a.finishTurn(t, out, cause)
	case <-grace.C:
		// The agent may still be running the turn: never reuse it.
		a.poisoned.Store(true)
		t.s.detach(t)
		return t.response(StopCancelled, nil), fmt.Errorf("%w within %v: %w", ErrCancelUnconfirmed, a.opts.CancelGrace, cause)
	}
}

// beginCancel sends session/cancel and settles the session's pending
// permission requests.
func (a *agent) beginCancel(t *turn) {
	s := t.s
	s.mu.Lock()
	t.cancelled = true
	pending := make([]*pendingPermission, 0, len(s.pending))
	for p := range s.pending {
		pending = append(pending, p)
	}
	s.mu.Unlock()
	ans := answerCancelled(ReasonCancelled)
	claimed := pending[:0]
	for _, p := range pending {
		if p.claim(ans) { // before session/cancel: the answer event precedes what the agent does next
			claimed = append(claimed, p)
		}
	}
	if err := a.notify("session/cancel", map[string]string{"sessionId": s.id}); err != nil {
		a.opts.Logger.Debug("acphost: session/cancel not sent", "err", err)
	}
	for _, p := range claimed {
		p.send(ans)
	}
}

// cancelRequest handles $/cancel_request from the agent: the handler of
// that request sees its ctx end and the request is answered at once
// (permission: "cancelled"; others: -32800).
func (a *agent) cancelRequest(params json.RawMessage) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	a.mu.Lock()
	in := a.inflight[string(p.RequestID)]
	a.mu.Unlock()
	if in == nil {
		return
	}
	in.cancel()
	a.mu.Lock()
	perm := in.perm
	a.mu.Unlock()
	if perm != nil {
		a.wg.Add(1)
		go func() { // settling writes: keep it off the read loop
			defer a.wg.Done()
			perm.settle(answerCancelled(ReasonWithdrawn))
		}()
	}
}
