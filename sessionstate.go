package acphost

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/acphost/acphost/acp"
)

// sessionState is the client-side state of one agent session on one agent
// process: the record behind a Session, its turn, pending permissions,
// modes and tool calls.
type sessionState struct {
	a   sessionAgent // what it needs of the agent it lives on
	id  string
	pub atomic.Pointer[Session] // the handle this session serves, once opened

	replaying atomic.Bool // a session/load is replaying history
	dropped   atomic.Bool // closed and forgotten: look the id up again

	mu          sync.Mutex
	turn        *turn               // the turn updates are delivered to, nil between turns
	pending     map[asking]struct{} // requests of the session waiting for a person: permissions, elicitations
	modeState   acp.SessionModes
	options     []acp.ConfigOption
	said        SessionDetails // what the agent said of the session (see Session.Details)
	modeSet     string         // the mode the host set last, until the agent reports another (see effectiveMode)
	modeReports uint64         // modes the agent reported (noteCurrentMode), to tell one reported while the host set its own

	// tools is the merged state of the tool calls seen in the session,
	// toolBytes its estimated size (bounded by MaxResponseBytes), and turns
	// counts its ended turns. All are owned by the dispatcher goroutine: no
	// lock.
	tools     map[string]*toolRecord
	toolBytes int
	turns     uint64
}

// sessionHooks are a client's hooks as its sessions fall back on them.
type sessionHooks struct {
	onUpdate      func(acp.Update)
	onPermission  PermissionFunc
	onElicitation ElicitationFunc
}

// sessionAgent is what a session's record needs of the agent it lives on:
// the options (hooks, bounds), what the host knows of the agent, plan
// mode's flag, and whether a tool call touches only the agent's own state.
type sessionAgent struct {
	hooks         sessionHooks // the client's, for a session whose handle has none
	maxState      int          // Limits.MaxResponseBytes: the tool calls' state kept
	requireAsking bool
	log           *slog.Logger
	profile       *AgentProfile
	planMode      func() bool
	insideState   func(tc *acp.ToolCall) bool
}

func newSessionState(a sessionAgent, id string) *sessionState {
	return &sessionState{a: a, id: id, pending: map[asking]struct{}{}, tools: map[string]*toolRecord{}}
}

func (s *sessionState) setState(modes *acp.SessionModes, options []acp.ConfigOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if modes != nil {
		s.modeState = *modes
	}
	if options != nil {
		s.options = options
		s.syncModeFromOptions()
	}
}

// syncModeFromOptions follows a "mode" config option: agents that moved
// from modes to config options (Claude, Codex) confirm a mode change only
// there.
func (s *sessionState) syncModeFromOptions() {
	for i := range s.options {
		if o := &s.options[i]; o.Category == acp.CategoryMode {
			if v := o.Current(); v != "" {
				s.noteCurrentMode(v)
			}
		}
	}
}

func (s *sessionState) modes() acp.SessionModes {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.modeState
	m.AvailableModes = append([]acp.SessionMode(nil), m.AvailableModes...)
	return m
}

func (s *sessionState) configOptions() []acp.ConfigOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]acp.ConfigOption(nil), s.options...)
}

// attach makes t the turn updates are delivered to. The dispatcher runs it
// when it reaches the marker queued just before the prompt was sent, so
// updates read earlier (late ones of the previous turn) are not counted.
func (s *sessionState) attach(t *turn) {
	s.mu.Lock()
	if !t.ended {
		s.turn = t
	}
	s.mu.Unlock()
}

// endTurn stops delivery to t; the dispatcher calls it at t's barrier, so
// updates after the prompt's answer are not counted in the turn.
func (s *sessionState) endTurn(t *turn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
}

// detach ends t's delivery: after it returns, no event of t is being
// emitted and none will be.
func (s *sessionState) detach(t *turn) {
	s.mu.Lock()
	t.ended = true
	if s.turn == t {
		s.turn = nil
	}
	s.releaseCancelled(t) // halted, but ended before its session/cancel
	s.mu.Unlock()
	t.emitting.Wait()
}

// current returns the turn updates go to, if any, marked busy: call
// t.emitting.Done when done with it.
func (s *sessionState) current() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		s.turn.emitting.Add(1)
	}
	return s.turn
}

// asking is a request of the session that waits for a person (a
// permission, an elicitation): cancelling the session's turn answers it.
type asking interface {
	// arrivedIn binds the request to the turn it arrived in (nil between
	// turns), under the session's lock, before anyone can claim it.
	arrivedIn(t *turn)
	// claimCancelled claims the request for the cancelled turn's answer,
	// reporting whether it was still unanswered; sendCancelled then
	// writes that answer.
	claimCancelled() bool
	sendCancelled()
}

