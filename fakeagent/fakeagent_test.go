package fakeagent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/fakeagent"
)

func TestMain(m *testing.M) {
	fakeagent.Main()
	os.Exit(m.Run())
}

// timeout bounds every wait in these tests; nothing sleeps.
const timeout = 10 * time.Second

// wire is one message as the test client sees it.
type wire struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
	line string
}

func (m wire) isResponse(id string) bool { return m.Method == "" && string(m.ID) == id }

// update returns the params.update of a session/update, or nil.
func (m wire) update() map[string]any {
	if m.Method != "session/update" {
		return nil
	}
	var p struct {
		Update map[string]any `json:"update"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Update
}

// text returns the text of an agent_message_chunk, or "".
func (m wire) text() string {
	u := m.update()
	if u == nil || u["sessionUpdate"] != "agent_message_chunk" {
		return ""
	}
	s, _ := u["content"].(map[string]any)["text"].(string)
	return s
}

// client is a tiny hand-rolled ACP client: plain encoding/json over a pair of streams.
type client struct {
	t      *testing.T
	w      io.Writer
	lines  chan string
	stop   chan struct{}
	nextID int
}

func newClient(t *testing.T, w io.Writer, r io.Reader) *client {
	c := &client{t: t, w: w, lines: make(chan string, 64), stop: make(chan struct{}), nextID: 100}
	go c.readLines(r)
	return c
}

func (c *client) readLines(r io.Reader) {
	defer close(c.lines)
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		select {
		case c.lines <- strings.TrimSuffix(line, "\n"):
		case <-c.stop:
			return
		}
	}
}

// served is an agent running in-process on two io.Pipes, driven by a test client.
type served struct {
	c      *client
	result <-chan error // Serve's result
	stdin  *io.PipeWriter
	stdout *io.PipeReader
}

func serve(t *testing.T, ctx context.Context, a *fakeagent.Agent) served {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	result := make(chan error, 1)
	go func() { result <- a.Serve(ctx, toAgentR, fromAgentW) }()
	return served{newClient(t, toAgentW, fromAgentR), result, toAgentW, fromAgentR}
}

// close closes both pipes and stops the client's reader.
func (s served) close() {
	s.stdin.Close()
	close(s.c.stop)
	s.stdout.Close()
}

// wait returns Serve's result, or fails the test if Serve does not return.
func (s served) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.result:
		return err
	case <-time.After(timeout):
		t.Error("Serve did not return")
		return nil
	}
}

// inProcess starts an agent playing s and returns the client and the agent. Cleanup
// closes the pipes and checks that Serve returned nil.
func inProcess(t *testing.T, s fakeagent.Script) (*client, *fakeagent.Agent) {
	t.Helper()
	a := fakeagent.New(s)
	srv := serve(t, context.Background(), a)
	t.Cleanup(func() {
		srv.close()
		if err := srv.wait(t); err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	})
	return srv.c, a
}

func (c *client) writeLine(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, s+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.writeLine(string(b))
}

// request sends a request and returns its id as JSON text.
func (c *client) request(method string, params any) string {
	c.t.Helper()
	c.nextID++
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.nextID, "method": method, "params": params})
	return strconv.Itoa(c.nextID)
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}

func (c *client) respond(id json.RawMessage, result any) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (c *client) respondError(id json.RawMessage, code int, msg string) {
	c.t.Helper()
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (c *client) nextLine() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the agent's output ended")
		}
		return line
	case <-time.After(timeout):
		c.t.Fatal("timed out waiting for the agent")
	}
	return ""
}

func (c *client) next() wire {
	c.t.Helper()
	line := c.nextLine()
	var m wire
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		c.t.Fatalf("agent wrote a line that is not JSON: %q", line)
	}
	if m.JSONRPC != "2.0" {
		c.t.Fatalf("agent wrote a line without jsonrpc 2.0: %s", line)
	}
	m.line = line
	return m
}

// until reads messages until one satisfies stop; it returns that one and those before it.
func (c *client) until(stop func(wire) bool) (wire, []wire) {
	c.t.Helper()
	var before []wire
	for {
		m := c.next()
		if stop(m) {
			return m, before
		}
		before = append(before, m)
	}
}

// call sends a request and returns its response and the messages that came before it.
func (c *client) call(method string, params any) (wire, []wire) {
	c.t.Helper()
	id := c.request(method, params)
	return c.until(func(m wire) bool { return m.isResponse(id) })
}

// handshake initializes and opens a session, returning its id.
func (c *client) handshake() string {
	c.t.Helper()
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	resp, _ := c.call("session/new", map[string]any{"cwd": "/tmp", "mcpServers": []any{}})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.SessionID == "" {
		c.t.Fatalf("session/new answered %s", resp.line)
	}
	return r.SessionID
}

func (c *client) prompt(sid, text string) string {
	c.t.Helper()
	return c.request("session/prompt", map[string]any{
		"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}},
	})
}

func isMethod(method string) func(wire) bool {
	return func(m wire) bool { return m.Method == method }
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want invalid JSON %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func stopReason(t *testing.T, m wire) string {
	t.Helper()
	var r struct {
		StopReason string `json:"stopReason"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &r) != nil {
		t.Fatalf("prompt answered %s, want a stopReason", m.line)
	}
	return r.StopReason
}

