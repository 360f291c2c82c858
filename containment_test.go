package acphost

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// These are the attacks of a hostile agent on the host's memory and on
// other sessions (SPEC.md, Containment). Each ends in a typed error or a
// defined answer, within the memory budget SPEC.md writes down.

// startTurn runs a turn in the background and returns the prompt's id as
// the agent saw it, and the turn's outcome.
func startTurn(t *testing.T, ctx context.Context, s *Session, h *hostileAgent, req Request) (promptID string, done <-chan turnOutcome) {
	t.Helper()
	out := make(chan turnOutcome, 1)
	go func() {
		resp, err := s.GenerateCtx(ctx, req)
		out <- turnOutcome{resp, err}
	}()
	select {
	case id := <-h.prompts:
		return string(id), out
	case o := <-out:
		t.Fatalf("the turn ended before the prompt reached the agent: %v", o.err)
	}
	return "", nil
}

type turnOutcome struct {
	resp Response
	err  error
}

// flood sends n lines built by line(i) from a goroutine of its own and
// reports how many the client took in; finished is closed when all were.
func flood(h *hostileAgent, n int, line func(i int) []byte) (sent *atomic.Int64, finished chan struct{}) {
	sent, finished = new(atomic.Int64), make(chan struct{})
	go func() {
		defer close(finished)
		for i := range n {
			if !h.send(line(i)) {
				return
			}
			sent.Add(1)
		}
	}()
	return sent, finished
}

// waitPaused waits until the client stops reading the flood (reading is
// paused: paused reports it) and fails if the whole flood was read first.
func waitPaused(t *testing.T, what string, finished <-chan struct{}, sent *atomic.Int64, paused func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !paused() {
		select {
		case <-finished:
			t.Fatalf("%s: the client read all %d lines of the flood without pausing", what, sent.Load())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: reading neither paused nor finished (%d lines read)", what, sent.Load())
		}
		runtime.Gosched()
	}
}

func TestAttackRequestFloodWhileDeafIsBounded(t *testing.T) {
	base := runtime.NumGoroutine()
	c, h := connectHostile(t, ACPOptions{Timeouts: Timeouts{CancelGrace: 200 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, done := startTurn(t, ctx, c.Session(), h, Request{Prompt: "go"})
	h.stopReading() // our answers now block: each one holds what it answers
	const n = 20000
	sent, finished := flood(h, n, func(i int) []byte {
		if i%2 == 0 { // a notification sent as a request: answered {}
			return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/update","params":{"sessionId":"s1","update":%s}}`+"\n", i, textChunk("x"))
		}
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"x/unknown","params":{}}`+"\n", i) // -32601
	})
	waitPaused(t, "requests", finished, sent, func() bool { return c.agent().requests.full() })
	grown := runtime.NumGoroutine() - base
	require.Less(t, grown, defaultMaxPendingRequests+32, "goroutines after %d requests were read", sent.Load())
	require.Less(t, sent.Load(), int64(defaultMaxPendingRequests+16), "requests read while none could be answered")

	cancel() // the stop button still works: the deaf agent is abandoned, or stopped for its flood
	o := <-done
	require.True(t, errors.Is(o.err, ErrAgentNotReading) || errors.Is(o.err, ErrFlood), "%v", o.err)
	if err := c.Close(); err != nil { // Close reports how the agent ended
		require.ErrorIs(t, err, ErrFlood)
	}
}

func TestAttackUpdateFloodWhileACallWaitsIsBounded(t *testing.T) {
	gate := make(chan struct{})
	var delivered atomic.Int64
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(acp.Update) {
		delivered.Add(1)
		<-gate // a UI that is slow to draw: nothing is delivered meanwhile
	},
		Limits: Limits{MaxQueuedBytes: 4 << 20},
	}, "session/set_mode")
	defer close(gate)
	setMode := make(chan error, 1)
	go func() { setMode <- c.Session().SetMode(context.Background(), "plan") }()
	<-h.calls // set_mode is pending and will never be answered
	base := heapInUse()
	chunk := textChunk(strings.Repeat("x", 2000))
	var sent *atomic.Int64
	var finished chan struct{}
	grown := peakHeap(base, func() {
		sent, finished = flood(h, 50000, func(int) []byte {
			return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + chunk + "}}\n")
		})
		select {
		case err := <-setMode:
			setMode <- err
		case <-finished:
		}
	})
	var err error
	select {
	case err = <-setMode:
	case <-time.After(10 * time.Second):
		t.Fatalf("SetMode still waits after the client read all %d updates (%d MiB) of the flood", sent.Load(), sent.Load()*2/1024)
	}
	require.Error(t, err, "SetMode while %d updates (%d MiB) queued behind a blocked OnUpdate", sent.Load(), sent.Load()*2/1024)
	require.ErrorIs(t, err, ErrFlood)
	require.ErrorIs(t, err, ErrProtocol)
	require.Less(t, grown, 48.0, "MiB of heap for the flood (16 MiB may wait)")
}

func TestAttackLargeUpdatesAreBoundedInBytes(t *testing.T) {
	gate := make(chan struct{})
	open := sync.OnceFunc(func() { close(gate) })
	var delivered atomic.Int64
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(acp.Update) {
		if delivered.Add(1) == 1 {
			<-gate
		}
	}})
	t.Cleanup(open) // before the client's Close, should the test fail
	ctx := context.Background()
	promptID, done := startTurn(t, ctx, c.Session(), h, Request{Prompt: "go"})
	base := heapInUse()
	big := textChunk(strings.Repeat("y", 1<<20))
	const n = 200
	var sent *atomic.Int64
	var finished chan struct{}
	grown := peakHeap(base, func() {
		sent, finished = flood(h, n, func(int) []byte {
			return []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":` + big + "}}\n")
		})
		waitPaused(t, "1 MiB updates", finished, sent, func() bool { return c.agent().dispatcher.q.full() })
	})
	require.Less(t, grown, 48.0, "MiB of heap with %d updates of 1 MiB read", sent.Load())
	open()
	<-finished
	h.reply([]byte(promptID), `{"stopReason":"end_turn"}`)
	o := <-done
	require.NoError(t, o.err)
	require.EqualValues(t, n, delivered.Load(), "every update is delivered: backpressure, not a drop")
}