// addPending registers a request waiting for a person, binding it to the
// turn it arrived in, and reports whether that turn is being cancelled
// (then answer it "cancelled" at once: the cancel has collected the
// session's pending requests already).
func (s *sessionState) addPending(p asking) (cancelling bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.arrivedIn(s.turn)
	s.pending[p] = struct{}{}
	return s.turn != nil && s.turn.cancelled
}

// cancelling marks t cancelled, if halt has not (see cancelDecided), and
// returns the requests waiting for a person now.
func (s *sessionState) cancelling(t *turn) []asking {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelDecided(t)
	pending := make([]asking, 0, len(s.pending))
	for p := range s.pending {
		pending = append(pending, p)
	}
	return pending
}

// emitTo emits ev on t's stream, if t is still the session's running turn
// (on the dispatcher).
func (s *sessionState) emitTo(t *turn, ev StreamEvent) {
	cur := s.current()
	if cur == nil {
		return
	}
	defer cur.emitting.Done()
	if cur == t {
		cur.emit(ev)
	}
}

// streaming reports whether the session's running turn has a stream (an
// emitter: user code).
func (s *sessionState) streaming() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn != nil && s.turn.emitFn != nil
}

// tool merges an update into the session's record of that tool call and
// returns the merged state and its size (toolCallSize), which the turn
// keeping it reuses.
func (s *sessionState) tool(u *acp.ToolCall, set acp.ToolCallFields) (*acp.ToolCall, int) {
	rec, ok := s.tools[u.ID]
	if !ok {
		rec = &toolRecord{state: acp.ToolCall{ID: u.ID}}
		s.tools[u.ID] = rec
	}
	rec.turn = s.turns
	rec.state.Merge(u, set)
	size := toolCallSize(&rec.state)
	s.toolBytes += size - rec.size
	rec.size = size
	if s.toolBytes > s.a.maxState {
		s.shedTools(rec)
	}
	return &rec.state, size
}

// shedTools forgets tool calls until their state takes three quarters of
// MaxResponseBytes at most (so that shedding, which walks them all, is
// rare): finished ones first, then the one that did not fit (last, which
// the caller still holds), then any. A call forgotten and updated again
// starts from what that update says.
func (s *sessionState) shedTools(last *toolRecord) {
	target := s.a.maxState / 4 * 3
	for id, rec := range s.tools {
		if rec.state.Status.Finished() {
			s.forgetTool(id, rec)
		}
	}
	if s.toolBytes > target {
		s.forgetTool(last.state.ID, last)
	}
	for id, rec := range s.tools {
		if s.toolBytes <= target {
			return
		}
		s.forgetTool(id, rec)
	}
}

func (s *sessionState) forgetTool(id string, rec *toolRecord) {
	if s.tools[id] == rec {
		delete(s.tools, id)
		s.toolBytes -= rec.size
	}
}

// toolRecord is a tool call's merged state, its estimated size and the
// turn it last changed in.
type toolRecord struct {
	state acp.ToolCall
	size  int
	turn  uint64
	ask   *toolAsk // a permission request named it; nil: none
}

// toolAsk records how the permission requests naming a tool call were
// answered: asking is not consent, only an answer of an allow kind is.
// Written by whichever goroutine answers (pendingPermission.claim), read on
// the dispatcher. change is set and read on the dispatcher: a request
// naming it offered structured changes that write (see
// PermissionRequest.ReadOnly), so detection counts the call as a change
// whatever its kind.
type toolAsk struct {
	allowed atomic.Bool
	change  bool
}

// markAsked records that a permission request named tool call id and
// returns where its answer is to be noted (nil when the call has no
// record); on the dispatcher, after the request's merge made its record.
func (s *sessionState) markAsked(id string) *toolAsk {
	rec, ok := s.tools[id]
	if !ok {
		return nil
	}
	if rec.ask == nil {
		rec.ask = new(toolAsk)
	}
	return rec.ask
}

// asked reports whether a permission request named tool call id, and
// whether one was answered with an allow (as long as its record is kept:
// see shedTools).
func (s *sessionState) asked(id string) (asked, allowed bool) {
	rec, ok := s.tools[id]
	if !ok || rec.ask == nil {
		return false, false
	}
	return true, rec.ask.allowed.Load()
}

