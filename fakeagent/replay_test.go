package fakeagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/fakeagent"
)

// Recorded agent → host messages, written back verbatim (with the host's ids in responses).
const (
	recInitResult = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}}`
	recNewResult  = `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"sess-1"}}`
	recHello      = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}}`
	recJunk       = `junk on stdout`
	recTool1      = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute","status":"pending"}}}`
	recTool2      = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"tool_call","toolCallId":"t2","title":"rm","kind":"delete","status":"pending"}}}`
	recPerm0      = `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"sess-1","toolCall":{"toolCallId":"t1"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`
	recPerm1      = `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"sess-1","toolCall":{"toolCallId":"t2"},"options":[{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}`
	recDone       = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}}}`
)

// ent renders one recording line: msg is a JSON-RPC object for send and recv, text for
// stderr and skip.
func ent(gen int, dir, msg string) string {
	if dir == "stderr" || dir == "skip" {
		b, _ := json.Marshal(msg)
		return fmt.Sprintf(`{"t":"2026-11-29T21:00:00.123456789Z","gen":%d,"dir":%q,"line":%s}`, gen, dir, b)
	}
	return fmt.Sprintf(`{"t":"2026-11-29T21:00:00.123456789Z","gen":%d,"dir":%q,"msg":%s}`, gen, dir, msg)
}

func send(msg string) string { return ent(1, "send", msg) }
func recv(msg string) string { return ent(1, "recv", msg) }

// promptPrefix is a recorded handshake and the start of a turn up to two open permission
// requests.
var promptPrefix = []string{
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`),
	ent(1, "stderr", "agent starting"),
	recv(recInitResult),
	send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/recorded","mcpServers":[]}}`),
	recv(recNewResult),
	send(`{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"recorded"}]}}`),
	recv(recHello),
	ent(1, "skip", recJunk),
	recv(recTool1),
	recv(recTool2),
	recv(recPerm0),
	recv(recPerm1),
}

// sessionRecording is promptPrefix, both answers, the end of the turn, and a generation 2
// (the agent restarted) that must not be played by default.
func sessionRecording() string {
	return strings.Join(append(append([]string{}, promptPrefix...),
		send(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`),
		send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`),
		recv(recDone),
		recv(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}`),
		"",
		ent(2, "send", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
		ent(2, "recv", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentInfo":{"name":"gen2"}}}`),
	), "\n") + "\n"
}

