package acphost

import (
	"errors"
	"sync"

	"github.com/acphost/acphost/acp"
)

// The defaults of the limits on what an agent may make the host hold
// (SPEC.md, Containment: the memory budget).
const (
	defaultMaxLineBytes       = 64 << 20
	defaultMaxQueuedUpdates   = 256
	defaultMaxQueuedBytes     = 16 << 20
	defaultMaxPendingRequests = 64
	defaultMaxResponseBytes   = 16 << 20

	// liftedFactor is how far past its byte bound the update queue may
	// grow while a host→agent call waits for its answer (see queue).
	liftedFactor = 4
	// itemOverhead is what a queued item costs besides its params.
	itemOverhead = 128
)

// Stats are counts a client keeps of what its agents sent.
type Stats struct {
	// ForeignMessages counts the session/update notifications and requests
	// that named a session the agent's connection never opened (and was
	// not opening), and the request-scoped elicitations that named no
	// request of the client's awaiting its answer: they reach no hook
	// (updates are skipped, requests are answered -32602) and are logged at
	// warning level.
	ForeignMessages int64
	// Sessions counts the client's open sessions (its default one
	// included) now.
	Sessions int
	// Queued counts what was read from the current agent and waits for
	// the dispatcher now: updates and the requests in line with them.
	Queued int
}

// requestBudget bounds the agent→client requests being handled at once,
// in number and in the bytes of their params: the read loop takes a share
// before a request is handed on and waits while none is left, which stops
// reading and so pushes back on the agent. One request larger than the
// byte bound is still taken when no other is pending. While lifted (a call
// waits for the agent's answer, see agent.lift) it takes up to
// liftedFactor times its bounds without waiting: requests stuck behind a
// dispatcher that waits for that answer must not keep it from being read;
// past that, acquire reports a flood.
type requestBudget struct {
	mu       sync.Mutex
	cond     sync.Cond
	n, bytes int
	maxN     int
	maxBytes int
	lifted   int
	waiting  bool // the read loop waits for a share
	closed   bool
}

func newRequestBudget(maxN, maxBytes int) *requestBudget {
	b := &requestBudget{maxN: maxN, maxBytes: maxBytes}
	b.cond.L = &b.mu
	return b
}

// acquire takes a share for a request of size bytes, waiting for room; it
// reports errClosedBudget once the budget is closed (the agent is gone)
// and ErrFlood past the lifted bounds.
func (b *requestBudget) acquire(size int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.closed && b.over(size, 1) {
		if b.lifted > 0 {
			if b.over(size, liftedFactor) {
				return ErrFlood
			}
			break
		}
		b.waiting = true
		b.cond.Wait()
	}
	b.waiting = false
	if b.closed {
		return errClosedBudget
	}
	b.n++
	b.bytes += size
	return nil
}

var errClosedBudget = errors.New("acphost: the agent is gone")

func (b *requestBudget) over(size, factor int) bool {
	return b.n > 0 && (b.n >= factor*b.maxN || b.bytes+size > factor*b.maxBytes)
}

func (b *requestBudget) lift(delta int) {
	b.mu.Lock()
	b.lifted += delta
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *requestBudget) release(size int) {
	b.mu.Lock()
	b.n--
	b.bytes -= size
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *requestBudget) close() {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

// full reports whether the read loop is waiting for a share.
func (b *requestBudget) full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// toolCallSize estimates the bytes a tool call's state holds: its strings
// and raw JSON (the decoders copy them), plus the structures around them
// (the struct, a map entry and a pointer to it).
func toolCallSize(tc *acp.ToolCall) int {
	n := 320 + len(tc.ID) + len(tc.Title) + len(tc.Kind) + len(tc.Status) + len(tc.Name) +
		len(tc.RawInput) + len(tc.RawOutput) + len(tc.Meta)
	for _, l := range tc.Locations {
		n += 32 + len(l.Path)
	}
	for _, c := range tc.Content {
		n += 80 + len(c.Type) + len(c.TerminalID) + len(c.Raw)
		if b := c.Content; b != nil {
			n += contentBlockSize(b)
		}
		if d := c.Diff; d != nil {
			n += len(d.Path) + len(d.NewText)
			if d.OldText != nil {
				n += len(*d.OldText)
			}
		}
	}
	return n
}

func contentBlockSize(b *acp.ContentBlock) int {
	n := 64 + len(b.Type) + len(b.Text) + len(b.Raw)
	a := b.Attachment
	if a == nil {
		return n
	}
	n += 96 + len(a.Data) + len(a.MimeType) + len(a.URI) + len(a.Name) + len(a.Title)
	if r := a.Resource; r != nil {
		n += 64 + len(r.URI) + len(r.MimeType) + len(r.Text) + len(r.Blob)
	}
	return n
}
