package acphost

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// clientCaps is what the client advertised in initialize.
func clientCaps(t *testing.T, a *fakeagent.Agent) map[string]any {
	t.Helper()
	msgs := received(a, "initialize")
	require.Len(t, msgs, 1)
	var p struct {
		ClientCapabilities map[string]any `json:"clientCapabilities"`
	}
	require.NoError(t, json.Unmarshal(msgs[0], &p))
	return p.ClientCapabilities
}

func TestInitializeAdvertisesOnlyWhatIsServed(t *testing.T) {
	t.Parallel()
	_, a := connectFake(t, fakeagent.Script{}, ACPOptions{})
	caps := clientCaps(t, a.Agent)
	assert.Equal(t, map[string]any{"configOptions": map[string]any{"boolean": map[string]any{}}}, caps["session"],
		"boolean config options are always served (SetConfigOption with a bool); notices and compaction only on request")
	assert.NotContains(t, caps, "auth")
	assert.NotContains(t, caps, "elicitation")

	_, a = connectFake(t, fakeagent.Script{}, ACPOptions{Advertise: AdvertiseOptions{Notices: true, Compaction: true, TerminalAuth: true}})
	caps = clientCaps(t, a.Agent)
	session := caps["session"].(map[string]any)
	assert.Contains(t, session, "notices")
	assert.Contains(t, session, "compaction")
	assert.Equal(t, map[string]any{"terminal": true}, caps["auth"])
}

func TestNoticesAndCompactionsAreTyped(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(raw(`{"sessionUpdate":"notice","severity":"warning","title":"Rate limited","description":"retrying in 30s"}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"we fixed"}}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"we fixed the build"}],"error":null}`)),
		fakeagent.Say(raw(`{"sessionUpdate":"notice","severity":"info"}`)),
		fakeagent.Say(fakeagent.Text("done")),
	}}}}
	rec := &recorder{}
	c, _ := connectFake(t, script, ACPOptions{OnUpdate: rec.onUpdate, Advertise: AdvertiseOptions{Notices: true, Compaction: true}})
	var types []EventType
	_, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, func(ev StreamEvent) { types = append(types, ev.Type) })
	require.NoError(t, err)
	assert.Equal(t, []EventType{EventNotice, EventCompaction, EventCompaction, EventText, EventDone}, types)

	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.updates, 5)
	n := rec.updates[0].(*acp.NoticeUpdate)
	assert.Equal(t, []any{acp.NoticeWarning, "Rate limited", "retrying in 30s"}, []any{n.Severity, n.Title, n.Description})
	chunk := rec.updates[1].(*acp.CompactionSummaryChunk)
	assert.Equal(t, "c1", chunk.ID)
	assert.Equal(t, "we fixed", chunk.Content.Text)
	cu := rec.updates[2].(*acp.CompactionUpdate)
	assert.Equal(t, acp.CompactionCompleted, cu.Status)
	assert.True(t, cu.SummarySet)
	require.Len(t, cu.Summary, 1)
	assert.Equal(t, "we fixed the build", cu.Summary[0].Text)
	assert.True(t, cu.ErrorSet, "null clears the error")
	assert.Nil(t, cu.Error)
	bad, ok := rec.updates[3].(*acp.UnknownUpdate)
	require.True(t, ok, "a notice without its required title is not typed")
	assert.Error(t, bad.Err)
}

func TestLogoutOnlyWhenOffered(t *testing.T) {
	t.Parallel()
	c, a := connectFake(t, fakeagent.Script{}, ACPOptions{})
	require.ErrorIs(t, c.Logout(context.Background()), ErrUnsupported)
	assert.Empty(t, received(a.Agent, "logout"), "not sent to an agent that does not offer it")

	c, a = connectFake(t, fakeagent.Script{AgentCapabilities: raw(`{"auth":{"logout":{}}}`)}, ACPOptions{})
	require.NoError(t, c.Logout(context.Background()))
	assert.Len(t, received(a.Agent, "logout"), 1)
}