func texts(msgs []wire) []string {
	var out []string
	for _, m := range msgs {
		if s := m.text(); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func TestHandshake(t *testing.T) {
	c, a := inProcess(t, fakeagent.Script{
		SessionID:        "abc",
		NewSessionResult: json.RawMessage(`{"modes":{"currentModeId":"ask","availableModes":[]}}`),
		BeforeSessionNew: []fakeagent.Step{fakeagent.Say(json.RawMessage(
			`{"sessionUpdate":"available_commands_update","availableCommands":[]}`))},
	})
	resp, _ := c.call("initialize", map[string]any{"protocolVersion": 1})
	jsonEqual(t, resp.Result, `{"protocolVersion":1,
		"agentCapabilities":{"loadSession":false,"promptCapabilities":{"image":true,"embeddedContext":true}},
		"authMethods":[],"agentInfo":{"name":"fakeagent","version":"0.0.0"}}`)

	resp, before := c.call("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})
	jsonEqual(t, resp.Result, `{"sessionId":"abc","modes":{"currentModeId":"ask","availableModes":[]}}`)
	if len(before) != 1 || before[0].update()["sessionUpdate"] != "available_commands_update" {
		t.Errorf("before session/new answered: %v, want one available_commands_update", before)
	} else {
		jsonEqual(t, before[0].Params, `{"sessionId":"abc","update":{"sessionUpdate":"available_commands_update","availableCommands":[]}}`)
	}
	resp, _ = c.call("session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})
	jsonEqual(t, resp.Result, `{"sessionId":"abc-2","modes":{"currentModeId":"ask","availableModes":[]}}`)

	want := []string{"initialize", "session/new", "session/new"}
	if got := a.Methods(); !reflect.DeepEqual(got, want) {
		t.Errorf("Methods() = %v, want %v", got, want)
	}
}

func TestSessionMethods(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{})
	sid := c.handshake()

	resp, _ := c.call("session/set_mode", map[string]any{"sessionId": sid, "modeId": "plan"})
	jsonEqual(t, resp.Result, `{}`)
	upd := c.next()
	jsonEqual(t, upd.Params, `{"sessionId":"s1","update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}`)

	resp, _ = c.call("session/set_config_option", map[string]any{"sessionId": sid, "configId": "m", "value": "x"})
	jsonEqual(t, resp.Result, `{"configOptions":[]}`)

	// With options in the script: the full list back, the one set changed;
	// an id it does not offer refused.
	c2, _ := inProcess(t, fakeagent.Script{NewSessionResult: json.RawMessage(`{"configOptions":[{"id":"m","type":"select","currentValue":"a"},{"id":"f","type":"boolean","currentValue":false}]}`)})
	sid2 := c2.handshake()
	resp, _ = c2.call("session/set_config_option", map[string]any{"sessionId": sid2, "configId": "f", "value": true})
	jsonEqual(t, resp.Result, `{"configOptions":[{"id":"m","type":"select","currentValue":"a"},{"id":"f","type":"boolean","currentValue":true}]}`)
	if resp, _ = c2.call("session/set_config_option", map[string]any{"sessionId": sid2, "configId": "zz", "value": "x"}); resp.Error == nil || resp.Error.Code != -32602 {
		t.Errorf("an unknown option answered %s, want -32602", resp.line)
	}

	for method, code := range map[string]int{"session/load": -32601, "x/unknown": -32601} {
		resp, _ = c.call(method, map[string]any{"sessionId": sid})
		if resp.Error == nil || resp.Error.Code != code {
			t.Errorf("%s answered %s, want error %d", method, resp.line, code)
		}
	}
	resp, _ = c.call("session/prompt", map[string]any{"sessionId": "nope", "prompt": []any{}})
	if resp.Error == nil || resp.Error.Code != -32602 {
		t.Errorf("prompt for an unknown session answered %s, want -32602", resp.line)
	}
}

func TestSetModeFailsAndLoadSession(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{
		SetModeFails:      true,
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
	})
	resp, _ := c.call("session/set_mode", map[string]any{"sessionId": "s1", "modeId": "plan"})
	if resp.Error == nil || resp.Error.Code != -32601 {
		t.Errorf("set_mode answered %s, want -32601", resp.line)
	}
	resp, _ = c.call("session/load", map[string]any{"sessionId": "old", "cwd": "/", "mcpServers": []any{}})
	jsonEqual(t, resp.Result, `{}`)
	id := c.prompt("old", "hi")
	resp, before := c.until(func(m wire) bool { return m.isResponse(id) })
	if got := texts(before); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("default turn texts = %v, want [ok]", got)
	}
	if r := stopReason(t, resp); r != "end_turn" {
		t.Errorf("stopReason = %q", r)
	}
}

func TestIDsEchoedExactly(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{})
	for _, id := range []string{`0`, `-7`, `9007199254740993`, `"s-1"`, `null`, `"a<b&\u00e9"`} {
		c.writeLine(`{"jsonrpc":"2.0","id":` + id + `,"method":"initialize","params":{"protocolVersion":1}}`)
		m := c.next()
		if !strings.Contains(m.line, `"id":`+id+`,`) || m.Result == nil {
			t.Errorf("request id %s answered with %s", id, m.line)
		}
	}
}

