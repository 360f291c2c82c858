//go:build linux

package main

import (
	"os"
	"strings"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// An agent's process tree cannot drive the control socket of any chat of
// the user: a hostile agent — in a --permission plan chat (confined by the
// kernel layer where Landlock works), then in a --permission allow one —
// reads the sessions from the store and asks every control socket, its
// own chat's and the person's other chat's, to cancel and to queue a
// prompt, over the raw protocol and with acphost cancel and --no-wait.
// Every attempt is refused: the other chat's turn runs on, nothing is
// queued in it; the person's own acphost cancel still stops it.
func TestAgentCannotDriveAControlSocket(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	victim := slowScript("victim-1")
	victim.Turns = append(victim.Turns, fakeagent.Turn{Prompt: "evil", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("EVIL RAN"))}})
	b := startBG(t, dir, extra, victim, "--permission", "allow", "-p", "slow", "-p", "next")
	rec := waitTurn(t, dir, extra, b)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, perm := range []string{"plan", "allow"} {
		id := "attacker-" + perm
		// One command does it all: plan mode stops the turn once the
		// agent reports it ran one.
		attacker := &fakeagent.Script{SessionID: id, Turns: []fakeagent.Turn{
			{Prompt: "go", Steps: []fakeagent.Step{{Run: []string{"env", envHostileControl + "=1", self, stateDir, binPath, id}}}},
			{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("a queued prompt ran"))}},
		}}
		r := runIn(t, dir, extra, attacker, "", "--permission", perm, "--tool-output", "all", "-p", "go")
		if strings.Contains(r.stdout, "ACCEPTED") || strings.Contains(r.stderr, "cancelling the turn (acphost cancel)") ||
			strings.Contains(r.stdout, "a queued prompt ran") {
			t.Errorf("%s: an agent drove a control socket:\nstdout:\n%s\nstderr:\n%s", perm, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, "cancelling the turn of session") || strings.Contains(r.stdout, "queued in session") {
			t.Errorf("%s: acphost cancel or --no-wait run by an agent got through:\n%s", perm, r.stdout)
		}
		if testing.Verbose() {
			t.Logf("%s attacker:\n%s", perm, r.stdout)
		}
		if !strings.Contains(r.stdout, "hostile: 8 attempts") {
			t.Fatalf("%s: the hostile client did not try both chats to the end: exit %d\nstdout:\n%s\nstderr:\n%s", perm, r.code, r.stdout, r.stderr)
		}
		if perm == "allow" && strings.Count(r.stdout, "the peer is not the person's process") != 8 {
			t.Errorf("allow: not every attempt was refused as an agent's:\n%s", r.stdout)
		}
	}
	if s := b.errb.String(); strings.Contains(s, "from acphost --no-wait") || strings.Contains(s, "acphost cancel") {
		t.Errorf("the attack reached the person's chat:\n%s", s)
	}
	if recs := records(t, dir, extra); !turnRuns(recs, rec.ID) {
		t.Errorf("the person's turn no longer runs after the attack: %+v", recs)
	}

	// The person's own acphost cancel still works, and nothing was queued.
	if r := runIn(t, dir, extra, nil, "", "cancel", rec.ID); r.code != 0 {
		t.Fatalf("the person's acphost cancel: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b.wait(t)
	if s := b.out.String(); !strings.Contains(s, "⨯ cancelled") || !strings.Contains(s, "next ran") || strings.Contains(s, "EVIL RAN") {
		t.Errorf("the person's chat:\nstdout:\n%s\nstderr:\n%s", s, b.errb.String())
	}
}

// turnRuns reports whether the record of session id shows a turn running.
func turnRuns(recs []state.Record, id string) bool {
	for _, r := range recs {
		if r.ID == id {
			return !r.TurnSince.IsZero()
		}
	}
	return false
}
