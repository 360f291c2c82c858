//go:build unix

package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/fakeagent"
)

// acphost cancel, from another shell, stops the turn a script's acphost
// runs; acphost sessions shows the turn running, then the session let go.
func TestCancelFromAnotherShell(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	script := &fakeagent.Script{SessionID: "long-1", Turns: []fakeagent.Turn{
		{Prompt: "slow", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Prompt: "next", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("next ran"))}},
	}}
	cmd := exec.Command(binPath, "-p", "slow", "-p", "next")
	cmd.Env = append(env(t, script), extra...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	// A turn is running once the store says so.
	waitFor(t, "the store to show the running turn", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && !recs[0].TurnSince.IsZero() && recs[0].PID == cmd.Process.Pid
	})
	r := runIn(t, dir, extra, nil, "", "sessions")
	if !strings.Contains(r.stdout, "turn running") || !strings.Contains(r.stdout, "STATE") {
		t.Errorf("acphost sessions:\n%s", r.stdout)
	}
	r = runIn(t, dir, extra, nil, "", "cancel")
	if r.code != 0 || !strings.Contains(r.stdout, "cancelling the turn of session long-1") {
		t.Fatalf("acphost cancel: %d %s %s", r.code, r.stdout, r.stderr)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("acphost: %v\n%s\n%s", err, out.String(), errb.String())
		}
	case <-time.After(readTimeout):
		t.Fatalf("acphost did not end after the cancel:\n%s\n%s", out.String(), errb.String())
	}
	if s := out.String(); !strings.Contains(s, "⨯ cancelled") || !strings.Contains(s, "next ran") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", s, errb.String())
	}
	r = runIn(t, dir, extra, nil, "", "cancel", "long-1")
	if r.code != 1 || !strings.Contains(r.stderr, "no acphost process has session long-1 open") {
		t.Errorf("cancel after the exit: %d %s", r.code, r.stderr)
	}
}