func TestJunkFromClientIsRecorded(t *testing.T) {
	c, a := inProcess(t, fakeagent.Script{})
	c.writeLine("not json at all")
	c.writeLine(`[1,2]`)
	c.notify("x/whatever", map[string]any{})
	c.call("initialize", map[string]any{})
	got := a.Received()
	if len(got) != 4 {
		t.Fatalf("Received() has %d messages, want 4: %v", len(got), got)
	}
	jsonEqual(t, got[0].Raw, `"not json at all"`)
	jsonEqual(t, got[1].Raw, `[1,2]`)
	if got[2].Method != "x/whatever" || got[2].ID != nil || got[3].Method != "initialize" {
		t.Errorf("Received() = %v", got)
	}
}

func TestPermissionAnswers(t *testing.T) {
	cases := []struct {
		name   string
		answer func(c *client, id json.RawMessage)
		want   string
	}{
		{"selected", func(c *client, id json.RawMessage) {
			c.respond(id, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}})
		}, "allow-always"},
		{"cancelled", func(c *client, id json.RawMessage) {
			c.respond(id, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
		}, "cancelled"},
		{"error", func(c *client, id json.RawMessage) { c.respondError(id, -32603, "boom") }, "error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.ToolCall("t1", "ls", "execute")),
				fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
				fakeagent.Say(fakeagent.Text("picked {{answer}}!")),
			}}}})
			sid := c.handshake()
			pid := c.prompt(sid, "go")
			req, before := c.until(isMethod("session/request_permission"))
			if len(before) != 1 || before[0].update()["sessionUpdate"] != "tool_call" {
				t.Errorf("before the permission request: %v", before)
			}
			if string(req.ID) != "0" {
				t.Errorf("first agent request id = %s, want 0", req.ID)
			}
			jsonEqual(t, req.Params, `{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"ls","kind":"execute","status":"pending"},
				"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},
				{"optionId":"allow-always","name":"Always allow","kind":"allow_always"},
				{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`)
			tc.answer(c, req.ID)
			resp, before := c.until(func(m wire) bool { return m.isResponse(pid) })
			if got := texts(before); !reflect.DeepEqual(got, []string{"picked " + tc.want + "!"}) {
				t.Errorf("texts = %v, want [picked %s!]", got, tc.want)
			}
			if r := stopReason(t, resp); r != "end_turn" {
				t.Errorf("stopReason = %q", r)
			}
		})
	}
}

// cancelScript has two tool calls (t2 completed), then asks permission for t1.
func cancelScript(onCancel string) fakeagent.Script {
	return fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.ToolCall("t1", "ls", "execute")),
			fakeagent.Say(fakeagent.ToolCall("t2", "cat", "read")),
			fakeagent.Say(fakeagent.ToolUpdate("t2", "completed")),
			fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
			fakeagent.Say(fakeagent.Text("not reached")),
		},
		OnCancel: onCancel,
	}}}
}

// startCancelled prompts, waits for the permission request and sends session/cancel.
func startCancelled(t *testing.T, onCancel string) (c *client, a *fakeagent.Agent, pid string, perm wire) {
	c, a = inProcess(t, cancelScript(onCancel))
	sid := c.handshake()
	pid = c.prompt(sid, "go")
	perm, _ = c.until(isMethod("session/request_permission"))
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	return c, a, pid, perm
}

var cancelledOutcome = map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}

func TestOnCancelAnswer(t *testing.T) {
	for _, mode := range []string{"", "answer", "cancel_request"} {
		t.Run("mode="+mode, func(t *testing.T) {
			c, a, pid, perm := startCancelled(t, mode)
			if mode == "cancel_request" {
				m := c.next()
				if m.Method != "$/cancel_request" {
					t.Fatalf("got %s, want $/cancel_request", m.line)
				}
				jsonEqual(t, m.Params, `{"requestId":0}`)
			}
			m := c.next()
			jsonEqual(t, m.Params, `{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}}`)
			if resp := c.next(); !resp.isResponse(pid) || stopReason(t, resp) != "cancelled" {
				t.Errorf("got %s, want stopReason cancelled", resp.line)
			}
			// A late permission answer is just recorded.
			c.respond(perm.ID, cancelledOutcome)
			c.call("initialize", map[string]any{})
			rec := a.Received()
			if late := rec[len(rec)-2]; late.Method != "" || string(late.ID) != "0" {
				t.Errorf("late answer recorded as %+v", late)
			}
		})
	}
}

