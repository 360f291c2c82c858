//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// cursorLine is the pane's line the cursor is on, trailing blanks cut.
func (p *pane) cursorLine() string {
	p.t.Helper()
	y, err := strconv.Atoi(strings.TrimSpace(p.tmux("display-message", "-p", "#{cursor_y}")))
	if err != nil {
		p.t.Fatal(err)
	}
	out, _ := exec.Command("tmux", "-S", p.socket, "capture-pane", "-p").CombinedOutput()
	lines := strings.Split(string(out), "\n")
	if y >= len(lines) {
		return ""
	}
	return strings.TrimRight(lines[y], " ")
}

// waitLine waits until the cursor's line is want.
func (p *pane) waitLine(want string) {
	p.t.Helper()
	testutil.Until(p.t, readTimeout, func() (bool, string) {
		got := p.cursorLine()
		return got == strings.TrimRight(want, " "), fmt.Sprintf("the cursor's line is %q, never %q; screen:\n%s", got, want, p.screen())
	})
}

// Up recalls the prompt before, in this run and in the next one (the
// history is kept per agent in the state directory); Tab completes /mo
// to /mode and a mode id after it.
func TestTerminalHistoryAndTab(t *testing.T) {
	script := &fakeagent.Script{NewSessionResult: twoModes, Turns: []fakeagent.Turn{
		{Prompt: "hello", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hi there"))}},
	}}
	extra, _, stateDir := isolated(t)
	p := startPane(t, script, extra)
	p.waitLine("> ")
	p.typeLine("hello world")
	p.waitFor("✓ end_turn", 1)
	p.waitLine("> ")
	p.tmux("send-keys", "Up")
	p.waitLine("> hello world")
	p.tmux("send-keys", "Enter")
	p.waitFor("✓ end_turn", 2)

	p.tmux("send-keys", "-l", "/mo")
	p.tmux("send-keys", "Tab")
	p.waitLine("> /mode")
	p.tmux("send-keys", "-l", "re")
	p.tmux("send-keys", "Tab")
	p.waitLine("> /mode review")
	p.tmux("send-keys", "Enter")
	p.waitFor("mode: review", 1)
	p.tmux("send-keys", "-l", "/s")
	p.tmux("send-keys", "Tab")
	p.waitLine("> /sessions")
	p.tmux("send-keys", "C-u")
	p.typeLine("/quit")
	p.waitFor("[exited 0]", 1)

	b, err := os.ReadFile(filepath.Join(stateDir, "history", agents.Demo))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "hello world\n/mode review\n/quit\n"; got != want {
		t.Errorf("history file %q, want %q (the lines entered, a repeat once)", got, want)
	}

	p2 := startPane(t, script, extra)
	p2.waitLine("> ")
	p2.tmux("send-keys", "Up")
	p2.waitLine("> /quit")
	p2.tmux("send-keys", "Up")
	p2.waitLine("> /mode review")
	p2.tmux("send-keys", "Up")
	p2.waitLine("> hello world")
	p2.tmux("send-keys", "C-u")
	p2.tmux("send-keys", "C-d")
	p2.waitFor("[exited 0]", 1)
}

// While a turn streams, a prompt typed and entered is queued, and a line
// being typed stays whole below the output (the agent's text goes above
// it), across a Ctrl-C; once the turn ends it is the chat's next prompt.
func TestTerminalTypingWhileStreaming(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "stream", OnCancel: "continue", Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text("first line\nstreaming part")),
			{WaitCancel: true},
			fakeagent.Say(fakeagent.Text(" continued\nsecond line\n")),
			fakeagent.Say(fakeagent.Text("last words")),
		}},
		{Prompt: "after", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("after ran"))}},
		{Prompt: "typed words", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("typed ran"))}},
	}}
	extra, _, _ := isolated(t)
	p := startPane(t, script, extra)
	p.waitLine("> ")
	p.typeLine("stream")
	p.waitFor("streaming part", 1)
	p.typeLine("after")
	p.waitFor("queued (1): after", 1)
	p.tmux("send-keys", "-l", "typed words")
	p.waitLine("queue> typed words")
	p.tmux("send-keys", "C-c")
	p.waitFor("after ran", 1)
	p.waitLine("> typed words")
	s := p.screen()
	for _, want := range []string{"first line", "streaming part", " continued", "second line", "last words", "cancelling the turn", "› after"} {
		if !strings.Contains(s, want) {
			t.Errorf("screen lacks %q:\n%s", want, s)
		}
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "typed words") && strings.TrimRight(l, " ") != "> typed words" {
			t.Errorf("the typed line was mixed with output: %q\n%s", l, s)
		}
	}
	p.tmux("send-keys", "Enter")
	p.waitFor("typed ran", 1)
	p.waitLine("> ")
	p.tmux("send-keys", "C-c")
	p.waitFor("[exited 130]", 1)
}
