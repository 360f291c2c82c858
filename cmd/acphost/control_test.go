//go:build unix

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

// bg is an acphost running in the background with stdout and stderr kept.
type bg struct {
	cmd       *exec.Cmd
	out, errb *testutil.SyncBuffer
	done      chan error
}

func startBG(t *testing.T, dir string, extra []string, script *fakeagent.Script, args ...string) *bg {
	t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(env(t, script), extra...)
	cmd.Dir = dir
	b := &bg{cmd: cmd, out: &testutil.SyncBuffer{}, errb: &testutil.SyncBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = b.out, b.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return b
}

func (b *bg) wait(t *testing.T) {
	t.Helper()
	select {
	case err := <-b.done:
		if err != nil {
			t.Fatalf("acphost: %v\nstdout:\n%s\nstderr:\n%s", err, b.out.String(), b.errb.String())
		}
	case <-time.After(readTimeout):
		t.Fatalf("acphost did not end:\nstdout:\n%s\nstderr:\n%s", b.out.String(), b.errb.String())
	}
}

// waitFor polls (with a deadline) until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Until(t, readTimeout, func() (bool, string) { return cond(), "timed out waiting for " + what })
}

// records reads the store as acphost sessions --json prints it.
func records(t *testing.T, dir string, extra []string) []state.Record {
	t.Helper()
	r := runIn(t, dir, extra, nil, "", "sessions", "--json")
	var recs []state.Record
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	return recs
}

// waitTurn waits until the store shows a turn running in the one session
// of the background acphost, and returns its record.
func waitTurn(t *testing.T, dir string, extra []string, b *bg) state.Record {
	t.Helper()
	var rec state.Record
	waitFor(t, "the running turn in the store", func() bool {
		recs := records(t, dir, extra)
		if len(recs) == 1 && !recs[0].TurnSince.IsZero() && recs[0].PID == b.cmd.Process.Pid && recs[0].Control != "" {
			rec = recs[0]
			return true
		}
		return false
	})
	return rec
}

func slowScript(id string) *fakeagent.Script {
	return &fakeagent.Script{SessionID: id, Turns: []fakeagent.Turn{
		{Prompt: "slow", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {WaitCancel: true}}},
		{Prompt: "next", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("next ran"))}},
		{Prompt: "queued", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("queued prompt ran"))}},
	}}
}

// acphost cancel reaches the chat over its control socket (private
// directory, socket 0600), the turn ends cancelled and the next prompt
// runs; at exit the socket is removed and the record lets go of it.
func TestCancelViaControlSocket(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	b := startBG(t, dir, extra, slowScript("ctl-1"), "-p", "slow", "-p", "next")
	rec := waitTurn(t, dir, extra, b)
	if filepath.Dir(rec.Control) != filepath.Join(stateDir, "run") {
		t.Errorf("control socket %s, want one in %s/run", rec.Control, stateDir)
	}
	fi, err := os.Stat(filepath.Dir(rec.Control))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("run dir: %v %v", fi.Mode(), err)
	}
	if fi, err := os.Lstat(rec.Control); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("control socket: %v %v", fi, err)
	}
	r := runIn(t, dir, extra, nil, "", "cancel", "ctl-1")
	if r.code != 0 || !strings.Contains(r.stdout, "cancelling the turn of session ctl-1") {
		t.Fatalf("acphost cancel: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b.wait(t)
	if s := b.out.String(); !strings.Contains(s, "⨯ cancelled") || !strings.Contains(s, "next ran") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", s, b.errb.String())
	}
	if !strings.Contains(b.errb.String(), "cancelling the turn (acphost cancel)") {
		t.Errorf("stderr:\n%s", b.errb.String())
	}
	if _, err := os.Lstat(rec.Control); !os.IsNotExist(err) {
		t.Errorf("the control socket outlived its acphost: %v", err)
	}
	if recs := records(t, dir, extra); len(recs) != 1 || recs[0].Control != "" || recs[0].PID != 0 {
		t.Errorf("record after exit: %+v", recs)
	}
}

