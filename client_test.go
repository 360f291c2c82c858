package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHandshakeWire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		c, fa := connectFake(t, fakeagent.Script{Name: "fa", NewSessionResult: raw(`{"modes":{"currentModeId":"ask","availableModes":[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}}`)},
			ACPOptions{Dir: dir, Mode: "code"})
		init := received(fa.Agent, "initialize")
		require.Len(t, init, 1)
		assert.JSONEq(t, `{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false,"session":{"configOptions":{"boolean":{}}}},"clientInfo":{"name":"acphost","version":"`+Version+`"}}`, string(init[0]))
		sn := received(fa.Agent, "session/new")
		require.Len(t, sn, 1)
		assert.JSONEq(t, `{"cwd":`+strconv.Quote(dir)+`,"mcpServers":[]}`, string(sn[0]), "mcpServers must be an array, never null")
		assert.Equal(t, "s1", c.Session().ID())
		assert.Equal(t, "fa", c.AgentInfo().Name)
		sm := received(fa.Agent, "session/set_mode")
		require.Len(t, sm, 1)
		assert.JSONEq(t, `{"sessionId":"s1","modeId":"code"}`, string(sm[0]))
		eventually(t, "the mode confirmation", func() bool { return c.Session().Modes().CurrentModeID == "code" })
		assert.Len(t, c.Session().Modes().AvailableModes, 2)
	})
}

func TestDefaultDirIsAbsolute(t *testing.T) {
	opts := ACPOptions{Dir: "relative"}
	require.NoError(t, opts.setDefaults())
	assert.True(t, filepath.IsAbs(opts.Dir))
}

func TestPresentationOptInCapability(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, fa := connectFake(t, fakeagent.Script{}, ACPOptions{Advertise: AdvertiseOptions{PermissionPresentation: true}})
		init := received(fa.Agent, "initialize")
		assert.Contains(t, string(init[0]), `"_meta":{"jetbrains":{"air":{}}}`)
	})
}

func TestUnsupportedProtocolVersion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, err := tryConnectFake(t, fakeagent.Script{ProtocolVersion: 2}, ACPOptions{})
		require.ErrorIs(t, err, ErrProtocol)
		assert.Contains(t, err.Error(), "version 2")
	})
}

func TestAuthenticateWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{RequireAuth: true, AuthMethods: raw(`[{"id":"login","name":"Log in"}]`)}, ACPOptions{})
		assert.Equal(t, "s1", c.Session().ID())
		auth := received(fa.Agent, "authenticate")
		require.Len(t, auth, 1)
		assert.JSONEq(t, `{"methodId":"login"}`, string(auth[0]))
	})
}

func TestAuthRequiredWithoutMethodIsTypedError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, err := tryConnectFake(t, fakeagent.Script{RequireAuth: true}, ACPOptions{})
		require.ErrorIs(t, err, &RPCError{Code: acp.CodeAuthRequired})
		var re *RPCError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, "session/new", re.Method)
		var ae *AuthError
		require.ErrorAs(t, err, &ae)
		assert.ErrorIs(t, err, ErrAuthRequired)
		assert.Empty(t, ae.Tried)
	})
}

// TestAuthErrorCarriesTheAgentsMethods: an agent that offers only a
// terminal method (which the client never runs itself) refuses the
// session with an *AuthError naming its methods, so a UI can let a person
// log in.
func TestAuthErrorCarriesTheAgentsMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, _, err := tryConnectFake(t, fakeagent.Script{RequireAuth: true,
			AuthMethods: raw(`[{"id":"tui","name":"Log in","type":"terminal","args":["--login"]},{"id":"KEY","name":"API key","type":"env_var"}]`)},
			ACPOptions{Advertise: AdvertiseOptions{TerminalAuth: true}})
		var ae *AuthError
		require.ErrorAs(t, err, &ae)
		require.Len(t, ae.Methods, 2)
		assert.Equal(t, "terminal", ae.Methods[0].Type)
		assert.Equal(t, []string{"--login"}, ae.Methods[0].Args)
		assert.Empty(t, ae.Tried, "no method the client can run itself")
		assert.Contains(t, err.Error(), "its methods: tui, KEY")
		_, _, _, cerr := ae.TerminalCommand("tui")
		assert.ErrorIs(t, cerr, ErrUnsupported, "StreamTransport: the client does not know the agent's program (see TestAttackTerminalLoginOfAConnectedAgentIsNoCommand)")
		assert.Equal(t, 1, strings.Count(err.Error(), "session/new"), "said once: %v", err)
	})
}

