package fakeagent

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
)

var (
	emptyObject     = json.RawMessage(`{}`)
	defaultCaps     = json.RawMessage(`{"loadSession":false,"promptCapabilities":{"image":true,"embeddedContext":true}}`)
	noAuthMethods   = json.RawMessage(`[]`)
	noConfigOptions = json.RawMessage(`{"configOptions":[]}`)
)

// handleRequest answers a client→agent request. It runs on the reader goroutine; work that
// waits for the client (turns, BeforeSessionNew, BeforeAuthenticate) runs on goroutines of
// its own.
func (a *Agent) handleRequest(m Message) {
	if slices.Contains(a.script.NeverAnswer, m.Method) {
		return
	}
	switch m.Method {
	case "initialize":
		a.reply(m.ID, a.initializeResult())
	case "authenticate":
		a.authenticate(m)
	case "logout":
		if !isSet(a.caps.Auth.Logout) {
			a.replyError(m.ID, codeMethodNotFound, "Method not found")
			return
		}
		a.mu.Lock()
		a.authed = false
		a.mu.Unlock()
		if f := a.script.AuthFile; f != "" {
			_ = os.Remove(f)
		}
		a.reply(m.ID, emptyObject)
	case "session/new":
		a.sessionNew(m)
	case "session/load":
		a.sessionLoad(m)
	case "session/resume":
		a.sessionResume(m)
	case "session/list":
		a.sessionList(m)
	case "session/close":
		a.sessionClose(m)
	case "session/delete":
		a.sessionDelete(m)
	case "session/fork":
		a.sessionFork(m)
	case "session/set_title":
		a.setTitle(m)
	case "session/set_mode":
		a.setMode(m)
	case "session/set_config_option":
		a.setConfigOption(m)
	case "session/prompt":
		a.prompt(m)
	default:
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
	}
}

// handleNotification acts on session/cancel; other notifications are only recorded.
func (a *Agent) handleNotification(m Message) {
	if m.Method != "session/cancel" {
		return
	}
	sid := sessionOf(m.Params)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.active[sid] {
		t.cancel()
	}
}