func TestOnCancelOtherAnswers(t *testing.T) {
	for _, mode := range []string{"error", "end_turn"} {
		t.Run(mode, func(t *testing.T) {
			c, _, pid, _ := startCancelled(t, mode)
			resp := c.next()
			if !resp.isResponse(pid) {
				t.Fatalf("got %s, want the prompt's answer", resp.line)
			}
			if mode == "error" {
				if resp.Error == nil || resp.Error.Code != -32603 || resp.Error.Message != "aborted" {
					t.Errorf("got %s, want error -32603 aborted", resp.line)
				}
				return
			}
			if r := stopReason(t, resp); r != "end_turn" {
				t.Errorf("stopReason = %q, want end_turn", r)
			}
		})
	}
}

func TestOnCancelAwaitPermission(t *testing.T) {
	c, _, pid, perm := startCancelled(t, "await_permission")
	// The turn waits for the permission answer: a probe is answered with nothing before it.
	if _, before := c.call("initialize", map[string]any{}); len(before) != 0 {
		t.Fatalf("agent sent %v before the permission was answered", before)
	}
	c.respond(perm.ID, cancelledOutcome)
	resp := c.next()
	if !resp.isResponse(pid) || stopReason(t, resp) != "cancelled" {
		t.Errorf("got %s, want stopReason cancelled", resp.line)
	}
}

func TestOnCancelIgnore(t *testing.T) {
	c, _, _, perm := startCancelled(t, "ignore")
	c.respond(perm.ID, cancelledOutcome)
	// The agent keeps answering other requests but never the prompt; cleanup's EOF ends it.
	resp, before := c.call("session/set_config_option", map[string]any{"sessionId": "s1"})
	if len(before) != 0 || resp.Result == nil {
		t.Errorf("got %v then %s", before, resp.line)
	}
}

// TestNoLeak plays a hanging turn with open requests inside a synctest bubble: once the
// client closes both pipes, every goroutine the agent started must have ended.
func TestNoLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _, _, _ := startCancelled(t, "ignore")
		c.call("initialize", map[string]any{})
	})
}

func TestWaitCancel(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("working")),
		{WaitCancel: true},
	}}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	if m := c.next(); m.text() != "working" {
		t.Fatalf("got %s", m.line)
	}
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	resp := c.next()
	if !resp.isResponse(pid) || stopReason(t, resp) != "cancelled" {
		t.Errorf("got %s, want stopReason cancelled", resp.line)
	}
}

// A Run step runs a real command as the agent's own tool and reports it as
// a tool call; a cancel kills it.
func TestRun(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}},
		{Run: []string{"sleep", "100"}},
	}}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	var got []map[string]any
	for len(got) < 3 {
		got = append(got, c.next().update())
	}
	if got[0]["sessionUpdate"] != "tool_call" || got[0]["kind"] != "execute" || got[0]["status"] != "in_progress" || got[0]["title"] != "sh -c echo out; echo err >&2; exit 3" {
		t.Errorf("first update %v, want an execute tool_call in progress", got[0])
	}
	content, _ := got[1]["content"].([]any)
	if got[1]["status"] != "failed" || len(content) != 1 || !strings.Contains(fmt.Sprint(content[0]), "out\nerr\n") {
		t.Errorf("second update %v, want failed with the combined output", got[1])
	}
	if got[2]["title"] != "sleep 100" {
		t.Fatalf("third update %v, want the second command starting", got[2])
	}
	c.notify("session/cancel", map[string]any{"sessionId": sid})
	m, _ := c.until(func(m wire) bool { return m.isResponse(pid) })
	if stopReason(t, m) != "cancelled" {
		t.Errorf("got %s, want stopReason cancelled", m.line)
	}
}

func TestStringIDsAndWaitAll(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{StringIDs: true, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Permission: fakeagent.PermissionParams("a", "A", "edit"), NoWait: true},
		{Permission: fakeagent.PermissionParams("b", "B", "edit"), NoWait: true},
		{WaitAll: true},
		fakeagent.Say(fakeagent.Text("{{answer}}")),
	}}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	first, second := c.next(), c.next()
	if string(first.ID) != `"req-0"` || string(second.ID) != `"req-1"` {
		t.Fatalf("request ids %s, %s; want \"req-0\", \"req-1\"", first.ID, second.ID)
	}
	selected := func(opt string) any {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": opt}}
	}
	c.respond(second.ID, selected("reject"))
	c.respond(first.ID, selected("allow"))
	resp, before := c.until(func(m wire) bool { return m.isResponse(pid) })
	if got := texts(before); !reflect.DeepEqual(got, []string{"allow"}) {
		t.Errorf("texts = %v, want the last answer [allow]", got)
	}
	stopReason(t, resp)
}

