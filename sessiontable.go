package acphost

import (
	"encoding/json"
	"sync"
)

// sessionTable is the sessions one connection knows — those it opened, or
// is opening by load or resume — and the session/new calls awaiting their
// answer. What the agent names is looked up here, never created: a
// session the table does not hold is foreign.
type sessionTable struct {
	mu       sync.Mutex
	sessions map[string]*sessionState
	opening  map[*newCall]struct{}
}

func newSessionTable() *sessionTable {
	return &sessionTable{sessions: map[string]*sessionState{}, opening: map[*newCall]struct{}{}}
}

// known returns the record of a session the connection knows, nil for any
// other id.
func (st *sessionTable) known(id string) *sessionState {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.sessions[id]
}

// ensure returns the record of a session the host opens or uses, making it
// with make when there is none.
func (st *sessionTable) ensure(id string, make func() *sessionState) *sessionState {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.sessions[id]
	if s == nil {
		s = make()
		st.sessions[id] = s
	}
	return s
}

// drop forgets a closed session's record (its tool calls, modes), so a
// long-lived process does not keep every session it ever served.
func (st *sessionTable) drop(id string) {
	st.mu.Lock()
	if s := st.sessions[id]; s != nil {
		s.dropped.Store(true)
		delete(st.sessions, id)
	}
	st.mu.Unlock()
}

// isOpening reports whether a session/new waits for its answer.
func (st *sessionTable) isOpening() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.opening) > 0
}

// beginOpening records a session/new call awaiting its answer.
func (st *sessionTable) beginOpening(nc *newCall) {
	st.mu.Lock()
	st.opening[nc] = struct{}{}
	st.mu.Unlock()
}

// endOpening ends the wait of nc, once: when result names a session the
// table does not hold, its record is made by make (bound to nc's handle)
// and held. It reports whether nc was still waiting.
func (st *sessionTable) endOpening(nc *newCall, result json.RawMessage, make func(id string) *sessionState) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, waiting := st.opening[nc]; !waiting {
		return false
	}
	delete(st.opening, nc)
	if result != nil {
		if sid := sessionIDIn(result); sid != "" && st.sessions[sid] == nil {
			st.sessions[sid] = make(sid)
		}
	}
	return true
}
