package acphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/fastjson"
	"github.com/acphost/acphost/internal/wire"
)

// Request is one prompt turn.
type Request struct {
	// Prompt is the text of the prompt (may be empty when Content is set).
	Prompt string
	// Content follows the text: images, resources, resource links.
	Content []acp.ContentBlock
	// Discard has the turn keep nothing for its Response but StopReason,
	// SessionID, Meta, Usage, Cost and Restarted: for callers who take the turn from
	// its events or OnUpdate, so a long turn costs no memory that grows.
	Discard bool
}

func (r Request) blocks() []acp.ContentBlock {
	out := make([]acp.ContentBlock, 0, 1+len(r.Content))
	if r.Prompt != "" || len(r.Content) == 0 {
		out = append(out, acp.TextBlock(r.Prompt))
	}
	return append(out, r.Content...)
}

// Response is what a turn produced.
type Response struct {
	// Text is the agent's answer: its message chunks only, never thoughts.
	// Chunks of one message are joined as sent; another message (a new
	// messageId, or text after a tool call or a thought) starts a
	// paragraph of its own, after a blank line.
	Text string
	// Thought is the agent's reasoning (thought chunks), kept apart.
	Thought string
	// StopReason is why the turn ended; "cancelled" for a cancelled turn.
	StopReason acp.StopReason
	// ToolCalls are the final states of the turn's tool calls, in the order
	// they first appeared.
	ToolCalls []acp.ToolCall
	// Plan is the last plan the agent sent during the turn.
	Plan []acp.PlanEntry
	// SessionID is the session the turn ran on, also when the turn
	// failed or could not start (then the session's id at the time).
	SessionID string
	// Meta is the prompt result's _meta, raw.
	Meta json.RawMessage
	// Usage is the tokens the turn used, as the agent reported them in
	// the prompt result's usage (unstable in the schema: decoded only with
	// ACPOptions.Unstable, and may change with the spec). Nil: not
	// reported, Unstable off, or malformed (not an object, or a required
	// total missing or not a count; the Logger says so). An optional count
	// of the wrong type is left nil.
	Usage *acp.Usage
	// Cost is the session's cumulative cost as of the last usage_update
	// the agent sent during the turn; nil when it sent none with a cost.
	Cost *acp.Cost
	// Restarted is set when the agent was restarted before this turn and
	// the session was re-attached (its context kept).
	Restarted *RestartError
	// Truncated is set when the turn had more to keep than
	// ACPOptions.Limits.MaxResponseBytes allows: text, thoughts and tool calls
	// past it are missing here (they were streamed), and a tool call kept
	// may hold an earlier state than its last.
	Truncated bool
}

// turn is one running prompt. Its response fields are written only by the
// dispatcher goroutine until delivery ends (barrier or detach).
type turn struct {
	env      *turnEnv      // what it needs of the agent it runs on
	s        *sessionState // its session's record on that agent
	emitFn   func(StreamEvent)
	barrier  chan struct{}      // closed when every update before the answer was delivered
	answered chan promptOutcome // the prompt's answer (or the agent's death)
	stop     chan struct{}      // closed by halt (Cancel, a watchdog)
	stopped  sync.Once
	// stopCause is why the turn was halted; set before stop is closed.
	stopCause error
	guard     atomic.Pointer[writeGuard] // the prompt's write, while it is being written
	// emitting counts dispatcher calls into this turn in progress.
	emitting sync.WaitGroup
	// seq numbers the turn, and ctx ends with it (halt ends it early): the
	// turn as host tools see it (see begin).
	seq    uint64
	ctx    context.Context
	endCtx context.CancelCauseFunc

	text, thought strings.Builder
	// textMsg is the messageId of the last message chunk kept, textBreak
	// that a tool call or a thought came after it: the next message
	// chunk starts a paragraph of its own (see Response.Text).
	textMsg   string
	textBreak bool
	tools     map[string]*turnTool
	order     []string
	plan      []acp.PlanEntry
	room      int               // bytes the Response may still keep (MaxResponseBytes)
	discard   bool              // Request.Discard: keep nothing
	meta      map[string]string // the prompt's _meta (TurnWatch.Meta); nil: none
	truncated bool              // something was not kept for want of room

	cost *acp.Cost // the last usage_update's cost

	ended     bool // delivery ended; guarded by the session's mu
	cancelled bool // the turn was cancelled: later permissions are answered "cancelled"; guarded by the session's mu
	// cancelSent is closed once session/cancel is written (or the turn
	// ended without it): answers made "cancelled" by the cancel wait for
	// it. Made when the cancel is decided; guarded by the session's mu.
	cancelSent chan struct{}
	// answering counts the answers decided before the cancel and not yet
	// written: session/cancel is written after them (see orderAnswer).
	answering sync.WaitGroup

	lastActivity atomic.Int64 // unix nanos of the last update, for IdleTimeout
	asking       atomic.Int32 // requests of the turn waiting for a person (permissions, elicitations)
}