// A stale record — its acphost gone, its pid now another process's (here
// the test's own), its socket gone or dead — makes acphost cancel fail
// with a clear error and signal nothing.
func TestCancelStaleRecordSignalsNothing(t *testing.T) {
	extra, _, stateDir := isolated(t)
	dir := t.TempDir()
	if r := runIn(t, dir, extra, nil, "", "--permission", "allow", "-p", "x"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	st := &state.Store{Dir: stateDir}
	recs, err := st.List()
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	dead := filepath.Join(stateDir, "run", "dead.sock")
	for _, control := range []string{"", filepath.Join(stateDir, "run", "gone.sock"), dead} {
		if control == dead {
			ln, err := net.Listen("unix", dead)
			if err != nil {
				t.Fatal(err)
			}
			ln.(*net.UnixListener).SetUnlinkOnClose(false)
			ln.Close() // the file stays, nobody listens: a crashed acphost's
		}
		rec := recs[0]
		rec.PID, rec.TurnSince, rec.Control = os.Getpid(), time.Now(), control
		if err := st.Put(rec); err != nil {
			t.Fatal(err)
		}
		r := runIn(t, dir, extra, nil, "", "cancel")
		if r.code != 1 || !strings.Contains(r.stderr, "no acphost process has session") || !strings.Contains(r.stderr, "nothing was signalled") {
			t.Errorf("control %q: exit %d; stdout %q; stderr %q", control, r.code, r.stdout, r.stderr)
		}
		select {
		case <-sigs:
			t.Fatalf("control %q: acphost cancel signalled the pid in a stale record", control)
		default:
		}
		if s := runIn(t, dir, extra, nil, "", "sessions"); control != "" && control != dead && strings.Contains(s.stdout, "turn running") {
			t.Errorf("a stale record shows as running:\n%s", s.stdout)
		}
	}
}

// Hostile clients on the control socket — a huge line, garbage, a writer
// that never finishes, one of too many connections — are refused or cut
// off while the chat goes on; acphost cancel still works meanwhile.
func TestControlSocketSurvivesHostileClients(t *testing.T) {
	extra, _, _ := isolated(t)
	dir := t.TempDir()
	b := startBG(t, dir, extra, slowScript("ctl-h"), "-p", "slow", "-p", "next")
	rec := waitTurn(t, dir, extra, b)

	// A writer that never finishes its line holds a connection open.
	slow, err := net.Dial("unix", rec.Control)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	if _, err := slow.Write([]byte(`{"op":"can`)); err != nil {
		t.Fatal(err)
	}
	// Garbage is answered as malformed.
	if rep := rawAsk(t, rec.Control, []byte("\x00\xff not json\n")); !strings.Contains(rep, "malformed request") {
		t.Errorf("garbage: %q", rep)
	}
	// A request with an unknown field, or for another session, is refused.
	if rep := rawAsk(t, rec.Control, []byte(`{"op":"cancel","session":"ctl-h","x":1}`+"\n")); !strings.Contains(rep, "malformed") {
		t.Errorf("unknown field: %q", rep)
	}
	if rep := rawAsk(t, rec.Control, []byte(`{"op":"cancel","session":"other"}`+"\n")); !strings.Contains(rep, "no longer has session other open") {
		t.Errorf("other session: %q", rep)
	}
	// A line over the bound is refused without being read to its end.
	huge := bytes.Repeat([]byte("x"), control.MaxLine+10)
	if rep := rawAsk(t, rec.Control, huge); !strings.Contains(rep, "request over") {
		t.Errorf("huge line: %q", rep)
	}
	// The turn still runs, and cancel still works.
	if s := b.out.String(); strings.Contains(s, "cancelled") {
		t.Fatalf("a hostile client cancelled the turn:\n%s", s)
	}
	r := runIn(t, dir, extra, nil, "", "cancel")
	if r.code != 0 {
		t.Fatalf("acphost cancel: %d %s %s", r.code, r.stdout, r.stderr)
	}
	b.wait(t)
	if s := b.out.String(); !strings.Contains(s, "⨯ cancelled") || !strings.Contains(s, "next ran") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", s, b.errb.String())
	}
}

// rawAsk writes b to the socket and returns the answer line ("" when the
// connection ends without one).
func rawAsk(t *testing.T, path string, b []byte) string {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(readTimeout))
	go func() { _, _ = c.Write(b) }() // a refused huge line is never read to its end
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// In a real terminal: a prompt handed over with --no-wait shows up on the
// running chat's screen as queued, and runs once the turn ends.
func TestTerminalNoWaitPromptIsShownQueued(t *testing.T) {
	extra, _, _ := isolated(t)
	p := startPane(t, slowScript("tm-1"), extra)
	p.waitFor("Ctrl-C stops a turn", 1)
	p.typeLine("slow")
	p.waitFor("working", 1)
	dir := t.TempDir()
	waitFor(t, "the running turn in the store", func() bool {
		recs := records(t, dir, extra)
		return len(recs) == 1 && !recs[0].TurnSince.IsZero() && recs[0].Control != ""
	})
	r := runIn(t, dir, extra, nil, "", "--resume", "tm-1", "-p", "queued one", "--no-wait")
	if r.code != 0 || !strings.Contains(r.stdout, "queued in session tm-1") {
		t.Fatalf("--no-wait: exit %d; stdout %q; stderr %q", r.code, r.stdout, r.stderr)
	}
	p.waitFor("queued (1, from acphost --no-wait): queued one", 1)
	if r := runIn(t, dir, extra, nil, "", "cancel", "tm-1"); r.code != 0 {
		t.Fatalf("cancel: %d %s", r.code, r.stderr)
	}
	p.waitFor("queued prompt ran", 1)
}