func TestRequestAndCancelRequest(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/read_text_file", Params: json.RawMessage(`{"path":"/x"}`)}, NoWait: true},
		{CancelRequest: true},
		{Notify: &fakeagent.Call{Method: "_vendor/ping", Params: json.RawMessage(`{"n":1}`)}},
	}}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	req := c.next()
	if req.Method != "fs/read_text_file" || string(req.ID) != "0" {
		t.Fatalf("got %s", req.line)
	}
	jsonEqual(t, req.Params, `{"sessionId":"s1","path":"/x"}`)
	cr := c.next()
	if cr.Method != "$/cancel_request" {
		t.Fatalf("got %s, want $/cancel_request", cr.line)
	}
	jsonEqual(t, cr.Params, `{"requestId":0}`)
	c.respondError(req.ID, -32800, "Request cancelled")
	if n := c.next(); n.Method != "_vendor/ping" || n.ID != nil {
		t.Errorf("got %s, want the _vendor/ping notification", n.line)
	}
	if resp := c.next(); !resp.isResponse(pid) {
		t.Errorf("got %s, want the prompt's answer", resp.line)
	}
}

func TestUpdatesBulk(t *testing.T) {
	const n = 1000
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps:      []fakeagent.Step{{Updates: n, UpdatesNumbered: true}, {Updates: 2}},
		StopReason: "max_tokens",
	}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	resp, before := c.until(func(m wire) bool { return m.isResponse(pid) })
	got := texts(before)
	if len(got) != n+2 {
		t.Fatalf("got %d updates before the answer, want %d", len(got), n+2)
	}
	for i := 0; i < n; i++ {
		if got[i] != strconv.Itoa(i) {
			t.Fatalf("update %d has text %q", i, got[i])
		}
	}
	if got[n] != "x" || got[n+1] != "x" {
		t.Errorf("unnumbered updates = %q", got[n:])
	}
	if r := stopReason(t, resp); r != "max_tokens" {
		t.Errorf("stopReason = %q", r)
	}
}

func TestRawAndHugeLine(t *testing.T) {
	const huge = 1<<20 + 17
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Raw: "\x1b[1mbanner\x1b[0m"},
		{Raw: `{"id":0,"result":{}}`},
		{HugeLine: huge},
		fakeagent.Say(fakeagent.Text("end")),
	}}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	if l := c.nextLine(); l != "\x1b[1mbanner\x1b[0m" {
		t.Errorf("first line %q", l)
	}
	if l := c.nextLine(); l != `{"id":0,"result":{}}` {
		t.Errorf("second line %q", l)
	}
	big := c.next()
	if text := big.text(); len(big.line) != huge || len(text) < huge-200 {
		t.Errorf("huge line is %d bytes with %d of text, want %d", len(big.line), len(text), huge)
	}
	resp, before := c.until(func(m wire) bool { return m.isResponse(pid) })
	if got := texts(before); !reflect.DeepEqual(got, []string{"end"}) {
		t.Errorf("texts = %v", got)
	}
	stopReason(t, resp)
}

func TestAfterLateUpdates(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("in turn"))},
		After: []fakeagent.Step{fakeagent.Say(fakeagent.Text("late"))},
	}}})
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	if m := c.next(); m.text() != "in turn" {
		t.Fatalf("got %s", m.line)
	}
	if m := c.next(); !m.isResponse(pid) {
		t.Fatalf("got %s, want the prompt's answer", m.line)
	}
	if m := c.next(); m.text() != "late" {
		t.Errorf("got %s, want the late update", m.line)
	}
}

func TestTurnsRepeatLast(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{Turns: []fakeagent.Turn{
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("one"))}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("two"))}, StopReason: "refusal"},
	}})
	sid := c.handshake()
	for _, want := range []string{"one", "two", "two"} {
		pid := c.prompt(sid, "go")
		_, before := c.until(func(m wire) bool { return m.isResponse(pid) })
		if got := texts(before); !reflect.DeepEqual(got, []string{want}) {
			t.Errorf("texts = %v, want [%s]", got, want)
		}
	}
}

func TestRequireAuth(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Script{
		RequireAuth: true,
		AuthMethods: json.RawMessage(`[{"id":"login","name":"Log in"}]`),
	})
	resp, _ := c.call("initialize", map[string]any{"protocolVersion": 1})
	var init struct {
		AuthMethods json.RawMessage `json:"authMethods"`
	}
	_ = json.Unmarshal(resp.Result, &init)
	jsonEqual(t, init.AuthMethods, `[{"id":"login","name":"Log in"}]`)

	newSession := map[string]any{"cwd": "/", "mcpServers": []any{}}
	resp, _ = c.call("session/new", newSession)
	if resp.Error == nil || resp.Error.Code != -32000 || resp.Error.Message != "Authentication required" {
		t.Fatalf("session/new before authenticate answered %s", resp.line)
	}
	resp, _ = c.call("authenticate", map[string]any{"methodId": "login"})
	jsonEqual(t, resp.Result, `{}`)
	resp, _ = c.call("session/new", newSession)
	jsonEqual(t, resp.Result, `{"sessionId":"s1"}`)
}

