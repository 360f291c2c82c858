package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// spCaps advertises load, resume and fork with the system prompt in both
// modes; spAppendCaps in append mode only.
const (
	spCaps       = `{"loadSession":true,"sessionCapabilities":{"resume":{},"fork":{},"systemPrompt":{"mode":{"override":{}}}}}`
	spAppendCaps = `{"loadSession":true,"sessionCapabilities":{"resume":{},"systemPrompt":{}}}`
)

// systemPromptOf returns the systemPrompt member of an open's params, raw.
func systemPromptOf(t *testing.T, params json.RawMessage) json.RawMessage {
	t.Helper()
	var p struct {
		SystemPrompt json.RawMessage `json:"systemPrompt"`
	}
	require.NoError(t, json.Unmarshal(params, &p))
	return p.SystemPrompt
}

// The system prompt goes out on session/new, and again on load, resume
// and fork, in the schema's shape; the agent takes it.
func TestSystemPromptIsSentOnEveryOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		def := acp.TextSystemPrompt(acp.SystemPromptAppend, "Answer in French.")
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(spCaps)}, ACPOptions{SystemPrompt: def, Unstable: true})
		over := &acp.SystemPrompt{Mode: acp.SystemPromptOverride, Content: []acp.ContentBlock{acp.TextBlock("You are a reviewer."), acp.TextBlock("Be brief.")}}
		s, err := c.NewSession(context.Background(), SessionOptions{SystemPrompt: over})
		require.NoError(t, err)
		_, err = c.LoadSession(context.Background(), "stored", SessionOptions{SystemPrompt: over})
		require.NoError(t, err)
		_, err = c.ResumeSession(context.Background(), "stored-2", SessionOptions{})
		require.NoError(t, err)
		_, err = c.ForkSession(context.Background(), s.ID(), SessionOptions{SystemPrompt: over})
		require.NoError(t, err)
		none, err := c.NewSession(context.Background(), SessionOptions{SystemPrompt: &acp.SystemPrompt{}})
		require.NoError(t, err)

		news := received(fa.Agent, "session/new")
		require.Len(t, news, 3)
		appendJSON := `{"mode":"append","content":[{"type":"text","text":"Answer in French."}]}`
		overJSON := `{"mode":"override","content":[{"type":"text","text":"You are a reviewer."},{"type":"text","text":"Be brief."}]}`
		assert.JSONEq(t, appendJSON, string(systemPromptOf(t, news[0])), "the client's default, on the default session")
		assert.JSONEq(t, overJSON, string(systemPromptOf(t, news[1])))
		assert.Empty(t, systemPromptOf(t, news[2]), "a zero SystemPrompt sends none")
		assert.JSONEq(t, overJSON, string(systemPromptOf(t, received(fa.Agent, "session/load")[0])))
		assert.JSONEq(t, appendJSON, string(systemPromptOf(t, received(fa.Agent, "session/resume")[0])))
		assert.JSONEq(t, overJSON, string(systemPromptOf(t, received(fa.Agent, "session/fork")[0])))

		got, ok := fa.SystemPrompt(s.ID())
		assert.True(t, ok)
		assert.Equal(t, fakeagent.SystemPrompt{Mode: "override", Text: "You are a reviewer.\n\nBe brief."}, got)
		_, ok = fa.SystemPrompt(none.ID())
		assert.False(t, ok)
		assert.Equal(t, []acp.SystemPromptMode{acp.SystemPromptAppend, acp.SystemPromptOverride}, c.SystemPromptModes())
	})
}