// The seed's live transcript: updates in wire order, thoughts kept out of Text.
func TestTurnUpdatesInOrderAndTextExcludesThoughts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		c, _ := connectFake(t, fakeagent.Demo(), ACPOptions{OnUpdate: rec.onUpdate})
		resp, err := c.GenerateCtx(context.Background(), Request{Prompt: "list files"})
		require.NoError(t, err)
		assert.Equal(t, "picked allow", resp.Text)
		assert.Equal(t, "thinking about it", resp.Thought)
		assert.Equal(t, acp.StopEndTurn, resp.StopReason)
		assert.Equal(t, []string{"agent_thought_chunk", "tool_call", "tool_call_update", "plan", "agent_message_chunk"}, rec.kinds())
		require.Len(t, resp.ToolCalls, 1)
		assert.Equal(t, acp.StatusCompleted, resp.ToolCalls[0].Status)
		assert.Equal(t, "ls", resp.ToolCalls[0].Title, "the update's merged state keeps the title")
	})
}

// Barrier: every update sent before the prompt's answer is delivered before
// GenerateCtx returns, even with a slow OnUpdate.
func TestTurnBarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		slow := func(acp.Update) {
			time.Sleep(time.Millisecond) // a slow consumer (fake time in the bubble)
			n.Add(1)
		}
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Updates: 1000}}}}}
		c, _ := connectFake(t, script, ACPOptions{OnUpdate: slow, Limits: Limits{MaxQueuedUpdates: 16}})
		for turn := 1; turn <= 3; turn++ {
			resp, err := c.Generate(Request{Prompt: "go"})
			require.NoError(t, err)
			assert.Equal(t, int64(1000*turn), n.Load(), "turn %d returned before its updates were delivered", turn)
			assert.Len(t, resp.Text, 1000)
		}
	})
}

func TestUpdatesOutsideTurnAreDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		script := fakeagent.Script{
			BeforeSessionNew: []fakeagent.Step{{Update: raw(`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"search","input":{"hint":"query"}}]}`)}},
			Turns:            []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("in"))}, After: []fakeagent.Step{fakeagent.Say(fakeagent.Text("late"))}}},
		}
		c, _ := connectFake(t, script, ACPOptions{OnUpdate: rec.onUpdate})
		resp, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "in", resp.Text, "a late update must not be counted in the turn's answer")
		eventually(t, "the late update", func() bool { return rec.len() == 3 })
		rec.mu.Lock()
		defer rec.mu.Unlock()
		cmds, ok := rec.updates[0].(*acp.AvailableCommandsUpdate)
		require.True(t, ok, "early update is %T", rec.updates[0])
		assert.Equal(t, []acp.AvailableCommand{{Name: "web", Description: "search", InputHint: "query"}}, cmds.Commands)
		assert.Equal(t, "late", rec.updates[2].(*acp.MessageChunk).Content.Text)
	})
}

func TestUnknownUpdateKindIsDeliveredRaw(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(raw(`{"sessionUpdate":"agent_status","state":"MCP server unavailable"}`)),
			fakeagent.Say(raw(`{"sessionUpdate":"agent_message_chunk","content":"not an object"}`)),
		}}}}
		c, _ := connectFake(t, script, ACPOptions{OnUpdate: rec.onUpdate})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		require.Equal(t, 2, rec.len())
		u, ok := rec.updates[0].(*acp.UnknownUpdate)
		require.True(t, ok, "got %T", rec.updates[0])
		assert.Equal(t, acp.UpdateKind("agent_status"), u.Kind())
		assert.NoError(t, u.Err)
		assert.Contains(t, string(u.Raw()), "MCP server unavailable")
		bad, ok := rec.updates[1].(*acp.UnknownUpdate)
		require.True(t, ok, "a malformed known kind is not mis-decoded: got %T", rec.updates[1])
		assert.Error(t, bad.Err)
	})
}

func TestOnUpdateMayCallClientMethods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c *ACPClient
		var calls atomic.Int64
		setMode := make(chan error, 1)
		onUpdate := func(u acp.Update) {
			if _, ok := u.(*acp.MessageChunk); ok && calls.Add(1) == 1 {
				setMode <- c.Session().SetMode(context.Background(), "code") // while 99 updates wait behind a full queue
			}
		}
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Updates: 100}}}}}
		c, _ = connectFake(t, script, ACPOptions{OnUpdate: onUpdate, Limits: Limits{MaxQueuedUpdates: 2}})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		require.NoError(t, <-setMode)
		eventually(t, "mode update", func() bool { return c.Session().Modes().CurrentModeID == "code" })
	})
}