// turnToolCost is what keeping a tool call costs a turn besides its state:
// its entry, its place in the order, and its copy in Response.ToolCalls.
const turnToolCost = 320

type turnTool struct {
	state    acp.ToolCall
	cost     int // what it takes of the turn's room
	resulted bool
}

// turnSeq numbers turns for HostToolCall.Turn.
var turnSeq atomic.Uint64

// begin gives the turn its number and the context host tools' handlers
// run in, which ends when the turn does or is halted.
func (t *turn) begin(ctx context.Context) {
	t.seq = turnSeq.Add(1)
	t.ctx, t.endCtx = context.WithCancelCause(ctx)
}

// finish ends the turn's context (run defers it).
func (t *turn) finish() { t.endCtx(errTurnOver) }

var errTurnOver = fmt.Errorf("acphost: the turn is over: %w", context.Canceled)

// halt asks the turn to stop for cause (the Cancel button, a watchdog),
// bounding the prompt's write if it is still being written. The first
// cause wins. It decides the cancel: from now on the turn's requests are
// answered "cancelled", whatever their hooks say.
func (t *turn) halt(cause error) {
	t.stopped.Do(func() {
		t.stopCause = cause
		t.s.decideCancel(t)
		close(t.stop)
		if t.endCtx != nil {
			t.endCtx(cause)
		}
	})
	if g := t.guard.Load(); g != nil {
		g.arm(t.stopCause)
	}
}

func (t *turn) halted() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

func (t *turn) touch() { t.lastActivity.Store(time.Now().UnixNano()) }

// askBegan and askEnded count a request of the turn that waits for a
// person: meanwhile the turn is not idle (IdleTimeout).
func (t *turn) askBegan() { t.asking.Add(1) }

func (t *turn) askEnded() {
	t.asking.Add(-1)
	t.touch()
}

// streams reports whether the turn has a stream (GenerateStream, Stream):
// only a stream is shown answers.
func (t *turn) streams() bool { return t.emitFn != nil }

func (t *turn) emit(ev StreamEvent) {
	if t.emitFn != nil {
		ev.SessionID = t.s.id // fixed for the sessionState: no lock, no allocation
		_ = t.env.cb.safely("emit", func() { t.emitFn(ev) })
	}
}

// observe folds one delivered update into the turn and its stream;
// toolSize is a tool call update's merged size when the caller knows it
// (see keepTool), else 0.
func (t *turn) observe(u acp.Update, toolSize int) {
	t.touch()
	switch u := u.(type) {
	case *acp.MessageChunk:
		t.observeChunk(u)
	case *acp.ToolCallUpdate:
		t.textBreak = true
		t.observeTool(u.State, toolSize, u)
	case *acp.PlanUpdate:
		if !t.discard {
			t.plan = u.Entries
		}
		t.emit(StreamEvent{Type: EventPlan, Plan: u.Entries, Update: u})
	case *acp.UsageUpdate:
		if u.Cost != nil {
			t.cost = u.Cost
		}
		t.emit(StreamEvent{Type: EventUsage, Usage: u, Update: u})
	case *acp.CurrentModeUpdate:
		t.emit(StreamEvent{Type: EventMode, Mode: u.ModeID, Update: u})
	case *acp.NoticeUpdate:
		t.emit(StreamEvent{Type: EventNotice, Notice: u, Update: u})
	case *acp.CompactionUpdate, *acp.CompactionSummaryChunk:
		t.emit(StreamEvent{Type: EventCompaction, Update: u})
	}
}

