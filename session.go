package acphost

import (
	"encoding/json"
	"sync"
	"sync/atomic"
)

// session is the client-side state of one agent session.
type session struct {
	a   *agent
	id  string
	pub atomic.Pointer[Session] // the handle this session serves, once opened

	replaying atomic.Bool // a session/load is replaying history

	mu        sync.Mutex
	turn      *turn // the turn updates are delivered to, nil between turns
	pending   map[*pendingPermission]struct{}
	modeState SessionModes
	options   []ConfigOption

	// tools is the merged state of every tool call seen in the session. It is
	// owned by the dispatcher goroutine: no lock.
	tools map[string]*ToolCall
}

func newSession(a *agent, id string) *session {
	return &session{a: a, id: id, pending: map[*pendingPermission]struct{}{}, tools: map[string]*ToolCall{}}
}

func (s *session) setState(modes *SessionModes, options []ConfigOption) {
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
func (s *session) syncModeFromOptions() {
	for _, o := range s.options {
		var v string
		if o.Category == "mode" && json.Unmarshal(o.CurrentValue, &v) == nil && v != "" {
			s.modeState.CurrentModeID = v
		}
	}
}

func (s *session) modes() SessionModes {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.modeState
	m.AvailableModes = append([]SessionMode(nil), m.AvailableModes...)
	return m
}

func (s *session) configOptions() []ConfigOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ConfigOption(nil), s.options...)
}

// attach makes t the turn updates are delivered to. The dispatcher runs it
// when it reaches the marker queued just before the prompt was sent, so
// updates read earlier (late ones of the previous turn) are not counted.
func (s *session) attach(t *turn) {
	s.mu.Lock()
	if !t.ended {
		s.turn = t
	}
	s.mu.Unlock()
}

// endTurn stops delivery to t; the dispatcher calls it at t's barrier, so
// updates after the prompt's answer are not counted in the turn.
func (s *session) endTurn(t *turn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
}

// detach ends t's delivery: after it returns, no event of t is being
// emitted and none will be.
func (s *session) detach(t *turn) {
	s.mu.Lock()
	t.ended = true
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
	t.emitting.Wait()
}

// current returns the running turn, marking it busy until done is called.
func (s *session) current() (t *turn, done func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil {
		return nil, func() {}
	}
	t = s.turn
	t.emitting.Add(1)
	return t, t.emitting.Done
}

// tool merges an update into the session's record of that tool call and
// returns the record and whether it is new.
func (s *session) tool(u *ToolCall, set ToolCallFields) (*ToolCall, bool) {
	tc, ok := s.tools[u.ID]
	if !ok {
		tc = &ToolCall{ID: u.ID}
		s.tools[u.ID] = tc
	}
	tc.merge(u, set)
	return tc, !ok
}

// pruneTools forgets finished tool calls at the end of a turn, so the
// session's memory does not grow with the number of turns.
func (s *session) pruneTools() {
	for id, tc := range s.tools {
		if tc.Status.Finished() {
			delete(s.tools, id)
		}
	}
}

func (s *session) setCurrentMode(id string) {
	s.mu.Lock()
	s.modeState.CurrentModeID = id
	s.mu.Unlock()
}

func (s *session) bind(h *Session) { s.pub.Store(h) }

// onUpdate is the session's update hook: its handle's, else the client's.
func (s *session) onUpdate() func(Update) {
	if h := s.pub.Load(); h != nil && h.opts.OnUpdate != nil {
		return h.opts.OnUpdate
	}
	return s.a.opts.OnUpdate
}

// onPermission is the session's permission hook: its handle's, else the
// client's.
func (s *session) onPermission() PermissionFunc {
	if h := s.pub.Load(); h != nil && h.opts.OnPermission != nil {
		return h.opts.OnPermission
	}
	return s.a.opts.OnPermission
}