// askedAChange reports whether a permission request naming tool call id
// offered structured changes that write (on the dispatcher).
func (s *sessionState) askedAChange(id string) bool {
	rec, ok := s.tools[id]
	return ok && rec.ask != nil && rec.ask.change
}

// pruneTools runs at the end of a turn: it forgets finished tool calls and
// those untouched for a whole turn (a cancelled or rejected call the agent
// never closed), so the session's memory does not grow with its turns.
func (s *sessionState) pruneTools() {
	for id, rec := range s.tools {
		if rec.state.Status.Finished() || rec.turn < s.turns {
			s.forgetTool(id, rec)
		}
	}
	s.turns++
}

// noteDetails folds an update that tells of the session into its details.
func (s *sessionState) noteDetails(u acp.Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch u := u.(type) {
	case *acp.AvailableCommandsUpdate:
		s.said.Commands = u.Commands
	case *acp.SessionInfoUpdate:
		switch {
		case u.Title != nil:
			s.said.Title = *u.Title
		case u.TitleCleared:
			s.said.Title = ""
		}
		switch {
		case u.UpdatedAt != nil:
			s.said.UpdatedAt = *u.UpdatedAt
		case u.UpdatedCleared:
			s.said.UpdatedAt = ""
		}
	case *acp.UsageUpdate:
		s.said.Usage = &ContextUsage{Used: u.Used, Size: u.Size, Cost: u.Cost}
	}
}

// details returns a copy of the session's details.
func (s *sessionState) details() SessionDetails {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.said
	info.Commands = append([]acp.AvailableCommand(nil), info.Commands...)
	if u := info.Usage; u != nil {
		c := *u
		if u.Cost != nil {
			cost := *u.Cost
			c.Cost = &cost
		}
		info.Usage = &c
	}
	return info
}

func (s *sessionState) setCurrentMode(id string) {
	s.mu.Lock()
	s.noteCurrentMode(id)
	s.mu.Unlock()
}

// noteCurrentMode records the mode the agent reports; one other than the
// mode the host set means the agent left it. Call it with mu held.
func (s *sessionState) noteCurrentMode(id string) {
	s.modeState.CurrentModeID = id
	s.modeReports++
	if id != s.modeSet {
		s.modeSet = ""
	}
}

func (s *sessionState) bind(h *Session) { s.pub.Store(h) }

// onUpdate is the session's update hook: its handle's, else the client's.
func (s *sessionState) onUpdate() func(acp.Update) {
	if h := s.pub.Load(); h != nil && h.opts.OnUpdate != nil {
		return h.opts.OnUpdate
	}
	return s.a.hooks.onUpdate
}

// onPermission is the session's permission hook: its handle's, else the
// client's.
func (s *sessionState) onPermission() PermissionFunc {
	if h := s.pub.Load(); h != nil && h.opts.OnPermission != nil {
		return h.opts.OnPermission
	}
	return s.a.hooks.onPermission
}

// onElicitation is the session's elicitation hook: its handle's, else the
// client's.
func (s *sessionState) onElicitation() ElicitationFunc {
	if h := s.pub.Load(); h != nil && h.opts.OnElicitation != nil {
		return h.opts.OnElicitation
	}
	return s.a.hooks.onElicitation
}

// orderAnswer decides, under the session's lock, how the answer to p, a
// request of turn t (nil: between turns), stands against the cancel of t
// or of the session's running turn — the decision a cancel makes under
// the same lock (cancelDecided) — and forgets p. After the cancel: the
// answer is "cancelled", written after session/cancel. Before it: unless
// plain ("cancelled" already, which may go anywhere), the answer is
// counted in the running turn's answering, so session/cancel is written
// after it. Call written once the answer is written (or not claimed).
func (s *sessionState) orderAnswer(p asking, t *turn, plain bool) answerOrder {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, p)
	switch cur := s.turn; {
	case t != nil && t.cancelled:
		return answerOrder{cancelled: true, after: t.cancelSent}
	case cur != nil && cur.cancelled:
		return answerOrder{cancelled: true, after: cur.cancelSent}
	case plain:
		return answerOrder{}
	case cur != nil:
		t = cur
	case t == nil:
		return answerOrder{}
	}
	t.answering.Add(1)
	return answerOrder{tracked: &t.answering}
}

// cancelDecided marks t cancelled, under the session's lock: from now on
// every answer to a request of t is "cancelled" and waits for
// session/cancel (see orderAnswer), and requests arriving in t are
// answered so at once. A turn whose delivery ended is left alone.
func (s *sessionState) cancelDecided(t *turn) {
	if !t.cancelled && !t.ended {
		t.cancelled = true
		t.cancelSent = make(chan struct{})
	}
}