func (t *turn) observeChunk(u *acp.MessageChunk) {
	if u.Content.Type != "text" {
		return
	}
	switch u.Kind() {
	case acp.KindAgentMessageChunk:
		kept := u.Content.Text
		if t.textBreak || (u.MessageID != "" && t.textMsg != "" && u.MessageID != t.textMsg) {
			kept = paragraphBreak(t.text.String(), kept) + kept
		}
		t.textBreak = false
		if u.MessageID != "" {
			t.textMsg = u.MessageID
		}
		t.keepText(&t.text, kept)
		t.emit(StreamEvent{Type: EventText, Delta: u.Content.Text, Update: u})
	case acp.KindAgentThoughtChunk:
		t.textBreak = true
		t.keepText(&t.thought, u.Content.Text)
		t.emit(StreamEvent{Type: EventThought, Delta: u.Content.Text, Update: u})
	}
}

// paragraphBreak is what goes between the text kept so far and the first
// chunk of another message: a blank line, unless either side has one.
func paragraphBreak(kept, next string) string {
	switch {
	case kept == "", next == "", strings.HasPrefix(next, "\n"), strings.HasSuffix(kept, "\n\n"):
		return ""
	case strings.HasSuffix(kept, "\n"):
		return "\n"
	}
	return "\n\n"
}

// keepText appends a chunk to the Response's text if there is room.
func (t *turn) keepText(b *strings.Builder, s string) {
	switch {
	case t.discard:
	case len(s) > t.room:
		t.truncated = true
	default:
		t.room -= len(s)
		if b.Cap()-b.Len() < len(s) {
			// Grow doubles (WriteString's append grows large buffers by
			// a quarter): a long answer's copies cost about twice its
			// text instead of five times, the buffer at most twice it.
			b.Grow(len(s))
		}
		b.WriteString(s)
	}
}

// keepTool records a tool call's state for the Response and for telling
// first sightings and results apart, within the turn's room; nil when
// there was no room for a new one (then each of its updates is emitted as
// tool_call). size is toolCallSize(state) when the caller knows it, else 0.
func (t *turn) keepTool(state *acp.ToolCall, size int) (tt *turnTool, seen bool) {
	tt, seen = t.tools[state.ID]
	cost := turnToolCost + len(state.ID)
	if !t.discard {
		if size == 0 {
			size = toolCallSize(state)
		}
		cost += size
	}
	if !seen {
		tt = &turnTool{}
	}
	switch {
	case cost-tt.cost > t.room:
		t.truncated = true
		if !seen {
			return nil, false
		}
		return tt, true // keeps its earlier state
	case !seen:
		t.tools[state.ID] = tt
		t.order = append(t.order, state.ID)
	}
	t.room -= cost - tt.cost
	tt.cost = cost
	if !t.discard {
		tt.state = *state
	}
	return tt, seen
}

// observeTool treats tool calls as upserts keyed by id: the first sighting
// (a tool_call, a tool_call_update or a permission request) emits
// tool_call, later ones tool_update, and reaching completed or failed emits
// tool_result once.
// size is toolCallSize(state) when known (see keepTool).
func (t *turn) observeTool(state acp.ToolCall, size int, u acp.Update) {
	tt, seen := t.keepTool(&state, size)
	snapshot := state // events keep their own copy: later updates change tt.state
	ev := StreamEvent{Type: EventToolUpdate, Name: state.Title, ID: state.ID, Via: ViaACP, Kind: state.Kind,
		Status: state.Status, Input: state.RawInput, Output: state.RawOutput, ToolCall: &snapshot, Update: u}
	if !seen {
		ev.Type = EventToolCall
	}
	if u != nil || !seen {
		t.emit(ev)
	}
	if state.Status.Finished() && (tt == nil || !tt.resulted) {
		if tt != nil {
			tt.resulted = true
		}
		ev.Type = EventToolResult
		t.emit(ev)
	}
}