func TestAttackTurnStateIsBounded(t *testing.T) {
	const budget = 4 << 20
	c, h := connectHostile(t, ACPOptions{Limits: Limits{MaxResponseBytes: budget}})
	base := heapInUse()
	const tools = 200000
	var resp Response
	peak := peakHeap(base, func() {
		promptID, done := startTurn(t, context.Background(), c.Session(), h, Request{Prompt: "go"})
		text := textChunk(strings.Repeat("z", 64<<10))
		for i := range tools {
			h.update("s1", fmt.Sprintf(`{"sessionUpdate":"tool_call","toolCallId":"t%d","title":"never finished %d","kind":"execute","status":"in_progress"}`, i, i))
			if i%500 == 0 {
				h.update("s1", text) // 26 MiB of answer in all
			}
		}
		h.reply([]byte(promptID), `{"stopReason":"end_turn"}`)
		o := <-done
		require.NoError(t, o.err)
		resp = o.resp
	})
	kept := float64(heapInUse()-base) / (1 << 20)
	require.True(t, resp.Truncated, "the Response says what it left out")
	require.LessOrEqual(t, len(resp.Text)+len(resp.Thought), budget)
	require.Less(t, len(resp.ToolCalls), tools)
	// The turn's Response (a builder may hold twice its text) and the
	// session's tool calls, each bounded by the budget.
	require.Less(t, kept, 4.0*budget/(1<<20), "MiB kept with the Response of a turn of %d tool calls", tools)
	require.Less(t, peak, 12.0*budget/(1<<20), "MiB of heap at the peak (garbage included)")
	resp = Response{}
	require.Less(t, float64(heapInUse())-float64(base), 3.0*budget, "heap kept by the session after the turn")
	t.Logf("peak %.1f MiB, kept with the Response %.1f MiB (budget %d MiB)", peak, kept, budget>>20)
}

func TestDiscardKeepsNothing(t *testing.T) {
	c, h := connectHostile(t, ACPOptions{})
	promptID, done := startTurn(t, context.Background(), c.Session(), h, Request{Prompt: "go", Discard: true})
	h.update("s1", textChunk("hello"))
	h.update("s1", `{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"read","status":"completed"}`)
	h.reply([]byte(promptID), `{"stopReason":"end_turn"}`)
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, acp.StopEndTurn, o.resp.StopReason)
	require.Empty(t, o.resp.Text)
	require.Empty(t, o.resp.ToolCalls)
	require.False(t, o.resp.Truncated)
}