// decideCancel is cancelDecided for a caller without the lock (halt).
func (s *sessionState) decideCancel(t *turn) {
	s.mu.Lock()
	s.cancelDecided(t)
	s.mu.Unlock()
}

// cancelWritten lets the answers that wait for t's session/cancel go:
// it was written (or failed), or the turn ended without it.
func (s *sessionState) cancelWritten(t *turn) {
	s.mu.Lock()
	s.releaseCancelled(t)
	s.mu.Unlock()
}

// releaseCancelled is cancelWritten with the session's lock held.
func (s *sessionState) releaseCancelled(t *turn) {
	if t.cancelSent != nil {
		close(t.cancelSent)
		t.cancelSent = nil
	}
}

func (s *sessionState) modeOffer() modeOffer {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := modeOffer{modes: slices.Clone(s.modeState.AvailableModes)}
	o.acp = len(o.modes)
	for i := range s.options {
		opt := &s.options[i]
		if opt.Category != acp.CategoryMode || len(opt.Choices) == 0 {
			continue
		}
		o.configID = opt.ID
		seen := make(map[string]bool, len(o.modes)+len(opt.Choices))
		for _, m := range o.modes {
			seen[m.ID] = true
		}
		for _, c := range opt.Choices {
			if !seen[c.Value] {
				seen[c.Value] = true
				o.modes = append(o.modes, acp.SessionMode{ID: c.Value, Name: c.Name, Description: c.Description})
			}
		}
		break
	}
	return o
}

// effectiveMode is the mode the host set last, until the agent reports
// another, else the mode the agent reported.
func (s *sessionState) effectiveMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.modeSet != "" {
		return s.modeSet
	}
	return s.modeState.CurrentModeID
}

func (s *sessionState) modeReportCount() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.modeReports
}

// noteModeSet records that the host set mode id, until the agent reports
// another one; reports is modeReportCount from before the set. A mode the
// agent reported meanwhile is its word, which the host believes over its
// own request: whether it came before or after the answer, the dispatcher
// may have delivered it either side of this call.
func (s *sessionState) noteModeSet(id string, reports uint64) {
	s.mu.Lock()
	if s.modeState.CurrentModeID != id && s.modeReports == reports {
		s.modeSet = id
	}
	s.mu.Unlock()
}

// checkChange runs on the dispatcher for each tool call update, once
// merged: a change the agent reports done without the host's consent — an
// unasked one, or in plan mode any (every change asked there was rejected)
// — is counted (Enforcement.Unasked) and, in plan mode or with
// RequireAsking, logged and stops the running turn with an
// *UnaskedChangeError. A command reported in the agent's own
// read-only mode (or, with RequireAsking, in an asking mode) is the
// agent's judgement that it reads only, and an edit (not a command) of
// the agent's own state directories (Claude's plan file) is its own:
// neither counts.
// "in_progress" is no evidence: opencode and Codex report it before they
// ask. History a session/load replays is not what the agent does now: it
// is not counted.
func (s *sessionState) checkChange(tc *acp.ToolCall) {
	if tc.Status != acp.StatusCompleted || !changes(tc) && !s.askedAChange(tc.ID) || s.replaying.Load() {
		return
	}
	a := s.a
	plan := a.planMode()
	asked, allowed := s.asked(tc.ID)
	if !plan && allowed {
		return
	}
	off := s.modeOffer()
	mode := s.effectiveMode()
	kind := a.profile.kind(off.mode(mode))
	// The agent's judgement that a command reads only stands when it did
	// not ask; one it asked about and was refused, then ran, is a change.
	if !asked && tc.Kind == acp.ToolExecute && !tc.HasDiff() && (kind == ModeReadOnly || !plan && kind == ModeAsks) {
		return
	}
	if tc.Kind != acp.ToolExecute && a.insideState(tc) {
		return // a command's locations do not bound what it changes
	}
	asks := namedModes(a.profile.askingModes(off.modes, maxNamedModes))
	err := &UnaskedChangeError{ToolCall: *tc, PlanMode: plan, Mode: mode, AskingModes: asks}
	if h := s.pub.Load(); h != nil {
		h.unasked.Add(1)
	}
	if !plan && !a.requireAsking {
		return // the agent's own decision, which the host lets stand
	}
	a.log.Warn("acphost: "+err.Error()[len("acphost: "):], "session", s.id)
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.halt(err)
	}
}