func parse(t *testing.T, text string) *fakeagent.Recording {
	t.Helper()
	rec, err := fakeagent.ParseRecording(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func serveReplay(t *testing.T, ctx context.Context, r *fakeagent.Replay) served {
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	result := make(chan error, 1)
	go func() { result <- r.Serve(ctx, toAgentR, fromAgentW) }()
	return served{newClient(t, toAgentW, fromAgentR), result, toAgentW, fromAgentR}
}

// finish closes the host's output and returns Serve's result.
func (s served) finish(t *testing.T) error {
	t.Helper()
	s.stdin.Close()
	return s.wait(t)
}

// expectLines reads len(want) lines and checks them byte for byte.
func (c *client) expectLines(want ...string) {
	c.t.Helper()
	for i, w := range want {
		if got := c.nextLine(); got != w {
			c.t.Fatalf("line %d:\ngot  %s\nwant %s", i, got, w)
		}
	}
}

// replayHandshake plays the recorded handshake with the host's own ids and params, and
// starts the prompt, reading up to both permission requests. It returns the prompt's id.
func replayHandshake(c *client) (pid string) {
	c.t.Helper()
	id := c.request("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"fs": map[string]any{}}})
	c.expectLines(strings.Replace(recInitResult, `"id":0`, `"id":`+id, 1))
	id = c.request("session/new", map[string]any{"cwd": "/live", "mcpServers": []any{}})
	c.expectLines(strings.Replace(recNewResult, `"id":1`, `"id":`+id, 1))
	pid = c.prompt("sess-1", "live")
	c.expectLines(recHello, recJunk, recTool1, recTool2, recPerm0, recPerm1)
	return pid
}

func TestReplaySession(t *testing.T) {
	r := fakeagent.NewReplay(parse(t, sessionRecording()), 0)
	var stderr strings.Builder
	r.Stderr = &stderr
	srv := serveReplay(t, context.Background(), r)
	defer srv.close()
	c := srv.c

	pid := replayHandshake(c)
	c.respond(json.RawMessage(`0`), map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow"}})
	c.respond(json.RawMessage(`1`), map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}) // outcomes are not compared
	c.expectLines(recDone, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"end_turn"}}`)

	if err := srv.finish(t); err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
	if stderr.String() != "agent starting\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestReplayGeneration(t *testing.T) {
	srv := serveReplay(t, context.Background(), fakeagent.NewReplay(parse(t, sessionRecording()), 2))
	defer srv.close()
	c := srv.c
	resp, _ := c.call("initialize", map[string]any{})
	jsonEqual(t, resp.Result, `{"protocolVersion":1,"agentInfo":{"name":"gen2"}}`)
	if err := srv.finish(t); err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
}

// TestReplayOutOfOrder answers the permission requests in the reverse order and sends a
// session/cancel that was recorded after them first. It runs in a synctest bubble, so
// that "nothing is written until the first recorded answer arrives" can be checked
// without sleeping.
func TestReplayOutOfOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := strings.Join(append(append([]string{}, promptPrefix...),
			send(`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`),
			recv(recDone),
			send(`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`),
			send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"sess-1"}}`),
			recv(`{"jsonrpc":"2.0","id":2,"result":{"stopReason":"cancelled"}}`),
		), "\n")
		srv := serveReplay(t, context.Background(), fakeagent.NewReplay(parse(t, text), 1))
		defer srv.close()
		c := srv.c
		pid := replayHandshake(c)

		c.notify("session/cancel", map[string]any{"sessionId": "sess-1"})
		c.respond(json.RawMessage(`1`), cancelledOutcome)
		synctest.Wait()
		if n := len(c.lines); n != 0 {
			t.Fatalf("the replay wrote %d lines (first %s) before the first recorded answer arrived", n, <-c.lines)
		}
		c.respond(json.RawMessage(`0`), map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow"}})
		c.expectLines(recDone, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"cancelled"}}`)
		if err := srv.finish(t); err != nil {
			t.Errorf("Serve returned %v, want nil", err)
		}
	})
}

func TestReplayDiverged(t *testing.T) {
	t.Run("unexpected request", func(t *testing.T) {
		r := fakeagent.NewReplay(parse(t, sessionRecording()), 0)
		var stderr strings.Builder
		r.Stderr = &stderr
		srv := serveReplay(t, context.Background(), r)
		defer srv.close()
		c := srv.c
		pid := replayHandshake(c)

		resp, _ := c.call("x/unknown", map[string]any{})
		if resp.Error == nil || resp.Error.Code != -32603 || resp.Error.Message != "replay diverged" {
			t.Errorf("x/unknown answered %s, want -32603 replay diverged", resp.line)
		}
		c.notify("x/ignored", map[string]any{})
		c.respond(json.RawMessage(`"nobody asked"`), map[string]any{})
		// The replay carries on.
		c.respond(json.RawMessage(`0`), map[string]any{})
		c.respond(json.RawMessage(`1`), map[string]any{})
		c.expectLines(recDone, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"end_turn"}}`)
		// After the end of the recording every request is answered with the error.
		resp, _ = c.call("session/prompt", map[string]any{"sessionId": "sess-1", "prompt": []any{}})
		if resp.Error == nil || resp.Error.Code != -32603 {
			t.Errorf("a prompt after the end answered %s, want -32603", resp.line)
		}

		err := srv.finish(t)
		if !errors.Is(err, fakeagent.ErrReplayDiverged) {
			t.Fatalf("Serve returned %v, want ErrReplayDiverged", err)
		}
		for _, s := range []string{`"x/unknown"`, `"x/ignored"`, `response to id "nobody asked"`, `"session/prompt"`} {
			if !strings.Contains(err.Error(), s) || !strings.Contains(stderr.String(), s) {
				t.Errorf("error %q or stderr %q does not mention %s", err, stderr.String(), s)
			}
		}
	})
	t.Run("beyond lookahead", func(t *testing.T) {
		r := fakeagent.NewReplay(parse(t, sessionRecording()), 0)
		r.Lookahead = 1
		srv := serveReplay(t, context.Background(), r)
		defer srv.close()
		c := srv.c
		// session/new is recorded, but two host messages ahead of initialize.
		resp, _ := c.call("session/new", map[string]any{})
		if resp.Error == nil || resp.Error.Code != -32603 {
			t.Errorf("early session/new answered %s, want -32603", resp.line)
		}
		replayHandshake(c)
		if err := srv.finish(t); !errors.Is(err, fakeagent.ErrReplayDiverged) {
			t.Errorf("Serve returned %v, want ErrReplayDiverged", err)
		}
	})
	t.Run("input ends early", func(t *testing.T) {
		srv := serveReplay(t, context.Background(), fakeagent.NewReplay(parse(t, sessionRecording()), 0))
		defer srv.close()
		srv.c.call("initialize", map[string]any{})
		err := srv.finish(t)
		if !errors.Is(err, fakeagent.ErrReplayDiverged) || !strings.Contains(err.Error(), `4 recorded host messages not received, the next being request "session/new" (id 1)`) {
			t.Errorf("Serve returned %v", err)
		}
	})
}