func TestAttackMadeUpSessionsAreNotKept(t *testing.T) {
	var seen atomic.Int64
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(u acp.Update) {
		if u.SessionID() != "s1" {
			seen.Add(1)
		}
	}})
	base := heapInUse()
	const n = 100000
	for i := range n {
		h.update(fmt.Sprintf("made-up-%d", i), `{"sessionUpdate":"tool_call","toolCallId":"t","title":"rm -rf ~","kind":"execute","status":"pending"}`)
	}
	// A turn on the real session: everything sent before it has been read.
	promptID, done := startTurn(t, context.Background(), c.Session(), h, Request{Prompt: "go"})
	h.reply([]byte(promptID), `{"stopReason":"end_turn"}`)
	require.NoError(t, (<-done).err)
	require.Zero(t, seen.Load(), "updates for sessions this connection never opened reached OnUpdate")
	require.Less(t, float64(heapInUse())-float64(base), float64(4<<20), "heap kept for %d made-up sessions", n)
	require.EqualValues(t, n, c.Stats().ForeignMessages)
}

func TestAttackAnotherConnectionsSessionIsNotImpersonated(t *testing.T) {
	type seenMsg struct{ session, what string }
	seen := make(chan seenMsg, 16)
	opts := ACPOptions{ // one set of hooks for both, as a Pool has
		OnUpdate: func(u acp.Update) { seen <- seenMsg{u.SessionID(), string(u.Kind())} },
		OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
			seen <- seenMsg{req.SessionID, "permission"}
			return req.Options[0].ID, nil
		},
	}
	connectHostile(t, opts) // the victim: session "s1"
	_, ah := tryConnectHostileAs(t, "attacker-session", opts)
	ah.update("s1", `{"sessionUpdate":"tool_call","toolCallId":"t","title":"rm -rf ~","kind":"execute","status":"pending"}`)
	ah.send([]byte(`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t","title":"rm -rf ~","kind":"execute"},"options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}` + "\n"))
	answer := <-ah.answers
	require.Contains(t, string(answer), `"error"`, "a permission request for another connection's session is refused")
	require.Contains(t, string(answer), `-32602`)
	// A genuine update of the attacker's own session still arrives, after.
	ah.update("attacker-session", textChunk("mine"))
	got := <-seen
	require.Equal(t, seenMsg{"attacker-session", string(acp.KindAgentMessageChunk)}, got, "the first message the hooks saw")
}

func tryConnectHostileAs(t *testing.T, session string, opts ACPOptions) (*ACPClient, *hostileAgent) {
	c, h, err := tryConnectHostile(t, context.Background(), opts, func(h *hostileAgent) { h.session = session })
	require.NoError(t, err)
	return c, h
}

func TestUpdateBeforeSessionNewAnswerIsDelivered(t *testing.T) {
	got := make(chan acp.Update, 4)
	// The agent speaks of its new session before answering session/new.
	c, _, err := tryConnectHostile(t, context.Background(), ACPOptions{OnUpdate: func(u acp.Update) { got <- u }}, func(h *hostileAgent) {
		go func() {
			call := <-h.calls
			h.update("s1", textChunk("early"))
			h.update("someone-else", textChunk("foreign"))
			h.reply(call.ID, `{"sessionId":"s1"}`)
			h.update("s1", textChunk("late"))
		}()
	}, "session/new")
	require.NoError(t, err)
	for _, want := range []string{"early", "late"} {
		u := <-got
		require.Equal(t, "s1", u.SessionID())
		require.Equal(t, want, u.(*acp.MessageChunk).Content.Text)
	}
	require.Eventually(t, func() bool { return c.Stats().ForeignMessages == 1 }, 5*time.Second, time.Millisecond)
}

func TestAttackFileRequestsHoldingContentAreFew(t *testing.T) {
	dir := t.TempDir()
	var running, most atomic.Int64
	gate := make(chan struct{})
	release := sync.OnceFunc(func() { close(gate) })
	_, h := connectHostile(t, ACPOptions{Dir: dir, FS: &FSOptions{Read: true, Write: true,
		OnWriteFile: func(ctx context.Context, p *WriteProposal) (string, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			select { // a human who takes their time
			case <-gate:
			case <-ctx.Done():
			}
			return p.Proposed, nil
		}}})
	t.Cleanup(release)
	const n = 40
	for i := range n {
		h.send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"fs/write_text_file","params":{"sessionId":"s1","path":%q,"content":"x"}}`+"\n", i, dir+fmt.Sprintf("/f%d", i)))
	}
	require.Eventually(t, func() bool { return running.Load() == maxFileRequests }, 10*time.Second, time.Millisecond)
	release()
	for range n {
		<-h.answers
	}
	require.EqualValues(t, maxFileRequests, most.Load(), "reviews running at once, each holding a file's content")
}