// A restart re-attaches the session with its system prompt, as the spec
// has the client re-send it.
func TestSystemPromptIsSentAgainOnReattach(t *testing.T) {
	t.Parallel()
	script := crashing(spAppendCaps, "")
	sp := acp.TextSystemPrompt("", "Be terse.")
	var buf testutil.SyncBuffer
	c, err := startFake(t, script, ACPOptions{SystemPrompt: sp, Recover: &RecoverOptions{Backoff: 1}, Debug: DebugOptions{Record: &buf}})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "crash"})
	require.Error(t, err)
	resp, err := c.Generate(Request{Prompt: "hello"})
	require.NoError(t, err)
	require.NotNil(t, resp.Restarted, "the agent was restarted")
	assert.False(t, resp.Restarted.ContextLost, "the session was re-attached")
	require.NoError(t, c.Close())
	opens := map[string]int{}
	for _, l := range readRecordLines(t, buf.String()) {
		var m struct {
			Method string
			Params json.RawMessage
		}
		if l.Dir != "send" || json.Unmarshal(l.Msg, &m) != nil || (m.Method != "session/new" && m.Method != "session/load") {
			continue
		}
		opens[m.Method]++
		assert.JSONEq(t, `{"mode":"append","content":[{"type":"text","text":"Be terse."}]}`, string(systemPromptOf(t, m.Params)), m.Method)
	}
	assert.Equal(t, map[string]int{"session/new": 1, "session/load": 1}, opens)
}

// Refused before anything is sent: an agent that does not advertise the
// capability, override to an agent that takes append only, content the
// spec forbids. Each is typed.
func TestSystemPromptRefusedBeforeSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(sessionCaps)}, ACPOptions{})
		sp := acp.TextSystemPrompt(acp.SystemPromptAppend, "x")
		for _, open := range []func() error{
			func() error {
				_, err := c.NewSession(context.Background(), SessionOptions{SystemPrompt: sp})
				return err
			},
			func() error {
				_, err := c.LoadSession(context.Background(), "stored", SessionOptions{SystemPrompt: sp})
				return err
			},
			func() error {
				_, err := c.ResumeSession(context.Background(), "stored", SessionOptions{SystemPrompt: sp})
				return err
			},
		} {
			err := open()
			assert.ErrorIs(t, err, ErrSystemPromptUnsupported)
			assert.ErrorIs(t, err, ErrUnsupported)
			var spe *SystemPromptError
			require.True(t, errors.As(err, &spe))
			assert.Empty(t, spe.Modes)
			assert.Nil(t, spe.Err)
			assert.Contains(t, err.Error(), "does not advertise sessionCapabilities.systemPrompt")
		}
		assert.Nil(t, c.SystemPromptModes())
		assert.Len(t, received(fa.Agent, "session/new"), 1, "only the default session was opened")
		assert.Empty(t, received(fa.Agent, "session/load"))
		assert.Empty(t, received(fa.Agent, "session/resume"))

		c2, fa2 := connectFake(t, fakeagent.Script{AgentCapabilities: raw(spAppendCaps)}, ACPOptions{})
		_, err := c2.NewSession(context.Background(), SessionOptions{SystemPrompt: acp.TextSystemPrompt(acp.SystemPromptOverride, "x")})
		var spe *SystemPromptError
		require.True(t, errors.As(err, &spe), "%v", err)
		assert.Equal(t, acp.SystemPromptOverride, spe.Mode)
		assert.Equal(t, []acp.SystemPromptMode{acp.SystemPromptAppend}, spe.Modes)
		assert.Contains(t, err.Error(), "in override mode (it takes append)")
		for _, bad := range []*acp.SystemPrompt{
			{Mode: acp.SystemPromptAppend},
			{Content: []acp.ContentBlock{acp.ImageBlock("image/png", "AAAA")}},
			{Content: []acp.ContentBlock{acp.TextBlock("")}},
			{Mode: "prepend", Content: []acp.ContentBlock{acp.TextBlock("x")}},
		} {
			_, err := c2.NewSession(context.Background(), SessionOptions{SystemPrompt: bad})
			assert.ErrorIs(t, err, acp.ErrSystemPrompt, "%+v", bad)
		}
		assert.Len(t, received(fa2.Agent, "session/new"), 1, "nothing refused was sent")
	})
}