func TestDemo(t *testing.T) {
	c, _ := inProcess(t, fakeagent.Demo())
	sid := c.handshake()
	pid := c.prompt(sid, "go")
	perm, before := c.until(isMethod("session/request_permission"))
	if len(before) != 2 {
		t.Fatalf("before the permission: %v", before)
	}
	c.respond(perm.ID, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "reject"}})
	resp, before := c.until(func(m wire) bool { return m.isResponse(pid) })
	var kinds []any
	for _, m := range before {
		kinds = append(kinds, m.update()["sessionUpdate"])
	}
	if want := []any{"tool_call_update", "plan", "agent_message_chunk"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("updates after the permission: %v, want %v", kinds, want)
	}
	if got := texts(before); !reflect.DeepEqual(got, []string{"picked reject"}) {
		t.Errorf("texts = %v", got)
	}
	stopReason(t, resp)
}

func TestScriptRoundTrip(t *testing.T) {
	s := fakeagent.Demo()
	s.Turns = append(s.Turns, fakeagent.Turn{
		Steps:    []fakeagent.Step{{Exit: new(3)}, {Request: &fakeagent.Call{Method: "m"}, NoWait: true}},
		OnCancel: "ignore",
	})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back fakeagent.Script
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, back) {
		t.Errorf("round trip changed the script:\n%+v\n%+v", s, back)
	}
}

func TestWaitReceived(t *testing.T) {
	c, a := inProcess(t, fakeagent.Script{})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	got := make(chan fakeagent.Message, 1)
	go func() {
		m, _ := a.WaitReceived(ctx, "x/hello")
		got <- m
	}()
	c.notify("x/hello", map[string]any{"n": 1})
	if m := <-got; m.Method != "x/hello" {
		t.Errorf("WaitReceived returned %+v", m)
	} else {
		jsonEqual(t, m.Params, `{"n":1}`)
	}
	short, cancelShort := context.WithCancel(context.Background())
	cancelShort()
	if _, err := a.WaitReceived(short, "never"); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitReceived with a done context returned %v", err)
	}
}

func TestServeEndings(t *testing.T) {
	t.Run("exit step", func(t *testing.T) {
		var stderr strings.Builder
		a := fakeagent.New(fakeagent.Script{
			StderrLines: []string{"starting"},
			Turns:       []fakeagent.Turn{{Steps: []fakeagent.Step{{Stderr: "bye"}, {Exit: new(4)}, fakeagent.Say(fakeagent.Text("never"))}}},
		})
		a.Stderr = &stderr
		srv := serve(t, context.Background(), a)
		defer srv.close()
		srv.c.prompt(srv.c.handshake(), "go")
		if err := srv.wait(t); !errors.Is(err, fakeagent.ErrExited) || !strings.Contains(err.Error(), "4") {
			t.Errorf("Serve returned %v, want ErrExited with code 4", err)
		}
		if stderr.String() != "starting\nbye\n" {
			t.Errorf("stderr = %q", stderr.String())
		}
	})
	t.Run("context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := fakeagent.New(fakeagent.Script{})
		srv := serve(t, ctx, a)
		defer srv.close()
		srv.c.call("initialize", map[string]any{})
		cancel()
		if err := srv.wait(t); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
		if err := a.Serve(context.Background(), strings.NewReader(""), io.Discard); err == nil {
			t.Error("a second Serve succeeded")
		}
	})
	t.Run("invalid script", func(t *testing.T) {
		bad := []fakeagent.Script{
			{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{}}}}},
			{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Raw: "x", Stderr: "y"}}}}},
			{Turns: []fakeagent.Turn{{OnCancel: "explode"}}},
			{NewSessionResult: json.RawMessage(`[]`)},
			{BeforeSessionNew: []fakeagent.Step{{Update: json.RawMessage(`{bad`)}}},
			{BeforeAuthenticate: []fakeagent.Step{{Raw: "x", ForRequest: true}}},
		}
		for i, s := range bad {
			if err := fakeagent.New(s).Serve(context.Background(), strings.NewReader(""), io.Discard); err == nil {
				t.Errorf("script %d: Serve accepted it", i)
			}
		}
	})
}

func TestIgnoreEOF(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := fakeagent.New(fakeagent.Script{IgnoreEOF: true, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("first")), {Updates: 500},
	}}}})
	srv := serve(t, ctx, a)
	defer srv.close()
	c := srv.c
	pid := c.prompt(c.handshake(), "go")
	c.next() // the turn is running
	srv.stdin.Close()
	// After EOF the turn still plays to the end.
	_, before := c.until(func(m wire) bool { return m.isResponse(pid) })
	if len(before) != 500 {
		t.Errorf("got %d updates after EOF, want 500", len(before))
	}
	cancel()
	if err := srv.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve returned %v, want context.Canceled (it must not end at EOF)", err)
	}
}

