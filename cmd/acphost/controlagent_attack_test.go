package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
)

// envHostileControl makes the test binary a hostile control-socket
// client, run by an agent with the state directory, the acphost binary and
// its own session's id as its arguments: it reads every session of sessions.json, as an agent
// may (reads are not confined), and asks each one's control socket to
// cancel and to queue a prompt, over the raw protocol and with acphost
// cancel and --no-wait, printing one line per attempt.
const envHostileControl = "ACPHOST_TEST_HOSTILE_CONTROL"

// hostileControl is the test binary run as envHostileControl says.
func hostileControl() int {
	if len(os.Args) != 4 {
		fmt.Println("hostile: want STATE-DIR ACPHOST OWN-SESSION")
		return 2
	}
	stateDir, bin, own := os.Args[1], os.Args[2], os.Args[3]
	b, err := os.ReadFile(filepath.Join(stateDir, "sessions.json"))
	var sf struct{ Sessions []state.Record }
	if err == nil {
		err = json.Unmarshal(b, &sf)
	}
	if err != nil {
		fmt.Println("hostile: cannot read the sessions:", err)
		return 1
	}
	// Its own chat last: a cancel that got through there would end this.
	slices.SortStableFunc(sf.Sessions, func(a, b state.Record) int { return cmp.Compare(boolInt(a.ID == own), boolInt(b.ID == own)) })
	n := 0
	for _, r := range sf.Sessions {
		if r.Control == "" {
			continue
		}
		for _, req := range []control.Request{
			{Op: control.OpPrompt, Session: r.ID, Text: "evil"},
			{Op: control.OpCancel, Session: r.ID},
		} {
			n++
			fmt.Printf("hostile %s %s: %s\n", req.Op, r.ID, hostileAsk(r.Control, req))
		}
		for _, args := range [][]string{{"--resume", r.ID, "-p", "evil", "--no-wait"}, {"cancel", r.ID}} {
			n++
			cmd := exec.Command(bin, args...)
			for _, e := range os.Environ() { // acphost itself, not the fake agent it runs as here
				if !strings.HasPrefix(e, "ACPHOST_FAKEAGENT_") {
					cmd.Env = append(cmd.Env, e)
				}
			}
			out, err := cmd.CombinedOutput()
			fmt.Printf("hostile acphost %s: %v: %s\n", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	fmt.Printf("hostile: %d attempts\n", n)
	return 0
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostileAsk speaks the control protocol itself (no client-side checks) and
// says what came of it: ACCEPTED, or why not.
func hostileAsk(path string, req control.Request) string {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return "refused: dial: " + err.Error()
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(control.Deadline))
	b, _ := json.Marshal(req)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "refused: write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "refused: no answer: " + err.Error()
	}
	var rep control.Reply
	if json.Unmarshal([]byte(line), &rep) != nil || !rep.OK {
		return "refused: " + strings.TrimSpace(line)
	}
	return "ACCEPTED " + strings.TrimSpace(line)
}

// An agent's process tree cannot drive the control socket of any chat of
// the user: a hostile agent — in a --permission plan chat (confined by the
// kernel layer where Landlock works), then in a --permission allow one —
// reads the sessions from the store and asks every control socket, its
// own chat's and the person's other chat's, to cancel and to queue a
// prompt, over the raw protocol and with acphost cancel and --no-wait.
// Every attempt is refused: the other chat's turn runs on, nothing is
// queued in it; the person's own acphost cancel still stops it.
func TestAgentCannotDriveAControlSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells an agent's process from the person's (SO_PEERCRED, /proc): a known limit")
	}
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
