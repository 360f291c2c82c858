package web_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memStore is a SessionStore in memory.
type memStore struct {
	mu   sync.Mutex
	recs []web.SessionRecord
	puts int
}

func (m *memStore) List() ([]web.SessionRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.recs)
	slices.SortStableFunc(out, func(a, b web.SessionRecord) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

func (m *memStore) Put(r web.SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	for i, o := range m.recs {
		if o.ID == r.ID {
			m.recs[i] = r
			return nil
		}
	}
	m.recs = append(m.recs, r)
	return nil
}

func (m *memStore) ids() []string {
	recs, _ := m.List()
	var ids []string
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids
}

// twoTurns answers "one", then "two", then "three", prompt by prompt.
func twoTurns(caps string) fakeagent.Script {
	return fakeagent.Script{AgentCapabilities: json.RawMessage(caps), Turns: []fakeagent.Turn{
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Thought("hmm")), fakeagent.Say(fakeagent.Text("one"))}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("two"))}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("three"))}},
	}}
}

// TestSessionsNewAndLoad: a turn records its session; a new session starts
// the transcript again on every tab; going back to the first session (the
// client's, still open) takes it back as it is, without loading it a
// second time, and shows the page's transcript of it as history; a session
// the page left (closed) is loaded, its history replayed, marked as
// replayed, and the next prompt goes to it.
func TestSessionsNewAndLoad(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	r := newRig(t, twoTurns(`{"loadSession":true}`), func(c *web.Config) { c.Sessions = st })
	tb := r.tab()
	first := tb.next("reset", ofType("reset")).sub("session").str("id")
	require.NotEmpty(t, first)
	assert.Empty(t, st.ids(), "a session is recorded at its first turn, not before")

	r.post("/api/prompt", map[string]string{"text": "hi"}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "one", text)
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })
	assert.Equal(t, []string{first}, st.ids())

	var list struct {
		Current   string `json:"current"`
		Recording bool   `json:"recording"`
		CanLoad   bool   `json:"canLoad"`
		Sessions  []struct {
			ID      string `json:"id"`
			Current bool   `json:"current"`
		} `json:"sessions"`
	}
	resp := r.request(http.MethodGet, "/api/sessions", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	assert.Equal(t, first, list.Current)
	assert.True(t, list.Recording)
	assert.True(t, list.CanLoad)
	require.Len(t, list.Sessions, 1)
	assert.True(t, list.Sessions[0].Current)

	r.post("/api/session/new", struct{}{}, http.StatusOK)
	reset := tb.next("reset", ofType("reset"))
	second := reset.sub("session").str("id")
	assert.NotEqual(t, first, second)
	note := tb.next("note", ofType("note"))
	assert.Equal(t, "new session", note.str("text"))
	r.received(`"method":"session/new"`)
	r.post("/api/prompt", map[string]string{"text": "more"}, http.StatusOK)
	text, _ = tb.textUntil("done")
	assert.Equal(t, "two", text)
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })

	// Back to the first: the same session, not loaded again.
	r.post("/api/session/resume", map[string]string{"id": "nope"}, http.StatusNotFound)
	r.post("/api/session/resume", map[string]string{"id": first}, http.StatusOK)
	reset = tb.next("reset", ofType("reset"))
	assert.Equal(t, first, reset.sub("session").str("id"))
	var replayed []string
	note = tb.next("back note", func(m msg) bool {
		if m["replay"] == true {
			replayed = append(replayed, m.typ()+":"+m.str("delta")+m.str("text"))
		}
		return m.typ() == "note" && m.str("kind") == "session" && m["replay"] != true
	})
	assert.Equal(t, []string{"user:hi", "thought:hmm", "text:one", "done:"}, replayed)
	assert.Contains(t, note.str("text"), "back to session")
	for _, m := range r.agent.Received() {
		assert.NotEqual(t, "session/load", m.Method, "the first session, still open, was loaded a second time")
	}
	// The current session is not opened again either.
	r.post("/api/session/resume", map[string]string{"id": first}, http.StatusOK)

	// The second, closed when the page left it, is loaded.
	r.post("/api/session/resume", map[string]string{"id": second}, http.StatusOK)
	reset = tb.next("reset", ofType("reset"))
	assert.Equal(t, second, reset.sub("session").str("id"))
	replayed = nil
	note = tb.next("load note", func(m msg) bool {
		if m["replay"] == true {
			replayed = append(replayed, m.typ()+":"+m.str("delta")+m.str("text"))
		}
		return m.typ() == "note"
	})
	// The fake agent replays the person's prompts too, as the spec asks.
	assert.Equal(t, []string{"user:more", "text:two"}, replayed)
	assert.Contains(t, note.str("text"), "loaded")
	r.received(`"method":"session/load"`)

	// A tab that connects now sees the loaded session's history, once.
	late := r.tab()
	assert.Equal(t, second, late.next("reset", ofType("reset")).sub("session").str("id"))
	late.next("replayed text", func(m msg) bool { return m.typ() == "text" && m["replay"] == true })

	r.post("/api/prompt", map[string]string{"text": "again"}, http.StatusOK)
	text, _ = tb.textUntil("done")
	assert.Equal(t, "three", text)
	var prompts []string
	for _, m := range r.agent.Received() {
		if m.Method == "session/prompt" {
			var p struct {
				SessionID string `json:"sessionId"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			prompts = append(prompts, p.SessionID)
		}
	}
	assert.Equal(t, []string{first, second, second}, prompts)
}

// TestSessionsResumeWithoutReplay: an agent with session/resume and no
// session/load is resumed, without history; a switch while a turn runs is
// refused.
func TestSessionsResumeWithoutReplay(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	st.Put(web.SessionRecord{ID: "old-1", LastUsed: time.Now().Add(-time.Hour)})
	script := fakeagent.Script{AgentCapabilities: json.RawMessage(`{"sessionCapabilities":{"resume":{}}}`), Turns: []fakeagent.Turn{
		{Prompt: "long", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
	}}
	r := newRig(t, script, func(c *web.Config) { c.Sessions = st })
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "long"}, http.StatusOK)
	tb.next("text", ofType("text"))
	r.post("/api/session/resume", map[string]string{"id": "old-1"}, http.StatusConflict)
	r.post("/api/session/new", struct{}{}, http.StatusConflict)
	r.post("/api/stop", struct{}{}, http.StatusOK)
	tb.next("done", ofType("done"))
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })

	r.post("/api/session/resume", map[string]string{"id": "old-1"}, http.StatusOK)
	note := tb.next("note", func(m msg) bool { return m.typ() == "note" && m.str("kind") == "session" })
	assert.Contains(t, note.str("text"), "resumed")
	r.received(`"method":"session/resume"`)
	recs, _ := st.List()
	assert.Equal(t, "old-1", recs[0].ID, "the resumed session is the most recently used")
}

// TestPermissionPolicy: Config.Permission answers in place of the page;
// Config.Mode is asked for on the first session.
func TestPermissionPolicy(t *testing.T) {
	t.Parallel()
	script := fakeagent.Demo()
	script.NewSessionResult = json.RawMessage(`{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}}`)
	r := newRig(t, script, func(c *web.Config) {
		c.Permission = func(acphost.PermissionFunc) acphost.PermissionFunc { return acphost.AllowAll() }
		c.PermissionLabel = "allow"
		c.Mode = "code"
	})
	r.received(`"method":"session/set_mode"`)
	tb := r.tab()
	st := tb.next("state", ofType("state"))
	assert.Equal(t, "allow", st.str("permission"))
	r.post("/api/prompt", map[string]string{"text": "go"}, http.StatusOK)
	text, _ := tb.textUntil("done")
	assert.Equal(t, "picked allow", text)
	for _, m := range tb.seen {
		assert.NotEqual(t, "dialog", m.typ())
	}
}

// TestConfigOptionsAreSetOnEverySession: Config.ConfigOptions are sent
// with session/set_config_option once the session opens (a boolean one as
// a bool), and one the agent does not offer is noted in the transcript.
func TestConfigOptionsAreSetOnEverySession(t *testing.T) {
	t.Parallel()
	script := fakeagent.Demo()
	script.NewSessionResult = json.RawMessage(`{"configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"a",
		"options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]},{"id":"fast","name":"Fast","type":"boolean","currentValue":false}]}`)
	r := newRig(t, script, func(c *web.Config) {
		c.ConfigOptions = map[string]string{"model": "b", "fast": "on", "nope": "x"}
	})
	r.received(`"configId":"model","sessionId":"s1","value":"b"`)
	r.received(`"configId":"fast","sessionId":"s1","type":"boolean","value":true`)
	tb := r.tab()
	tb.next("the refused option noted", func(m msg) bool {
		return m.typ() == "note" && strings.Contains(m.str("text"), "option nope not set")
	})
}

// TestConfigOptionBadBooleanIsNoted: a boolean option given neither on
// nor off is not sent (as false or otherwise) but noted.
func TestConfigOptionBadBooleanIsNoted(t *testing.T) {
	t.Parallel()
	script := fakeagent.Demo()
	script.NewSessionResult = json.RawMessage(`{"configOptions":[{"id":"fast","name":"Fast","type":"boolean","currentValue":true}]}`)
	r := newRig(t, script, func(c *web.Config) { c.ConfigOptions = map[string]string{"fast": "maybe"} })
	tb := r.tab()
	tb.next("the bad value noted", func(m msg) bool {
		return m.typ() == "note" && strings.Contains(m.str("text"), "option fast not set") && strings.Contains(m.str("text"), "not on or off")
	})
	for _, m := range r.agent.Received() {
		if m.Method == "session/set_config_option" {
			t.Errorf("sent %s", m.Raw)
		}
	}
}

// recordingStore is a memStore that keeps finished turns (a TurnRecorder).
type recordingStore struct {
	memStore
	turns chan web.TurnRecord
}

func (r *recordingStore) RecordTurn(sessionID string, t web.TurnRecord) error {
	r.turns <- t
	return nil
}

// TestTurnsReachATurnRecorder: with a Sessions store that records turns,
// each finished turn is handed to it with its prompt and the answer's text
// (the turn keeps its Response for it).
func TestTurnsReachATurnRecorder(t *testing.T) {
	t.Parallel()
	st := &recordingStore{turns: make(chan web.TurnRecord, 4)}
	r := newRig(t, twoTurns(`{}`), func(c *web.Config) { c.Sessions = st })
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "first"}, http.StatusOK)
	tb.textUntil("done")
	select {
	case tr := <-st.turns:
		if tr.Prompt != "first" || tr.Response.Text != "one" || tr.Response.StopReason != acp.StopEndTurn || tr.Err != nil || tr.Started.IsZero() {
			t.Errorf("recorded %+v", tr)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no turn recorded")
	}
}