// A StopReading step wedges the agent the same way on every run: the read
// in flight takes in the client's next write, never handled, and the write
// after it blocks. (The bubble makes "blocks" exact.)
func TestStopReadingTakesInTheReadInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := fakeagent.New(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}}}}})
		srv := serve(t, ctx, a)
		c := srv.c
		sid := c.handshake()
		pid := c.prompt(sid, "wedge")
		c.until(func(m wire) bool { return m.isResponse(pid) })
		c.request("session/set_mode", map[string]any{"sessionId": sid, "modeId": "taken in"})
		blocked := make(chan error, 1)
		go func() {
			_, err := io.WriteString(c.w, `{"jsonrpc":"2.0","method":"never/read"}`+"\n")
			blocked <- err
		}()
		synctest.Wait()
		select {
		case err := <-blocked:
			t.Fatalf("a second write after the wedge returned (%v)", err)
		default:
		}
		for _, m := range a.Received() {
			if m.Method == "session/set_mode" {
				t.Error("the line taken in after the wedge was handled")
			}
		}
		cancel()
		if err := srv.wait(t); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
		srv.close()
		<-blocked // the closed pipe fails it
	})
}

// A second StopReading is a no-op: the agent is wedged for good already.
func TestStopReadingTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		a := fakeagent.New(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			{StopReading: true}, {Delay: "1s"}, {StopReading: true}}}}})
		srv := serve(t, ctx, a)
		c := srv.c
		sid := c.handshake()
		pid := c.prompt(sid, "wedge")
		synctest.Wait()
		c.request("session/set_mode", map[string]any{"sessionId": sid, "modeId": "taken in"})
		c.until(func(m wire) bool { return m.isResponse(pid) }) // fails the test after timeout
		cancel()
		if err := srv.wait(t); !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
		srv.close()
	})
}

// startProcess runs the test binary as a fake agent playing s.
func startProcess(t *testing.T, s fakeagent.Script) (*exec.Cmd, *client, io.WriteCloser, *strings.Builder) {
	t.Helper()
	path, args, env, err := fakeagent.Command(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	c, stdin, stderr := connectProcess(t, cmd)
	return cmd, c, stdin, stderr
}

// connectProcess starts cmd with a test client on its stdin and stdout and
// stderr kept; cleanup stops the client and kills the process.
func connectProcess(t *testing.T, cmd *exec.Cmd) (*client, io.WriteCloser, *strings.Builder) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(strings.Builder)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, stdin, stdout)
	t.Cleanup(func() {
		close(c.stop)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c, stdin, stderr
}

func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("wait: %v", err)
		}
		return 0
	case <-time.After(timeout):
		t.Fatal("the agent process did not exit")
		return -1
	}
}

func TestSubprocessExitAndRecord(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	cmd, c, _, stderr := startProcess(t, fakeagent.Script{
		RecordFile:  record,
		StderrLines: []string{"hello from the agent"},
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text("bye")), {Exit: new(3)},
		}}},
	})
	sid := c.handshake()
	c.prompt(sid, "go")
	if m := c.next(); m.text() != "bye" {
		t.Fatalf("got %s", m.line)
	}
	if code := exitCode(t, cmd); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if !strings.Contains(stderr.String(), "hello from the agent\n") {
		t.Errorf("stderr = %q", stderr.String())
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, m := range msgs {
		methods = append(methods, m.Method)
	}
	if want := []string{"initialize", "session/new", "session/prompt"}; !reflect.DeepEqual(methods, want) {
		t.Errorf("recorded methods %v, want %v", methods, want)
	}
	jsonEqual(t, msgs[2].Params, fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"go"}]}`, sid))
}

func TestSubprocessEOFExitsZero(t *testing.T) {
	cmd, c, stdin, _ := startProcess(t, fakeagent.Script{})
	c.handshake()
	stdin.Close()
	if code := exitCode(t, cmd); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
}

func TestCommandInsideAgentRefused(t *testing.T) {
	t.Setenv("ACPHOST_FAKEAGENT_MODE", "agent")
	if _, _, _, err := fakeagent.Command(fakeagent.Script{}); err == nil {
		t.Error("Command succeeded inside an agent process")
	}
}

// A ForRequest step scopes its request to the client's request being
// handled: during authenticate and session/new the elicitation names that
// request's id (and no session), the request is answered only after the
// client answered the elicitation, and the answer is recorded.
func TestElicitForRequest(t *testing.T) {
	form := fakeagent.FormElicitation("Workspace?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`))
	c, a := inProcess(t, fakeagent.Script{
		BeforeAuthenticate: []fakeagent.Step{fakeagent.ElicitForRequest(form)},
		BeforeSessionNew:   []fakeagent.Step{fakeagent.ElicitForRequest(fakeagent.URLElicitation("e1", "https://example.com/", "Log in"))},
	})
	c.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	for _, step := range []struct{ method, params string }{{"authenticate", `{"methodId":"x"}`}, {"session/new", `{"cwd":"/tmp","mcpServers":[]}`}} {
		id := c.request(step.method, json.RawMessage(step.params))
		elicit, _ := c.until(isMethod("elicitation/create"))
		var p map[string]json.RawMessage
		if err := json.Unmarshal(elicit.Params, &p); err != nil {
			t.Fatal(err)
		}
		if got := string(p["requestId"]); got != id {
			t.Errorf("%s: requestId %s, want %s", step.method, got, id)
		}
		if _, ok := p["sessionId"]; ok {
			t.Errorf("%s: a request-scoped elicitation names a session: %s", step.method, elicit.Params)
		}
		c.respond(elicit.ID, map[string]any{"action": "accept", "content": map[string]any{"name": step.method}})
		c.until(func(m wire) bool { return m.isResponse(id) })
	}
	var answers []string
	for _, m := range a.Received() {
		if m.Method == "" && strings.Contains(string(m.Result), "accept") {
			answers = append(answers, string(m.Result))
		}
	}
	want := []string{`{"action":"accept","content":{"name":"authenticate"}}`, `{"action":"accept","content":{"name":"session/new"}}`}
	if !reflect.DeepEqual(answers, want) {
		t.Errorf("recorded answers %q, want %q", answers, want)
	}
}