func TestTerminalAuthCommand(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{AuthMethods: raw(`[{"id":"browser","name":"Log in"},{"id":"tui","name":"Log in in a terminal","type":"terminal","args":["--login"],"env":{"B":"2","A":"1"}}]`)}
	c, err := startFake(t, script, ACPOptions{Advertise: AdvertiseOptions{TerminalAuth: true}, Process: ProcessOptions{Env: []string{"X=y"}}})
	require.NoError(t, err)
	cmd, args, env, err := c.TerminalAuthCommand("tui")
	require.NoError(t, err)
	assert.Equal(t, c.opts.Command, cmd)
	assert.Equal(t, append(append([]string(nil), c.opts.Args...), "--login"), args)
	assert.Equal(t, append(append([]string(nil), c.opts.Process.Env...), "A=1", "B=2"), env, "ACPOptions.Process.Env, then the method's in a stable order")
	assert.Contains(t, c.opts.Process.Env, "X=y")
	_, _, _, err = c.TerminalAuthCommand("browser")
	assert.ErrorIs(t, err, ErrUnsupported, "an agent method is not run in a terminal")
	assert.Equal(t, "browser", c.AuthMethods()[0].ID)
}

func TestUnstableForkAndTitleOnlyWhenOptedIn(t *testing.T) {
	t.Parallel()
	caps := raw(`{"loadSession":true,"sessionCapabilities":{"fork":{},"title":{}}}`)
	script := fakeagent.Script{AgentCapabilities: caps, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("remembered"))}}}}

	c, a := connectFake(t, script, ACPOptions{})
	_, err := c.ForkSession(context.Background(), c.Session().ID(), SessionOptions{})
	require.ErrorIs(t, err, ErrUnsupported, "unstable: not without the opt-in")
	_, err = c.Session().SetTitle(context.Background(), "x")
	require.ErrorIs(t, err, ErrUnsupported)
	assert.Empty(t, received(a.Agent, "session/fork"))
	assert.Empty(t, received(a.Agent, "session/set_title"))

	rec := &recorder{}
	c, a = connectFake(t, script, ACPOptions{Unstable: true, OnUpdate: rec.onUpdate})
	_, err = c.Generate(Request{Prompt: "hello"})
	require.NoError(t, err)
	fork, err := c.ForkSession(context.Background(), c.Session().ID(), SessionOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, c.Session().ID(), fork.ID(), "a new session")
	resp, err := fork.Generate(Request{Prompt: "and now?"})
	require.NoError(t, err, "the fork runs turns of its own")
	assert.Equal(t, "remembered", resp.Text)
	forks := received(a.Agent, "session/fork")
	require.Len(t, forks, 1)
	assert.Contains(t, string(forks[0]), `"sessionId":"`+c.Session().ID()+`"`, "made from the source session")

	got, err := fork.SetTitle(context.Background(), "  Fix the build  ")
	require.NoError(t, err)
	assert.Equal(t, "Fix the build", got, "the title the agent stored")
}

func TestConfigOptionsAreTypedForPickers(t *testing.T) {
	t.Parallel()
	var opts []acp.ConfigOption
	require.NoError(t, json.Unmarshal([]byte(`[
		{"id":"model","name":"Model","category":"model","type":"select","currentValue":"sonnet","options":[
			{"group":"anthropic","name":"Anthropic","options":[{"value":"sonnet","name":"Sonnet"},{"value":"opus","name":"Opus","description":"slow"}]},
			{"group":"other","name":"Other","options":[{"value":"x","name":"X"},{"name":"no value"}]}]},
		{"id":"effort","name":"Effort","category":"thought_level","type":"select","currentValue":"high","options":[{"value":"low","name":"Low"},{"value":"high","name":"High"}]},
		{"id":"fast","name":"Fast mode","type":"boolean","currentValue":true},
		{"id":"odd","name":"Odd","category":"vendor_thing","type":"slider"}]`), &opts))
	require.Len(t, opts, 4)
	assert.Equal(t, acp.CategoryModel, opts[0].Category)
	assert.Equal(t, "sonnet", opts[0].Current())
	assert.Equal(t, []acp.ConfigChoice{
		{Value: "sonnet", Name: "Sonnet", Group: "anthropic", GroupName: "Anthropic"},
		{Value: "opus", Name: "Opus", Description: "slow", Group: "anthropic", GroupName: "Anthropic"},
		{Value: "x", Name: "X", Group: "other", GroupName: "Other"},
	}, opts[0].Choices, "grouped choices flattened in order; one without a value skipped")
	assert.Equal(t, acp.CategoryThoughtLevel, opts[1].Category)
	assert.Equal(t, []acp.ConfigChoice{{Value: "low", Name: "Low"}, {Value: "high", Name: "High"}}, opts[1].Choices)
	assert.Equal(t, "true", string(opts[2].CurrentValue))
	assert.Empty(t, opts[2].Choices)
	assert.Equal(t, acp.ConfigCategory("vendor_thing"), opts[3].Category, "an unknown category is kept")
	assert.NotEmpty(t, opts[3].Raw)
}