// response assembles the turn's Response; call it once delivery has ended.
func (t *turn) response(stop acp.StopReason, res promptResult) Response {
	r := Response{Text: t.text.String(), Thought: t.thought.String(), StopReason: stop, Plan: t.plan, SessionID: t.s.id, Meta: res.Meta, Cost: t.cost, Truncated: t.truncated}
	if t.env.unstable && len(res.Usage) > 0 {
		u, err := acp.DecodeUsage(res.Usage)
		if err != nil {
			t.env.log.Warn("acphost: the prompt result's usage is malformed; Response.Usage is nil", "session", t.s.id, "err", err)
		}
		r.Usage = u
	}
	if t.discard {
		return r
	}
	for _, id := range t.order {
		r.ToolCalls = append(r.ToolCalls, t.tools[id].state)
	}
	return r
}

type promptResult struct {
	StopReason acp.StopReason  `json:"stopReason"`
	Meta       json.RawMessage `json:"_meta"`
	Usage      json.RawMessage `json:"usage"` // unstable: decoded by response with ACPOptions.Unstable
}

type promptOutcome struct {
	res promptResult
	err error
}

// run sends the prompt and waits for its answer, a cancellation or the
// agent's death; h is the session's handle, whose Cancel reaches the turn
// while it runs.
func (t *turn) run(ctx context.Context, h *Session, req Request) (Response, error) {
	a := t.env
	t.begin(ctx)
	defer t.finish()
	a.running.Add(1)
	defer a.running.Add(-1)
	a.dispatcher.q.barrier(func() { t.s.attach(t) })
	h.setRunning(t)
	defer h.setRunning(nil)

	wd := a.watchdog(t) // its clock starts before the prompt's write
	defer wd.stop()
	answered, err := t.sendPrompt(ctx, req)
	if err != nil {
		t.s.detach(t)
		stop := acp.StopReason("")
		if errors.Is(err, ErrAgentNotReading) && (ctx.Err() != nil || t.halted()) {
			stop = acp.StopCancelled // cancelled while the prompt was being written
		}
		return t.response(stop, promptResult{}), err
	}
	var out promptOutcome
	select {
	case <-t.barrier:
		// The answer came and everything before it was delivered: one
		// wake-up for both, however busy the dispatcher was.
		out = <-answered
	case <-a.dead:
		out = <-answered // the answer, or the death (failPrompts)
	case <-ctx.Done():
		return t.cancel(answered, ctx.Err())
	case <-t.stop:
		return t.cancel(answered, t.stopCause)
	}
	if out.err == nil && a.closedByClient() {
		// Close came before the turn returned: the turn fails, as Close
		// promises, although the answer may have raced in (an elicitation
		// Close answered "cancel" lets the agent end its turn first).
		out.err = a.cause()
	}
	return t.conclude(out, nil)
}