// Start checks ACPOptions.SystemPrompt before the agent is started, and
// fails with the typed error when the agent does not take it.
func TestSystemPromptAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, err := tryConnectFake(t, fakeagent.Script{AgentCapabilities: raw(spAppendCaps)}, ACPOptions{SystemPrompt: &acp.SystemPrompt{Mode: acp.SystemPromptAppend}})
		assert.ErrorIs(t, err, acp.ErrSystemPrompt)
		_, fa, err := tryConnectFake(t, fakeagent.Script{}, ACPOptions{SystemPrompt: acp.TextSystemPrompt("", "x")})
		assert.ErrorIs(t, err, ErrSystemPromptUnsupported)
		if fa != nil {
			assert.Empty(t, received(fa.Agent, "session/new"))
		}
	})
}

// An agent that advertises the capability but cannot apply the prompt
// answers the open with invalid params: a typed error carrying its answer.
func TestSystemPromptRefusedByTheAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{AgentCapabilities: raw(spAppendCaps), RefuseSystemPrompt: "too long"}, ACPOptions{})
		_, err := c.NewSession(context.Background(), SessionOptions{SystemPrompt: acp.TextSystemPrompt("", "x")})
		var spe *SystemPromptError
		require.True(t, errors.As(err, &spe), "%v", err)
		assert.ErrorIs(t, err, ErrSystemPromptUnsupported)
		assert.ErrorIs(t, err, &RPCError{Code: acp.CodeInvalidParams})
		assert.Equal(t, "session/new", spe.Method)
		assert.Contains(t, err.Error(), "the agent refused the append system prompt")
		assert.Contains(t, err.Error(), "too long")
		_, err = c.NewSession(context.Background(), SessionOptions{})
		assert.NoError(t, err, "without a system prompt the agent opens sessions")
	})
}

// Attack: an agent advertising the capability with the wrong types gets
// a defined answer: it does not take a system prompt (as the schema's
// default-on-error rule has it), and the host refuses to send one.
func TestAttackSystemPromptCapabilityOfTheWrongType(t *testing.T) {
	for caps, want := range map[string][]acp.SystemPromptMode{
		`{"sessionCapabilities":{"systemPrompt":true}}`:                            nil,
		`{"sessionCapabilities":{"systemPrompt":"yes"}}`:                           nil,
		`{"sessionCapabilities":{"systemPrompt":[{}]}}`:                            nil,
		`{"sessionCapabilities":{"systemPrompt":null}}`:                            nil,
		`{"sessionCapabilities":{"systemPrompt":1e999}}`:                           nil,
		`{"sessionCapabilities":true}`:                                             nil,
		`{"sessionCapabilities":{"systemPrompt":{"mode":true}}}`:                   {acp.SystemPromptAppend},
		`{"sessionCapabilities":{"systemPrompt":{"mode":{"override":true}}}}`:      {acp.SystemPromptAppend},
		`{"sessionCapabilities":{"systemPrompt":{"mode":{"override":"yes"}}}}`:     {acp.SystemPromptAppend},
		`{"sessionCapabilities":{"systemPrompt":{"mode":{"override":{}}}}}`:        {acp.SystemPromptAppend, acp.SystemPromptOverride},
		`{"loadSession":"yes","sessionCapabilities":{"list":7,"systemPrompt":{}}}`: {acp.SystemPromptAppend},
	} {
		t.Run(caps, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fa := connectFake(t, fakeagent.Script{AgentCapabilities: raw(caps)}, ACPOptions{})
				assert.Equal(t, want, c.SystemPromptModes())
				for _, mode := range []acp.SystemPromptMode{acp.SystemPromptAppend, acp.SystemPromptOverride} {
					_, err := c.NewSession(context.Background(), SessionOptions{SystemPrompt: acp.TextSystemPrompt(mode, "x")})
					if assert.ObjectsAreEqual(true, containsMode(want, mode)) {
						assert.NoError(t, err)
						continue
					}
					var spe *SystemPromptError
					assert.True(t, errors.As(err, &spe), "%v", err)
					assert.Nil(t, spe.Err, "refused before sending")
				}
				for _, p := range received(fa.Agent, "session/new")[1:] {
					assert.NotEmpty(t, systemPromptOf(t, p), "only prompts the agent takes were sent")
				}
			})
		})
	}
}

func containsMode(modes []acp.SystemPromptMode, m acp.SystemPromptMode) bool {
	for _, x := range modes {
		if x == m {
			return true
		}
	}
	return false
}
