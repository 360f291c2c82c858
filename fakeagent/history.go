package fakeagent

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"sync"
)

// historyEntry is one line of a session history: a session opened (Cwd
// set), an update sent in it, or its deletion.
type historyEntry struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd,omitempty"`
	// Dirs are the additionalDirectories a session was opened with.
	Dirs    []string        `json:"dirs,omitempty"`
	Update  json.RawMessage `json:"update,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
	// Prompt marks the first update of a prompt (for {{turn}}).
	Prompt bool `json:"prompt,omitempty"`
	// Mode is a mode the session was set to (session/set_mode, or the
	// config option of category "mode"), which it is reopened in.
	Mode string `json:"mode,omitempty"`
}

// history remembers what the agent said in each session, so session/load
// can replay it. With Script.HistoryFile it is appended to that file and
// read back at start, so a restarted agent process remembers too.
type history struct {
	mu      sync.Mutex
	off     bool // nothing to load: keep no history (memory stays flat)
	path    string
	entries []historyEntry
}

func newHistory(path string, loadable bool) *history {
	h := &history{path: path, off: path == "" && !loadable}
	if path == "" {
		return h
	}
	f, err := os.Open(path)
	if err != nil {
		return h
	}
	defer f.Close()
	_ = readAllLines(f, func(line []byte) bool {
		var e historyEntry
		if json.Unmarshal(line, &e) == nil {
			h.entries = append(h.entries, e)
		}
		return true
	})
	return h
}

func (h *history) add(e historyEntry) {
	if h.off {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, e)
	if h.path == "" {
		return
	}
	f, err := os.OpenFile(h.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	w := bufio.NewWriter(f)
	_, _ = w.Write(append(mustJSON(e), '\n'))
	_ = w.Flush()
	_ = f.Close()
}

// updates returns the updates sent in a session, in order.
func (h *history) updates(sid string) []json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []json.RawMessage
	for _, e := range h.entries {
		if e.SessionID == sid && e.Update != nil {
			out = append(out, e.Update)
		}
	}
	return out
}

// prompts returns how many prompts session sid's history holds.
func (h *history) prompts(sid string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, e := range h.entries {
		if e.SessionID == sid && e.Prompt {
			n++
		}
	}
	return n
}

// mode returns the mode session sid was last set to, "" when none.
func (h *history) mode(sid string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	mode := ""
	for _, e := range h.entries {
		if e.SessionID == sid && e.Mode != "" {
			mode = e.Mode
		}
	}
	return mode
}

// sessions returns the sessions opened and not deleted, in order, with
// their cwd.
func (h *history) sessions() []historyEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []historyEntry
	for _, e := range h.entries {
		switch {
		case e.Deleted:
			out = slices.DeleteFunc(out, func(o historyEntry) bool { return o.SessionID == e.SessionID })
		case e.Cwd != "":
			out = append(out, historyEntry{SessionID: e.SessionID, Cwd: e.Cwd, Dirs: e.Dirs})
		}
	}
	return out
}

// knows reports whether the history ever held a session, deleted or not.
func (h *history) knows(sid string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		if e.SessionID == sid && e.Cwd != "" {
			return true
		}
	}
	return false
}

// sessionCaps reads which optional session methods the script advertises.
type sessionCaps struct {
	LoadSession         bool `json:"loadSession"`
	SessionCapabilities struct {
		Resume json.RawMessage `json:"resume"`
		List   json.RawMessage `json:"list"`
		Close  json.RawMessage `json:"close"`
		Delete json.RawMessage `json:"delete"`
		Fork   json.RawMessage `json:"fork"`  // unstable
		Title  json.RawMessage `json:"title"` // unstable
	} `json:"sessionCapabilities"`
	Auth struct {
		Logout json.RawMessage `json:"logout"`
	} `json:"auth"`
}

// rememberPrompt keeps a prompt in the session's history as the
// user_message_chunk updates session/load replays it as (one per content
// block), as the spec asks an agent to replay the whole conversation. It
// is not sent now: the client knows what it prompted.
func (a *Agent) rememberPrompt(sid string, params json.RawMessage) {
	if a.history.off {
		return
	}
	var p struct {
		Prompt []json.RawMessage `json:"prompt"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	type chunk struct {
		SessionUpdate string          `json:"sessionUpdate"`
		Content       json.RawMessage `json:"content"`
	}
	for i, b := range p.Prompt {
		a.history.add(historyEntry{SessionID: sid, Update: mustJSON(chunk{"user_message_chunk", b}), Prompt: i == 0})
	}
}

