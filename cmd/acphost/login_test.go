package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/confine"
)

// loginScript is an agent that opens no session until it is logged in
// (its login kept in a file, as real agents keep credentials), offering a
// terminal login and, with agentMethod, one it runs itself.
func loginScript(t *testing.T, agentMethod bool) (*fakeagent.Script, string) {
	authFile := filepath.Join(t.TempDir(), "credentials")
	methods := `[{"id":"tui","name":"Log in here","type":"terminal","args":["` + fakeagent.LoginArg + `"],"env":{"LOGIN_MODE":"tty"}}`
	if agentMethod {
		methods += `,{"id":"browser","name":"In the browser","description":"opens a page"}`
	}
	return &fakeagent.Script{RequireAuth: true, AuthFile: authFile, AuthMethods: json.RawMessage(methods + "]")}, authFile
}

// TestStartNeedingALoginSaysHow: an agent that refuses the session until
// a login fails the start with its methods listed and how to log in.
func TestStartNeedingALoginSaysHow(t *testing.T) {
	script, _ := loginScript(t, false)
	r := runWith(t, script, "", "-p", "hi")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	for _, want := range []string{"Authentication required; its methods: tui", "the agent's login methods:",
		"tui (Log in here) — runs the agent's login in this terminal", "acphost login METHOD"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestLoginRunsTheAgentsTerminalLogin: acphost login with the agent's one
// method runs its terminal login (the agent's own program with the
// method's arguments), checks that a session now opens, and later runs
// find the agent logged in.
func TestLoginRunsTheAgentsTerminalLogin(t *testing.T) {
	script, authFile := loginScript(t, false)
	r := runWith(t, script, "", "login", "--yes")
	if r.code != 0 {
		t.Fatalf("login: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"running the agent's login (tui): env LOGIN_MODE=tty ", fakeagent.LoginArg, "fakeagent: logged in", "logged in with tui"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("login stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(authFile); err != nil {
		t.Fatalf("the agent's login did not run: %v", err)
	}
	if r := runWith(t, script, "", "-p", "hi"); r.code != 0 {
		t.Errorf("after login: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// TestLoginWithAMethodTheAgentRuns: acphost login METHOD sends a method
// that is not a terminal one with authenticate; an unknown method is a
// usage error listing the agent's; --auth sends one at every start.
func TestLoginWithAMethodTheAgentRuns(t *testing.T) {
	script, authFile := loginScript(t, true)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script.RecordFile = record
	if r := runWith(t, script, "", "login", "nope"); r.code != exitUsage || !strings.Contains(r.stdout+r.stderr, `no method "nope"`) ||
		!strings.Contains(r.stdout+r.stderr, "browser (In the browser) — the agent logs you in itself: opens a page") {
		t.Errorf("login nope: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(authFile)
	os.Remove(record)
	if r := runWith(t, script, "", "login", "browser"); r.code != 0 || !strings.Contains(r.stdout, "logged in with browser") {
		t.Errorf("login browser: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	msgs, _ := fakeagent.ReadRecord(record)
	if i := indexOf(msgs, "authenticate"); i < 0 || !strings.Contains(string(msgs[i].Params), `"methodId":"browser"`) {
		t.Errorf("no authenticate with browser: %v", msgs)
	}

	os.Remove(record)
	if r := runWith(t, script, "", "--auth", "browser", "-p", "hi"); r.code != 0 {
		t.Fatalf("--auth: exit %d; stderr:\n%s", r.code, r.stderr)
	}
	msgs, _ = fakeagent.ReadRecord(record)
	if i, j := indexOf(msgs, "authenticate"), indexOf(msgs, "session/new"); i < 0 || j < i || !strings.Contains(string(msgs[i].Params), `"browser"`) {
		t.Errorf("--auth browser: authenticate at %d, session/new at %d", i, j)
	}
}

// TestLogoutEndsTheLogin: acphost logout calls the agent's logout, after
// which the agent wants a login again; an agent without logout says so.
func TestLogoutEndsTheLogin(t *testing.T) {
	script, authFile := loginScript(t, false)
	script.AgentCapabilities = json.RawMessage(`{"auth":{"logout":{}}}`)
	if err := os.WriteFile(authFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runWith(t, script, "", "logout"); r.code != 0 || !strings.Contains(r.stdout, "logged out") {
		t.Fatalf("logout: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runWith(t, script, "", "-p", "hi"); r.code != exitFailed {
		t.Errorf("after logout a session opened: exit %d", r.code)
	}
	if r := runWith(t, script, "", "logout"); r.code != 0 || !strings.Contains(r.stdout, "not logged in") {
		t.Errorf("logout when logged out: exit %d; stdout:\n%s", r.code, r.stdout)
	}
	script.AgentCapabilities = nil
	if err := os.WriteFile(authFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := runWith(t, script, "", "logout"); r.code != exitFailed || !strings.Contains(r.stderr, "does not offer logout") {
		t.Errorf("no logout: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// TestLoginRefusesToRunOutsideTheConfinement: with --writable, acphost
// login does not run a terminal login (a program of its own, with the
// agent's arguments and environment, outside the confinement).
func TestLoginRefusesToRunOutsideTheConfinement(t *testing.T) {
	if !confine.Available() {
		t.Skip("Landlock is not available on this kernel: --writable cannot start the agent")
	}
	script, authFile := loginScript(t, false)
	r := runWith(t, script, "", "login", "--writable", t.TempDir())
	if r.code != exitUsage || !strings.Contains(r.stderr, "outside --writable's confinement") {
		t.Errorf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(authFile); err == nil {
		t.Error("the login ran")
	}
}

// TestWebNeedingALoginSaysHow: acphost web with an agent that wants a
// login fails at start and points to acphost login.
func TestWebNeedingALoginSaysHow(t *testing.T) {
	script, _ := loginScript(t, false)
	r := runWith(t, script, "", "web", "--listen", "127.0.0.1:0", "--no-store")
	if r.code != exitFailed || !strings.Contains(r.stderr, "its methods: tui") || !strings.Contains(r.stderr, "acphost login") {
		t.Errorf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestLoginShowsTheAgentsMethodsExactly: the agent's method ids, login
// arguments and environment reach the terminal quoted when they are not
// plain text, so a line break in one cannot forge an acphost line or push
// what runs out of sight, and what is shown is what runs (an argument
// with a space is one argument).
func TestLoginShowsTheAgentsMethodsExactly(t *testing.T) {
	authFile := filepath.Join(t.TempDir(), "credentials")
	methods := `[{"id":"tui\nacphost: logged in with evil","name":"N","type":"terminal","args":["two words","` + fakeagent.LoginArg + `"],` +
		`"env":{"AA":"x\n\n\nacphost: forged","LOGIN_MODE":"tty"}}]`
	script := &fakeagent.Script{RequireAuth: true, AuthFile: authFile, AuthMethods: json.RawMessage(methods)}
	r := runWith(t, script, "", "-p", "hi")
	if out := r.stdout + r.stderr; strings.Contains(out, "\nacphost: logged in with evil") || !strings.Contains(out, `"tui\nacphost: logged in with evil"`) {
		t.Errorf("the listing shows the method id raw:\n%s", out)
	}
	r = runWith(t, script, "", "login", "--yes")
	if r.code != 0 {
		t.Fatalf("login: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, bad := range []string{"\nacphost: forged", "\nacphost: logged in with evil"} {
		if strings.Contains(r.stdout+r.stderr, bad) {
			t.Errorf("login output carries the agent's line %q:\n%s", bad, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, `env AA="x\n\n\nacphost: forged" LOGIN_MODE=tty `) || !strings.Contains(r.stdout, ` "two words" `+fakeagent.LoginArg) {
		t.Errorf("login does not show exactly what runs:\n%s", r.stdout)
	}
}

// TestPromptNeedingALoginSaysHow: an agent that opens the session and
// refuses the prompt with -32000 (claude-agent-acp without credentials)
// gets one line naming the login command; acphost login then agrees
// (not "it needs no login now"), and once logged in forgets the refusal.
func TestPromptNeedingALoginSaysHow(t *testing.T) {
	extra, _, _ := isolated(t)
	authFile := filepath.Join(t.TempDir(), "credentials")
	script := &fakeagent.Script{RequireAuth: true, AuthAtPrompt: true, AuthFile: authFile}
	dir := t.TempDir()
	r := runIn(t, dir, extra, script, "", "-p", "hi", "-p", "again")
	if r.code != exitFailed {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := "acphost: the agent needs a login (it said: Authentication required): run acphost login\n"
	if !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "-32000") || strings.Count(r.stderr, "needs a login") != 1 {
		t.Errorf("stderr does not say once, in one line, what to run (%q):\n%s", want, r.stderr)
	}

	r = runIn(t, dir, extra, script, "", "login")
	if r.code != exitFailed || strings.Contains(r.stdout, "needs no login") || !strings.Contains(r.stdout, "refused a prompt for want of a login") {
		t.Errorf("login after a refused prompt: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}

	// With a method the agent runs, login uses it and the refusal is forgotten.
	script.AuthMethods = json.RawMessage(`[{"id":"browser","name":"In the browser"}]`)
	r = runIn(t, dir, extra, script, "", "login")
	if r.code != 0 || !strings.Contains(r.stdout, "logged in with browser") {
		t.Fatalf("login with the one method: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runIn(t, dir, extra, script, "", "login"); r.code != 0 || !strings.Contains(r.stdout, "needs no login now") {
		t.Errorf("login once logged in: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestLoginCommandNamesTheAgent: the line says what to type for the agent
// of the command line: its name, or its command, and where it runs.
func TestLoginCommandNamesTheAgent(t *testing.T) {
	for _, tc := range []struct {
		cfg  config
		want string
	}{
		{config{agentName: "claude"}, "acphost login --agent claude"},
		{config{agent: []string{"/opt/my agent", "--acp"}}, "acphost login -- '/opt/my agent' --acp"},
		{config{agentName: "codex", remote: remoteFlags{ssh: "me@box"}}, "acphost login --ssh me@box --agent codex"},
	} {
		if got := loginCommand(tc.cfg); got != tc.want {
			t.Errorf("loginCommand(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}