func TestRequestIDsOfAnyType(t *testing.T) {
	for _, stringIDs := range []bool{false, true} {
		t.Run(fmt.Sprint("string=", stringIDs), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c, fa := connectFake(t, fakeagent.Script{StringIDs: stringIDs, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
					fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "read", fakeagent.StdOptions...)),
					fakeagent.Say(fakeagent.Text("{{answer}}")),
				}}}}, ACPOptions{})
				resp, err := c.Generate(Request{Prompt: "x"})
				require.NoError(t, err)
				assert.Equal(t, "allow", resp.Text)
				res := responses(fa.Agent)
				require.NotEmpty(t, res)
				if stringIDs {
					assert.Equal(t, `"req-0"`, string(res[len(res)-1].ID))
				} else {
					assert.Equal(t, `0`, string(res[len(res)-1].ID), "id 0 is echoed as 0")
				}
			})
		})
	}
}

func TestUnknownRequestGetsMethodNotFound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{Notify: &fakeagent.Call{Method: "_auth/status_update", Params: raw(`{}`)}},
			{Request: &fakeagent.Call{Method: "_vendor/thing", Params: raw(`{}`)}},
			{Request: &fakeagent.Call{Method: "fs/read_text_file", Params: raw(`{"path":"/etc/passwd"}`)}},
			fakeagent.Say(fakeagent.Text("done")),
		}}}}, ACPOptions{})
		resp, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "done", resp.Text)
		res := responses(fa.Agent)
		require.Len(t, res, 2)
		for _, r := range res {
			assert.Contains(t, string(r.Error), `"code":-32601`)
		}
	})
}

func TestJunkOnStdoutIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var skipped atomic.Int64
		c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{Raw: "npm WARN deprecated something"},
			{Raw: "\x1b[2K\x1b[1G"},
			{Raw: `{"level":30,"msg":"log line","id":1,"result":{"stopReason":"refusal"}}`},
			fakeagent.Say(fakeagent.Text("fine")),
		}}}}, ACPOptions{Debug: DebugOptions{OnSkippedLine: func([]byte) { skipped.Add(1) }}})
		resp, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "fine", resp.Text)
		assert.Equal(t, acp.StopEndTurn, resp.StopReason, "a log object with an id must not answer the prompt")
		assert.Equal(t, int64(3), skipped.Load())
	})
}

func TestLineOverLimitFailsTheTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{HugeLine: 2 << 20}, {WaitCancel: true}}}}},
			ACPOptions{Limits: Limits{MaxLineBytes: 1 << 20}})
		_, err := c.Generate(Request{Prompt: "x"})
		require.ErrorIs(t, err, ErrLineTooLong)
		require.ErrorIs(t, err, ErrProtocol)
		_, err = c.Generate(Request{Prompt: "again"})
		require.ErrorIs(t, err, ErrLineTooLong, "the dead connection keeps its cause")
	})
}

func TestCloseIsIdempotentAndCallsFailAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
		require.NoError(t, c.Close())
		require.NoError(t, c.Close())
		_, err := c.Generate(Request{Prompt: "x"})
		require.ErrorIs(t, err, ErrClosed)
	})
}

func TestConcurrentTurnsAreSerialized(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Updates: 50}}}}}, ACPOptions{})
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				resp, err := c.Generate(Request{Prompt: "x"})
				if err == nil && len(resp.Text) != 50 {
					err = fmt.Errorf("turn text has %d chunks, want 50: turns overlapped", len(resp.Text))
				}
				errs <- err
			}()
		}
		for range 4 {
			require.NoError(t, <-errs)
		}
		assert.Len(t, received(fa.Agent, "session/prompt"), 4)
	})
}

func TestPromptContentBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, fa := connectFake(t, fakeagent.Script{}, ACPOptions{})
		_, err := c.Generate(Request{Prompt: "look", Content: []acp.ContentBlock{acp.ImageBlock("image/png", "AAAA"), acp.ResourceBlock("file:///a.go", "text/x-go", "package a")}})
		require.NoError(t, err)
		p := received(fa.Agent, "session/prompt")
		require.Len(t, p, 1)
		assert.JSONEq(t, `{"sessionId":"s1","prompt":[{"type":"text","text":"look"},{"type":"image","mimeType":"image/png","data":"AAAA"},{"type":"resource","resource":{"uri":"file:///a.go","mimeType":"text/x-go","text":"package a"}}]}`, string(p[0]))
	})
}

// --- real subprocesses ---

func TestSubprocessTurn(t *testing.T) {
	c, err := startFake(t, fakeagent.Demo(), ACPOptions{})
	require.NoError(t, err)
	for i := range 2 {
		resp, err := c.Generate(Request{Prompt: "list files"})
		require.NoError(t, err, "turn %d", i)
		assert.Equal(t, "picked allow", resp.Text)
	}
	require.NoError(t, c.Close())
}