func (a *Agent) initializeResult() any {
	s := a.script
	res := struct {
		ProtocolVersion   int             `json:"protocolVersion"`
		AgentCapabilities json.RawMessage `json:"agentCapabilities"`
		AuthMethods       json.RawMessage `json:"authMethods"`
		AgentInfo         struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"agentInfo"`
	}{ProtocolVersion: s.ProtocolVersion, AgentCapabilities: s.AgentCapabilities, AuthMethods: s.AuthMethods}
	res.AgentInfo.Name, res.AgentInfo.Version = s.Name, "0.0.0"
	if res.ProtocolVersion == 0 {
		res.ProtocolVersion = 1
	}
	if !isSet(res.AgentCapabilities) {
		res.AgentCapabilities = defaultCaps
	}
	if !isSet(res.AuthMethods) {
		res.AuthMethods = noAuthMethods
	}
	if res.AgentInfo.Name == "" {
		res.AgentInfo.Name = "fakeagent"
	}
	return res
}

// authenticate answers authenticate, after playing BeforeAuthenticate.
func (a *Agent) authenticate(m Message) {
	answer := func() {
		a.mu.Lock()
		a.authed = true
		a.mu.Unlock()
		if f := a.script.AuthFile; f != "" {
			_ = os.WriteFile(f, []byte("logged in\n"), 0o600)
		}
		a.reply(m.ID, emptyObject)
	}
	if len(a.script.BeforeAuthenticate) == 0 {
		answer()
		return
	}
	t := newTurn(a, "", m.ID, Turn{})
	a.spawn(func() {
		if t.play(a.script.BeforeAuthenticate, false) == finished {
			answer()
		}
	})
}

// authorized reports whether the script lets session requests through.
func (a *Agent) authorized() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.authed || !a.script.RequireAuth {
		return true
	}
	_, err := os.Stat(a.script.AuthFile)
	return a.script.AuthFile != "" && err == nil
}

func (a *Agent) sessionNew(m Message) {
	if !a.script.AuthAtPrompt && !a.authorized() {
		a.replyError(m.ID, codeAuthRequired, "Authentication required")
		return
	}
	sp, hasSP, ok := a.checkSystemPrompt(m)
	if !ok {
		return
	}
	sid := a.newSessionID()
	a.history.add(historyEntry{SessionID: sid, Cwd: cwdOf(m.Params), Dirs: dirsOf(m.Params)})
	a.noteMCPServers(sid, m.Params)
	a.noteSystemPrompt(sid, sp, hasSP)
	result := a.sessionResult(sid)
	if len(a.script.BeforeSessionNew) == 0 {
		a.reply(m.ID, result)
		return
	}
	t := newTurn(a, sid, m.ID, Turn{})
	a.spawn(func() {
		if t.play(a.script.BeforeSessionNew, false) == finished {
			a.reply(m.ID, result)
		}
	})
}

// newSessionID allocates and registers the next session id.
func (a *Agent) newSessionID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nSessions++
	for a.history.knows(a.sessionIDFor(a.nSessions)) {
		a.nSessions++ // a restarted agent never reuses an id from its history
	}
	sid := a.sessionIDFor(a.nSessions)
	a.sessions[sid] = true
	return sid
}

// sessionIDFor names the n-th session: SessionID, then SessionID-2, -3, ….
func (a *Agent) sessionIDFor(n int) string {
	sid := a.script.SessionID
	if sid == "" {
		sid = "s1"
	}
	if n > 1 {
		sid += "-" + strconv.Itoa(n)
	}
	return sid
}

func cwdOf(params json.RawMessage) string {
	var p struct {
		Cwd string `json:"cwd"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Cwd
}

func dirsOf(params json.RawMessage) []string {
	var p struct {
		Dirs []string `json:"additionalDirectories"`
	}
	_ = json.Unmarshal(params, &p)
	return p.Dirs
}

func (a *Agent) sessionResult(sid string) json.RawMessage {
	fields := map[string]json.RawMessage{}
	if isSet(a.script.NewSessionResult) {
		_ = json.Unmarshal(a.script.NewSessionResult, &fields) // validated by Serve
	}
	fields["sessionId"] = mustJSON(sid)
	return mustJSON(fields)
}

// setConfigOption answers with every config option of Script.NewSessionResult,
// the one named now holding the value sent, as agents answer (the full
// list); an id the script does not offer is refused -32602. Without
// options in the script it answers {"configOptions":[]}.
func (a *Agent) setConfigOption(m Message) {
	var p struct {
		ConfigID string          `json:"configId"`
		Value    json.RawMessage `json:"value"`
	}
	_ = json.Unmarshal(m.Params, &p)
	a.mu.Lock()
	if a.configOptions == nil {
		var r struct {
			ConfigOptions []map[string]json.RawMessage `json:"configOptions"`
		}
		if isSet(a.script.NewSessionResult) {
			_ = json.Unmarshal(a.script.NewSessionResult, &r)
		}
		a.configOptions = append([]map[string]json.RawMessage{}, r.ConfigOptions...)
	}
	if len(a.configOptions) == 0 {
		a.mu.Unlock()
		a.reply(m.ID, noConfigOptions)
		return
	}
	found := false
	for _, o := range a.configOptions {
		var id, category, mode string
		if json.Unmarshal(o["id"], &id) == nil && id == p.ConfigID {
			o["currentValue"], found = p.Value, true
			if json.Unmarshal(o["category"], &category) == nil && category == "mode" && json.Unmarshal(p.Value, &mode) == nil {
				a.setSessionModeLocked(sessionOf(m.Params), mode)
				defer a.history.add(historyEntry{SessionID: sessionOf(m.Params), Mode: mode}) // after mu
			}
		}
	}
	res := mustJSON(map[string]any{"configOptions": a.configOptions})
	a.mu.Unlock()
	if !found {
		a.replyError(m.ID, codeInvalidParams, "Unknown config option")
		return
	}
	a.reply(m.ID, res)
}

func (a *Agent) setMode(m Message) {
	if a.script.SetModeFails {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	_ = json.Unmarshal(m.Params, &p)
	a.setSessionMode(p.SessionID, p.ModeID)
	a.history.add(historyEntry{SessionID: p.SessionID, Mode: p.ModeID})
	a.reply(m.ID, emptyObject)
	if a.script.NeverConfirmMode {
		return
	}
	a.sendUpdate(p.SessionID, mustJSON(struct {
		SessionUpdate string `json:"sessionUpdate"`
		CurrentModeID string `json:"currentModeId"`
	}{"current_mode_update", p.ModeID}))
}

// prompt starts a turn on its own goroutine, so the reader keeps seeing session/cancel and
// the client's answers while it plays.
func (a *Agent) prompt(m Message) {
	sid := sessionOf(m.Params)
	switch {
	case sid == "":
		a.replyError(m.ID, codeInvalidParams, "Invalid params: sessionId is required")
	case !a.authorized():
		a.replyError(m.ID, codeAuthRequired, "Authentication required")
	default:
		t := a.startTurn(sid, m.ID, promptText(m.Params))
		if t == nil {
			a.replyError(m.ID, codeInvalidParams, "Session not found: "+sid)
			return
		}
		a.rememberPrompt(sid, m.Params)
		a.spawn(t.run)
	}
}

// startTurn registers the next turn for a known session; it returns nil for unknown ones.
func (a *Agent) startTurn(sid string, promptID json.RawMessage, text string) *turn {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.sessions[sid] {
		return nil
	}
	spec, ok := a.turnForPrompt(text)
	if !ok {
		spec = a.turnSpec(a.nTurns)
		a.nTurns++
	}
	t := newTurn(a, sid, promptID, spec)
	n, ok := a.turnNo[sid]
	if !ok {
		n = a.history.prompts(sid) // a session continued from an earlier process
	}
	a.turnNo[sid] = n + 1
	t.number = []byte(strconv.Itoa(n + 1))
	a.active[sid] = append(a.active[sid], t)
	return t
}

// turnSpec returns the i-th positional turn: turns with a Prompt are not counted.
func (a *Agent) turnSpec(i int) Turn {
	var ts []Turn
	for _, t := range a.script.Turns {
		if t.Prompt == "" {
			ts = append(ts, t)
		}
	}
	if len(ts) == 0 {
		return Turn{Steps: []Step{Say(Text("ok"))}}
	}
	return ts[min(i, len(ts)-1)]
}

// turnForPrompt returns the first turn whose Prompt occurs in the prompt's text.
func (a *Agent) turnForPrompt(text string) (Turn, bool) {
	for _, t := range a.script.Turns {
		if t.Prompt != "" && strings.Contains(text, t.Prompt) {
			return t, true
		}
	}
	return Turn{}, false
}

// promptText joins the text blocks of session/prompt params.
func promptText(params json.RawMessage) string {
	var p struct {
		Prompt []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"prompt"`
	}
	_ = json.Unmarshal(params, &p)
	var b strings.Builder
	for _, c := range p.Prompt {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// endTurn unregisters t, so session/cancel no longer reaches it.
func (a *Agent) endTurn(t *turn) {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.active[t.sid]
	for i, x := range list {
		if x == t {
			a.active[t.sid] = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(a.active[t.sid]) == 0 {
		delete(a.active, t.sid)
	}
}

func sessionOf(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(params, &p)
	return p.SessionID
}

// sessionFork opens a new session whose history starts as the source's
// (unstable session/fork, served when the script advertises it).
func (a *Agent) sessionFork(m Message) {
	if !isSet(a.caps.SessionCapabilities.Fork) {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	src := sessionOf(m.Params)
	a.mu.Lock()
	known := a.sessions[src]
	a.mu.Unlock()
	if !known {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: unknown session "+src)
		return
	}
	sp, hasSP, ok := a.checkSystemPrompt(m)
	if !ok {
		return
	}
	sid := a.newSessionID()
	a.history.add(historyEntry{SessionID: sid, Cwd: cwdOf(m.Params), Dirs: dirsOf(m.Params)})
	a.noteMCPServers(sid, m.Params)
	a.noteSystemPrompt(sid, sp, hasSP)
	for _, u := range a.history.updates(src) {
		a.history.add(historyEntry{SessionID: sid, Update: u})
	}
	a.reply(m.ID, a.sessionResult(sid))
}

// setTitle stores a session's title, trimmed (unstable session/set_title).
func (a *Agent) setTitle(m Message) {
	if !isSet(a.caps.SessionCapabilities.Title) {
		a.replyError(m.ID, codeMethodNotFound, "Method not found")
		return
	}
	var p struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(m.Params, &p)
	a.reply(m.ID, mustJSON(struct {
		Title string `json:"title"`
	}{strings.TrimSpace(p.Title)}))
}

// setSessionMode records session sid's mode.
func (a *Agent) setSessionMode(sid, mode string) {
	a.mu.Lock()
	a.setSessionModeLocked(sid, mode)
	a.mu.Unlock()
}

func (a *Agent) setSessionModeLocked(sid, mode string) {
	if a.modes == nil {
		a.modes = map[string]string{}
	}
	a.modes[sid] = mode
}

// sessionMode is session sid's current mode: the last one set, else the
// script's initial one.
func (a *Agent) sessionMode(sid string) string {
	a.mu.Lock()
	mode, ok := a.modes[sid]
	a.mu.Unlock()
	if ok {
		return mode
	}
	var r struct {
		Modes struct {
			CurrentModeID string `json:"currentModeId"`
		} `json:"modes"`
		ConfigOptions []struct {
			Category     string          `json:"category"`
			CurrentValue json.RawMessage `json:"currentValue"`
		} `json:"configOptions"`
	}
	if isSet(a.script.NewSessionResult) {
		_ = json.Unmarshal(a.script.NewSessionResult, &r)
	}
	if r.Modes.CurrentModeID != "" {
		return r.Modes.CurrentModeID
	}
	for _, o := range r.ConfigOptions {
		if o.Category == "mode" && json.Unmarshal(o.CurrentValue, &mode) == nil {
			return mode
		}
	}
	return ""
}