// sendPrompt writes session/prompt and returns a channel with its answer.
// The turn is the call's Pending: the read loop hands it the answer
// itself (see turn.Answer), with no goroutine waiting for it.
func (t *turn) sendPrompt(ctx context.Context, req Request) (<-chan promptOutcome, error) {
	a := t.env
	if a.isDead() {
		return nil, a.cause()
	}
	blocks := req.blocks()
	encoded, err := encodeBlocks(blocks)
	if err != nil {
		return nil, fmt.Errorf("acphost: encoding the prompt: %w", err)
	}
	g := a.writes.guard(ctx)
	t.guard.Store(g)
	if t.halted() {
		g.arm(t.stopCause) // Cancel or a watchdog came first
	}
	settled, err := a.conn.Send(t, func(b []byte, id uint64) []byte { return appendPrompt(b, id, t.s.id, blocks, encoded, t.meta) })
	t.guard.Store(nil)
	g.release()
	switch {
	case errors.Is(err, wire.ErrWritesAborted):
		return nil, a.writes.notReading(err, g.armedBy())
	case err != nil && settled: // the agent died meanwhile: its cause is in answered
		return t.answered, nil
	case err != nil:
		return nil, a.deathCause(err) // a failed write means a dying agent, usually
	}
	return t.answered, nil
}

// Answer is the prompt's answer, on the read loop: it is handed to the
// turn before the turn barrier is queued (the turn waits for that), and
// before anything read after it is dispatched.
func (t *turn) Answer(result, rpcErr json.RawMessage) {
	t.answered <- promptOutcomeOf(result, rpcErr)
	t.env.dispatcher.q.barrier(t.endDelivery)
}

// endDelivery runs on the dispatcher when it reaches the prompt's answer:
// every update before it has been delivered.
func (t *turn) endDelivery() {
	t.s.endTurn(t)
	t.s.pruneTools()
	close(t.barrier)
}

// Fail gives the turn the agent's death, when it came before the answer.
func (t *turn) Fail(cause error) {
	t.answered <- promptOutcome{err: cause}
}

// encodeBlocks encodes the blocks appendPrompt cannot write itself (all
// but plain text); nil when there are none.
func encodeBlocks(blocks []acp.ContentBlock) ([][]byte, error) {
	var encoded [][]byte
	for i, b := range blocks {
		if b.Type == acp.BlockText && b.Attachment == nil {
			continue
		}
		if encoded == nil {
			encoded = make([][]byte, len(blocks))
		}
		var err error
		if encoded[i], err = json.Marshal(b); err != nil {
			return nil, err
		}
	}
	return encoded, nil
}