// TestReplayCausalOrder plays a recording whose recorder logged two responses before the
// requests they answer, with string ids on the host side.
func TestReplayCausalOrder(t *testing.T) {
	text := strings.Join([]string{
		recv(`{"jsonrpc":"2.0","id":0,"result":{"ok":true}}`),
		send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`),
		send(`{"jsonrpc":"2.0","id":5,"result":{"content":"x"}}`),
		recv(`{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}`),
		recv(`{"jsonrpc":"2.0","method":"x/done"}`),
	}, "\n")
	srv := serveReplay(t, context.Background(), fakeagent.NewReplay(parse(t, text), 0))
	defer srv.close()
	c := srv.c
	c.writeLine(`{"jsonrpc":"2.0","id":"s-1","method":"initialize","params":{}}`)
	c.expectLines(`{"jsonrpc":"2.0","id":"s-1","result":{"ok":true}}`,
		`{"jsonrpc":"2.0","id":5,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}`)
	c.respond(json.RawMessage(`5`), map[string]any{"content": "y"})
	c.expectLines(`{"jsonrpc":"2.0","method":"x/done"}`)
	if err := srv.finish(t); err != nil {
		t.Errorf("Serve returned %v, want nil", err)
	}
}

func TestReplayServeEndings(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := fakeagent.NewReplay(parse(t, sessionRecording()), 0)
	srv := serveReplay(t, ctx, r)
	defer srv.close()
	srv.c.call("initialize", map[string]any{})
	cancel() // the replay is waiting for session/new
	if err := srv.wait(t); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve returned %v, want context.Canceled", err)
	}
	if err := r.Serve(context.Background(), strings.NewReader(""), io.Discard); err == nil {
		t.Error("a second Serve succeeded")
	}
	// An empty recording answers every request with the divergence error.
	srv2 := serveReplay(t, context.Background(), fakeagent.NewReplay(&fakeagent.Recording{}, 0))
	defer srv2.close()
	if resp, _ := srv2.c.call("initialize", map[string]any{}); resp.Error == nil || resp.Error.Code != -32603 {
		t.Errorf("initialize answered %s", resp.line)
	}
}

// TestReplayNoLeak checks in a synctest bubble that every goroutine the replay started
// ends once the host closes both pipes, here while the replay waits for an answer.
func TestReplayNoLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := serveReplay(t, context.Background(), fakeagent.NewReplay(parse(t, sessionRecording()), 0))
		replayHandshake(srv.c)
		srv.close()
		if err := srv.wait(t); !errors.Is(err, fakeagent.ErrReplayDiverged) {
			t.Errorf("Serve returned %v, want ErrReplayDiverged (answers missing)", err)
		}
	})
}

func TestParseRecording(t *testing.T) {
	rec := parse(t, "\n"+
		`{"t":"2026-11-29T21:00:00.123456789Z","gen":1,"dir":"send","msg":{"jsonrpc":"2.0","id":0,"method":"initialize"}}`+"\n"+
		"  \r\n"+
		`{"gen":1,"dir":"stderr","line":"warn"}`+"\r\n"+
		`{"gen":3,"dir":"future","line":"kept"}`+"\n"+
		`{"t":"2026-11-29T21:00:01Z","gen":1,"dir":"re`) // cut short
	want := []fakeagent.RecordEntry{
		{Time: time.Date(2026, 11, 29, 21, 0, 0, 123456789, time.UTC), Gen: 1, Dir: "send",
			Msg: json.RawMessage(`{"jsonrpc":"2.0","id":0,"method":"initialize"}`)},
		{Gen: 1, Dir: "stderr", Line: "warn"},
		{Gen: 3, Dir: "future", Line: "kept"},
	}
	if !reflect.DeepEqual(rec.Entries, want) {
		t.Errorf("entries = %+v\nwant %+v", rec.Entries, want)
	}

	for _, bad := range []struct{ text, want string }{
		{`{"gen":1,"dir":"stderr","line":"a"}` + "\nnot json\n" + `{"gen":1,"dir":"stderr","line":"b"}`, "line 2"},
		{`[1,2]` + "\n", "line 1: not a JSON object"},
		{`{"gen":1,"dir":"recv"}` + "\n", "line 1: recv entry without msg"},
		{`{"gen":1,"dir":"send","msg":null}`, "line 1: send entry without msg"},
		{`{"t":"yesterday","gen":1,"dir":"skip","line":"x"}` + "\n", "line 1"},
	} {
		if _, err := fakeagent.ParseRecording(strings.NewReader(bad.text)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseRecording(%q) = %v, want an error mentioning %q", bad.text, err, bad.want)
		}
	}
	if _, err := fakeagent.LoadRecording(filepath.Join(t.TempDir(), "missing.ndjson")); err == nil {
		t.Error("LoadRecording of a missing file succeeded")
	}
}

// startReplayProcess runs the test binary as a replay of the recording file.
func startReplayProcess(t *testing.T, path string, extraEnv ...string) (*exec.Cmd, *client, io.WriteCloser, *strings.Builder) {
	t.Helper()
	exe, args, env, err := fakeagent.ReplayCommand(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), env...), extraEnv...)
	cmd.Dir = t.TempDir() // the recording path must not depend on the working directory
	c, stdin, stderr := connectProcess(t, cmd)
	return cmd, c, stdin, stderr
}

func TestReplaySubprocess(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "session.ndjson"), []byte(sessionRecording()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	const path = "session.ndjson" // relative: ReplayCommand makes it absolute

	t.Run("whole session", func(t *testing.T) {
		cmd, c, stdin, stderr := startReplayProcess(t, path)
		pid := replayHandshake(c)
		c.respond(json.RawMessage(`1`), map[string]any{})
		c.respond(json.RawMessage(`0`), map[string]any{})
		c.expectLines(recDone, `{"jsonrpc":"2.0","id":`+pid+`,"result":{"stopReason":"end_turn"}}`)
		stdin.Close()
		if code := exitCode(t, cmd); code != 0 {
			t.Errorf("exit code %d, want 0; stderr %q", code, stderr.String())
		}
		if stderr.String() != "agent starting\n" {
			t.Errorf("stderr = %q", stderr.String())
		}
	})
	t.Run("generation 2", func(t *testing.T) {
		cmd, c, stdin, _ := startReplayProcess(t, path, "ACPHOST_FAKEAGENT_REPLAY_GEN=2")
		resp, _ := c.call("initialize", map[string]any{})
		jsonEqual(t, resp.Result, `{"protocolVersion":1,"agentInfo":{"name":"gen2"}}`)
		stdin.Close()
		if code := exitCode(t, cmd); code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
	})
	t.Run("diverged", func(t *testing.T) {
		cmd, c, stdin, stderr := startReplayProcess(t, path)
		c.call("initialize", map[string]any{})
		stdin.Close()
		if code := exitCode(t, cmd); code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if !strings.Contains(stderr.String(), "diverged") {
			t.Errorf("stderr = %q", stderr.String())
		}
	})
	t.Run("bad recording", func(t *testing.T) {
		if _, _, _, err := fakeagent.ReplayCommand(filepath.Join(dir, "missing.ndjson")); err == nil {
			t.Error("ReplayCommand accepted a missing recording")
		}
		t.Setenv("ACPHOST_FAKEAGENT_MODE", "replay")
		if _, _, _, err := fakeagent.ReplayCommand(path); err == nil {
			t.Error("ReplayCommand succeeded inside an agent process")
		}
	})
}