// The fake agent checks a system prompt as a conforming agent does: only
// when advertised, override only with its sub-capability, text blocks
// only and never empty; it keeps what each session was opened with.
func TestSystemPromptCheckedAndKept(t *testing.T) {
	text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	sp := func(mode string, content ...any) map[string]any {
		if content == nil {
			content = []any{}
		}
		return map[string]any{"cwd": "/", "mcpServers": []any{}, "systemPrompt": map[string]any{"mode": mode, "content": content}}
	}
	c, _ := inProcess(t, fakeagent.Script{})
	c.handshake()
	if resp, _ := c.call("session/new", sp("append", text("x"))); resp.Error == nil || resp.Error.Code != -32602 {
		t.Errorf("not advertised: session/new answered %s, want -32602", resp.line)
	}

	c, a := inProcess(t, fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true,"sessionCapabilities":{"systemPrompt":{}}}`)})
	c.handshake()
	for _, bad := range []map[string]any{
		sp("override", text("x")),
		sp("prepend", text("x")),
		sp("append"),
		sp("append", text("")),
		sp("append", map[string]any{"type": "image", "data": "AAAA", "mimeType": "image/png"}),
	} {
		if resp, _ := c.call("session/new", bad); resp.Error == nil || resp.Error.Code != -32602 {
			t.Errorf("session/new %v answered %s, want -32602", bad, resp.line)
		}
	}
	resp, _ := c.call("session/new", sp("append", text("one"), text("two")))
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || r.SessionID == "" {
		t.Fatalf("session/new answered %s", resp.line)
	}
	if got, ok := a.SystemPrompt(r.SessionID); !ok || got != (fakeagent.SystemPrompt{Mode: "append", Text: "one\n\ntwo"}) {
		t.Errorf("SystemPrompt(%s) = %+v, %v", r.SessionID, got, ok)
	}
	resp, _ = c.call("session/load", map[string]any{"sessionId": r.SessionID, "cwd": "/", "mcpServers": []any{}})
	if resp.Error != nil {
		t.Fatalf("session/load answered %s", resp.line)
	}
	if got, ok := a.SystemPrompt(r.SessionID); ok {
		t.Errorf("reopened without one, the session still has %+v", got)
	}
}

// TestTurnNumber: {{turn}} in an update and a permission request is the
// turn's number in its session, counting the prompts of a history an
// earlier process kept, so that a continued session's tool call ids
// differ from its history's.
func TestTurnNumber(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "history.ndjson")
	script := fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"loadSession":true}`),
		HistoryFile:       hist,
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.ToolCall("t{{turn}}", "ls", "execute")),
			fakeagent.Ask(fakeagent.PermissionParams("t{{turn}}", "ls", "execute")),
		}}},
	}
	ids := func(c *client, sid string) (update, perm string) {
		t.Helper()
		pid := c.prompt(sid, "go")
		req, before := c.until(isMethod("session/request_permission"))
		var p struct {
			ToolCall struct {
				ID string `json:"toolCallId"`
			} `json:"toolCall"`
		}
		json.Unmarshal(req.Params, &p)
		c.respond(req.ID, cancelledOutcome)
		c.until(func(m wire) bool { return m.isResponse(pid) })
		if len(before) != 1 {
			t.Fatalf("before the permission request: %v", before)
		}
		return fmt.Sprint(before[0].update()["toolCallId"]), p.ToolCall.ID
	}
	c, _ := inProcess(t, script)
	sid := c.handshake()
	for _, want := range []string{"t1", "t2"} {
		if u, p := ids(c, sid); u != want || p != want {
			t.Errorf("turn ids: update %q, permission %q; want %q", u, p, want)
		}
	}
	other := c.handshake()
	if u, _ := ids(c, other); u != "t1" {
		t.Errorf("another session's first turn: %q, want t1", u)
	}

	// A later process continues the session from the history file.
	c2, _ := inProcess(t, script)
	c2.call("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}})
	if resp, _ := c2.call("session/load", map[string]any{"sessionId": sid, "cwd": "/tmp", "mcpServers": []any{}}); resp.Error != nil {
		t.Fatalf("session/load answered %s", resp.line)
	}
	if u, p := ids(c2, sid); u != "t3" || p != "t3" {
		t.Errorf("continued session: update %q, permission %q; want t3", u, p)
	}
}