func TestCrashMidTurnIsTypedAtOnce(t *testing.T) {
	code := 3
	c, err := startFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("partial")),
		{Stderr: "fatal: model quota exhausted"},
		{Exit: &code},
	}}}}, ACPOptions{Timeouts: Timeouts{CloseGrace: 10 * time.Second}})
	require.NoError(t, err)
	start := time.Now()
	resp, err := c.Generate(Request{Prompt: "x"})
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrAgentExited)
	assert.Equal(t, "partial", resp.Text, "what the agent said before dying is kept")
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 3, ee.ExitCode)
	assert.True(t, ee.DuringTurn)
	assert.Contains(t, err.Error(), "fatal: model quota exhausted")
	t.Logf("crash reported after %v", elapsed)
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed after a crash")
	}
	assert.ErrorIs(t, c.Err(), ErrAgentExited)
}

func TestCrashDuringStartReportsStderr(t *testing.T) {
	code := 7
	_, err := startFake(t, fakeagent.Script{StderrLines: []string{"error: not logged in"}, BeforeSessionNew: []fakeagent.Step{{Exit: &code}}}, ACPOptions{})
	require.ErrorIs(t, err, ErrAgentExited)
	assert.Contains(t, err.Error(), "error: not logged in")
}

func TestCloseKillsStubbornAgentAndGrandchild(t *testing.T) {
	c, err := startFake(t, fakeagent.Script{IgnoreEOF: true, IgnoreSIGTERM: true, Grandchild: true}, ACPOptions{Timeouts: Timeouts{CloseGrace: 200 * time.Millisecond}})
	require.NoError(t, err)
	pgid := c.PID()
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return")
	}
	eventually(t, "the process group to be gone", func() bool { return !groupAlive(pgid) })
}

func TestStderrIsForwardedAndDrained(t *testing.T) {
	var lines []string
	for i := range 700 {
		lines = append(lines, strings.Repeat("e", 100)+strconv.Itoa(i))
	}
	w := &testutil.SyncBuffer{}
	c, err := startFake(t, fakeagent.Script{StderrLines: lines}, ACPOptions{Process: ProcessOptions{Stderr: w}})
	require.NoError(t, err, "an agent writing more than a pipe buffer to stderr must not block")
	_, err = c.Generate(Request{Prompt: "x"})
	require.NoError(t, err)
	require.NoError(t, c.Close())
	assert.Contains(t, w.String(), lines[len(lines)-1])
}

func TestExitErrorMessage(t *testing.T) {
	e := &ExitError{ExitCode: 2, Stderr: "a\nlast words\n\n", DuringTurn: true}
	assert.Equal(t, "acphost: agent exited with status 2 during a turn: last words", e.Error())
	assert.True(t, errors.Is(e, ErrAgentExited))
	e = &ExitError{ExitCode: -1, Signal: "killed"}
	assert.Equal(t, "acphost: agent exited on signal killed", e.Error())
}

func TestRPCErrorMatchesByCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &RPCError{Code: -32000, Message: "auth", Data: json.RawMessage(`{"x":1}`)})
	assert.ErrorIs(t, err, &RPCError{Code: acp.CodeAuthRequired})
	assert.NotErrorIs(t, err, &RPCError{Code: acp.CodeInternalError})
	assert.Contains(t, err.Error(), `{"x":1}`)
}

func TestAppendPromptMatchesEncodingJSON(t *testing.T) {
	unknown := acp.ContentBlock{Type: "x-later", Raw: json.RawMessage(`{"type":"x-later","n":1}`)}
	blocks := []acp.ContentBlock{acp.TextBlock("a\"<é>\n\x01\xff"), acp.TextBlock(""), {Type: "text", Text: "t", Attachment: &acp.Attachment{Title: "with title"}}, acp.ImageBlock("image/png", "AA"), unknown}
	encoded, err := encodeBlocks(blocks)
	require.NoError(t, err)
	got := appendPrompt(nil, 7, "s\"1", blocks, encoded, nil)
	want, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
		"params": map[string]any{"sessionId": "s\"1", "prompt": blocks}})
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	meta := map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "tracestate": "k=\"v\""}
	got = appendPrompt(nil, 7, "s\"1", blocks, encoded, meta)
	want, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
		"params": map[string]any{"sessionId": "s\"1", "prompt": blocks, "_meta": meta}})
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "TurnWatch.Meta is the prompt's _meta")
	_, err = encodeBlocks([]acp.ContentBlock{{Type: "x-bad", Raw: json.RawMessage(`{`)}})
	assert.Error(t, err, "a block that cannot be encoded fails the prompt")
}
