package acphost

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/acphost/acphost/acp"
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

// newCall is a session/new call awaiting its answer, for h.
type newCall struct{ h *Session }

// foreign counts the messages that name what the agent was not given (a
// session, a request of the client's), logging the first ones, and
// refuses the requests among them: they reach no hook (SPEC.md,
// Containment).
type foreign struct {
	n   *atomic.Int64 // the client's count (ACPClient.ForeignMessages), across agents
	log *slog.Logger
}

// count counts one, logging it with attrs while the first ones tell the
// story (a flood would drown the log).
func (f foreign) count(what string, attrs ...any) {
	if f.n.Add(1) <= 100 {
		f.log.Warn("acphost: the agent named "+what, attrs...)
	}
}

// refuse answers a request naming a session this connection never opened.
func (f foreign) refuse(in *inflight, method, session string) {
	f.count("a session it was not given", "method", method, "session", session)
	in.goRefuse(acp.CodeInvalidParams, "unknown session: "+strconv.Quote(session))
}