// sessionLoad replays the session's history as updates, then answers.
func (a *Agent) sessionLoad(m Message) {
	sid, ok := a.reopen(m, a.caps.LoadSession)
	if !ok {
		return
	}
	a.spawn(func() {
		for _, u := range a.history.updates(sid) {
			a.notify("session/update", mustJSON(updateParams{sid, u}))
		}
		a.reply(m.ID, a.reopenResult(sid))
	})
}

// sessionResume reopens a session without a replay.
func (a *Agent) sessionResume(m Message) {
	if sid, ok := a.reopen(m, isSet(a.caps.SessionCapabilities.Resume)); ok {
		a.reply(m.ID, a.reopenResult(sid))
	}
}

// reopenResult answers a load or resume as agents do: with the session's
// modes and config options (those of Script.NewSessionResult), in the
// mode the session was last set to; {} when the script has none.
func (a *Agent) reopenResult(sid string) json.RawMessage {
	var fields map[string]json.RawMessage
	if !isSet(a.script.NewSessionResult) || json.Unmarshal(a.script.NewSessionResult, &fields) != nil {
		return emptyObject
	}
	delete(fields, "sessionId")
	out := map[string]json.RawMessage{}
	for _, k := range []string{"modes", "configOptions"} {
		if v, ok := fields[k]; ok {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return emptyObject
	}
	if mode := a.history.mode(sid); mode != "" {
		a.setSessionMode(sid, mode)
		var modes map[string]json.RawMessage
		if json.Unmarshal(out["modes"], &modes) == nil && modes != nil {
			modes["currentModeId"] = mustJSON(mode)
			out["modes"] = mustJSON(modes)
		}
	}
	return mustJSON(out)
}

// reopen checks a load or resume request and registers its session.
func (a *Agent) reopen(m Message, supported bool) (string, bool) {
	if !supported {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return "", false
	}
	sid := sessionOf(m.Params)
	if sid == "" {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: sessionId is required")
		return "", false
	}
	sp, hasSP, ok := a.checkSystemPrompt(m)
	if !ok {
		return "", false
	}
	// An id the history does not know is accepted with nothing to replay,
	// unless the script says this agent forgets.
	if a.script.ForgetSessions && !a.history.knows(sid) {
		a.replyError(m.ID, codeInternal, "Internal error: no previous session "+sid)
		return "", false
	}
	a.mu.Lock()
	a.sessions[sid] = true
	a.mu.Unlock()
	a.noteMCPServers(sid, m.Params)
	a.noteSystemPrompt(sid, sp, hasSP)
	return sid, true
}

func (a *Agent) sessionList(m Message) {
	if !isSet(a.caps.SessionCapabilities.List) {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	type info struct {
		SessionID string   `json:"sessionId"`
		Cwd       string   `json:"cwd"`
		Dirs      []string `json:"additionalDirectories,omitempty"`
	}
	list := []info{}
	for _, e := range a.history.sessions() {
		list = append(list, info{e.SessionID, e.Cwd, e.Dirs})
	}
	a.reply(m.ID, mustJSON(map[string]any{"sessions": list}))
}

// sessionDelete forgets a stored session: session/list no longer lists it.
func (a *Agent) sessionDelete(m Message) {
	if !isSet(a.caps.SessionCapabilities.Delete) {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	sid := sessionOf(m.Params)
	if sid == "" {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: sessionId is required")
		return
	}
	a.history.add(historyEntry{SessionID: sid, Deleted: true})
	a.reply(m.ID, emptyObject)
}

func (a *Agent) sessionClose(m Message) {
	if !isSet(a.caps.SessionCapabilities.Close) {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	sid := sessionOf(m.Params)
	a.mu.Lock()
	delete(a.sessions, sid)
	for _, t := range a.active[sid] {
		t.cancel()
	}
	a.mu.Unlock()
	a.reply(m.ID, emptyObject)
}