// appendPrompt appends a session/prompt request, taking the blocks that
// are not plain text from encoded.
func appendPrompt(b []byte, id uint64, session string, blocks []acp.ContentBlock, encoded [][]byte, meta map[string]string) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":"session/prompt","params":{"sessionId":`...)
	b = fastjson.AppendString(b, session)
	b = append(b, `,"prompt":[`...)
	for i, block := range blocks {
		if i > 0 {
			b = append(b, ',')
		}
		if encoded != nil && encoded[i] != nil {
			b = append(b, encoded[i]...)
			continue
		}
		b = append(b, `{"type":"text"`...)
		if block.Text != "" {
			b = append(b, `,"text":`...)
			b = fastjson.AppendString(b, block.Text)
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(meta) > 0 {
		b = append(b, `,"_meta":{`...)
		for i, k := range slices.Sorted(maps.Keys(meta)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = fastjson.AppendString(b, k)
			b = append(b, ':')
			b = fastjson.AppendString(b, meta[k])
		}
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// conclude waits for the turn barrier and builds the result. cancelErr is
// the cancellation cause, if the turn was cancelled.
func (t *turn) conclude(out promptOutcome, cancelErr error) (Response, error) {
	a := t.env
	if out.err == nil {
		select {
		case <-t.barrier:
		case <-a.dead:
			a.dispatcher.flush()
		}
	} else {
		a.dispatcher.flush() // an agent that died mid-turn: what it said first still counts
	}
	t.s.detach(t)
	stop := out.res.StopReason
	if cancelErr != nil {
		// Lenient: an error or end_turn after our cancel still means cancelled.
		resp := t.response(acp.StopCancelled, out.res)
		if out.err != nil && a.isDead() {
			return resp, out.err
		}
		return resp, cancelErr
	}
	if out.err != nil {
		return t.response(stop, out.res), out.err
	}
	return t.response(stop, out.res), nil
}

// errCancelCalled is the cause of a turn stopped by Cancel.
var errCancelCalled = fmt.Errorf("acphost: turn stopped by Cancel: %w", context.Canceled)

// cancel is the stop button: session/cancel, every pending permission
// of the session answered "cancelled" (and later ones too, until the next
// turn), updates still delivered, then a bounded wait for the answer.
func (t *turn) cancel(answered <-chan promptOutcome, cause error) (Response, error) {
	a := t.env
	grace := time.NewTimer(a.cancelGrace)
	defer grace.Stop()
	g := a.writes.guard(context.Background())
	g.arm(cause) // the grace covers the writes too, should the agent not read them
	t.beginCancel()
	g.release()
	if !g.aborted {
		select {
		case out := <-answered:
			return t.conclude(out, cause)
		case <-grace.C:
		}
	}
	// The agent may still be running the turn: never reuse it.
	a.poison(ErrCancelUnconfirmed)
	t.s.detach(t)
	return t.response(acp.StopCancelled, promptResult{}), fmt.Errorf("%w within %v: %w", a.poisonCause(), a.cancelGrace, cause)
}

// beginCancel sends session/cancel and answers the session's requests
// waiting for a person "cancelled" (claimed before session/cancel is
// sent, so their answer events precede what the agent does next; written
// after it). An answer decided before the cancel is written before
// session/cancel; one decided after it is "cancelled" and written after
// (see orderAnswer): the agent never reads an allow after session/cancel.
func (t *turn) beginCancel() {
	a := t.env
	pending := t.s.cancelling(t)
	claimed := pending[:0]
	for _, p := range pending {
		if p.claimCancelled() {
			claimed = append(claimed, p)
		}
	}
	t.answering.Wait() // bounded by the cancel's write guard
	if err := a.notify("session/cancel", map[string]string{"sessionId": t.s.id}); err != nil {
		a.log.Debug("acphost: session/cancel not sent", "err", err)
	}
	t.s.cancelWritten(t)
	for _, p := range claimed {
		p.sendCancelled()
	}
}

// isDeath reports whether err means the agent is gone.
func isDeath(err error) bool {
	return errors.Is(err, ErrAgentExited) || errors.Is(err, ErrProtocol) || errors.Is(err, ErrClosed)
}

// watchdog halts a turn that runs past TurnTimeout or goes IdleTimeout
// without an update.
type watchdog struct {
	done chan struct{} // nil when there are no timeouts
}

func (wd *watchdog) run(life context.Context, turnLimit, idleLimit time.Duration, t *turn) {
	start := time.Now()
	tick := idleLimit / 4
	if tick <= 0 || (turnLimit > 0 && turnLimit < tick) {
		tick = turnLimit
	}
	tick = max(tick, time.Millisecond)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-wd.done:
			return
		case <-life.Done():
			return
		case now := <-ticker.C:
			if turnLimit > 0 && now.Sub(start) >= turnLimit {
				t.halt(fmt.Errorf("%w after %v: %w", ErrTurnTimeout, turnLimit, context.DeadlineExceeded))
				return
			}
			if t.asking.Load() > 0 {
				t.touch()
			}
			if idleLimit > 0 && now.Sub(time.Unix(0, t.lastActivity.Load())) >= idleLimit {
				t.halt(fmt.Errorf("%w: no update for %v: %w", ErrIdleTimeout, idleLimit, context.DeadlineExceeded))
				return
			}
		}
	}
}

func (wd *watchdog) stop() {
	if wd.done != nil {
		close(wd.done)
	}
}

// promptOutcomeOf decodes a prompt's answer.
func promptOutcomeOf(result, rpcErr json.RawMessage) promptOutcome {
	var out promptOutcome
	if len(rpcErr) > 0 && string(rpcErr) != "null" {
		var e wire.Error
		if err := json.Unmarshal(rpcErr, &e); err != nil {
			out.err = &ProtocolError{Msg: "session/prompt answered with a malformed error", Err: err}
		} else {
			out.err = &RPCError{Code: e.Code, Message: e.Message, Data: e.Data, Method: "session/prompt"}
		}
		return out
	}
	if res, ok := decodePromptResult(result); ok {
		out.res = res
		return out
	}
	if err := json.Unmarshal(result, &out.res); err != nil {
		out.err = &ProtocolError{Msg: "session/prompt answered with a malformed result", Err: err}
	}
	return out
}

// decodePromptResult reads a prompt's result in one pass, as encoding/json
// would; ok is false for anything it leaves to encoding/json (see
// fastjson.FoldsTo). result is only valid during the call: _meta is copied.
func decodePromptResult(result json.RawMessage) (r promptResult, ok bool) {
	c := fastjson.Cursor{B: result}
	ok = c.Object(func(key []byte) bool {
		switch string(key) {
		case "stopReason":
			if c.Null() {
				return true
			}
			s, ok := c.StrBytes()
			r.StopReason = knownStopReason(s)
			return ok
		case "_meta":
			v, ok := c.Value()
			r.Meta = bytes.Clone(v)
			return ok
		case "usage":
			v, ok := c.Value()
			r.Usage = bytes.Clone(v)
			return ok
		}
		if fastjson.FoldsTo(key, "stopReason", "_meta", "usage") {
			return false
		}
		_, ok := c.Value()
		return ok
	})
	return r, ok && c.End()
}

// knownStopReason returns s without allocating for the reasons ACP defines.
func knownStopReason(s []byte) acp.StopReason {
	for _, r := range [...]acp.StopReason{acp.StopEndTurn, acp.StopCancelled, acp.StopMaxTokens, acp.StopMaxTurnRequests, acp.StopRefusal} {
		if string(s) == string(r) {
			return r
		}
	}
	return acp.StopReason(s)
}

// emitHostTool reports a host tool's call to t's stream, on the
// dispatcher after what was read so far (if t still runs by then). The
// item counts its arguments and result against the queue's bounds, so an
// agent that calls host tools faster than the stream is read waits (its
// HTTP request does) instead of growing the queue; past the lifted bound
// the event is not queued, and the Logger says so.
func (t *turn) emitHostTool(call HostToolCall) {
	if t.emitFn == nil {
		return
	}
	c := call
	size := itemOverhead + len(c.Args) + len(c.Result)
	queued := t.env.dispatcher.q.push(item{kind: itemBarrier, size: size, barrier: func() {
		cur := t.s.current()
		if cur == nil {
			return
		}
		defer cur.emitting.Done()
		if cur == t {
			t.emit(StreamEvent{Type: EventHostTool, Name: c.Tool, HostTool: &c, Err: c.Err})
		}
	}}, true)
	if !queued {
		t.env.log.Warn("acphost: a host tool call's event was not queued: the queue is over its bound", "tool", c.Tool, "session", c.SessionID)
	}
}

// turnEnv is what a turn needs of the agent it runs on, made once by the
// agent and handed to each turn: the connection and its write guards, the
// delivery queue, the callbacks, the agent's death and how to give up on
// it. The turn holds no agent.
type turnEnv struct {
	conn        *wire.Conn
	writes      *writes
	dispatcher  *dispatcher
	cb          *callbacks
	log         *slog.Logger
	cancelGrace time.Duration
	unstable    bool            // ACPOptions.Unstable: decode the unstable parts of a prompt result
	running     *atomic.Int32   // the agent's turns running
	dead        <-chan struct{} // closed when the agent has died
	cause       func() error    // why it died; read after dead
	deathCause  func(fallback error) error
	poison      func(cause error)
	poisonCause func() error
	notify      func(method string, params any) error
	watchdog    func(t *turn) *watchdog // the turn's timeouts
}

func (e *turnEnv) isDead() bool { return closed(e.dead) }

// closedByClient reports whether the agent died because the client closed.
func (e *turnEnv) closedByClient() bool { return e.isDead() && errors.Is(e.cause(), ErrClosed) }
