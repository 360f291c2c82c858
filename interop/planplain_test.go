//go:build interop

package interop

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// The agents as their READMEs start them: no mode preset. Claude starts in
// auto (it never asks), Codex TS in agent (a guardian model decides; the
// mock answers its review "allow", as a real model does for a harmless
// command). Plan mode and the policies that reject must hold anyway.

// plain is a tweak that drops the mode the other scenarios preset.
func plain(extra func(*session, *acphost.ACPOptions)) func(*session, *acphost.ACPOptions) {
	return func(s *session, o *acphost.ACPOptions) {
		o.Mode = ""
		if extra != nil {
			extra(s, o)
		}
	}
}

// plan-plain: library plan mode on an agent started in its own default
// mode, with a hook that would allow everything and fs served: nothing is
// written by any route.
// via, if set, reaches the agent another way (SSH, WebSocket).
func testPlanPlain(t *testing.T, a Agent, via func(*session, *acphost.ACPOptions)) {
	s := start(t, a, plain(func(s *session, o *acphost.ACPOptions) {
		o.PlanMode = true
		if o.FS == nil {
			s.serveFS(o)
		}
		if via != nil {
			via(s, o)
		}
	}))
	s.setPolicy(allowOnce)
	e := s.client.Session().Enforcement()
	t.Logf("%s: mode %q (%s), plan mode %q, %s", a.Name, e.Mode, e.ModeKind, e.PlanModeID, e)
	s.planTurns([]string{"sh:out1.txt", "write:note1.txt"}, []string{"write:note2.txt", "sh:out2.txt"})
	if e := s.client.Session().Enforcement(); e.PlanModeID != "" && !e.AgentMode {
		t.Errorf("the agent offers plan mode %q but the session is in %q", e.PlanModeID, e.Mode)
	}
}

// planTurns runs a turn for each list of steps in plan mode: each runs
// to its end or is stopped by detection, and no file a step names is
// written in the project.
func (s *session) planTurns(turns ...[]string) {
	t := s.t
	t.Helper()
	for _, steps := range turns {
		r := s.turn(turnCtx(t), prompt(steps...))
		switch {
		case errors.Is(r.err, acphost.ErrPlanModeBypassed):
			t.Logf("turn %v stopped: %v", steps, r.err)
		case r.err != nil:
			t.Fatalf("turn %v failed: %v", steps, r.err)
		}
	}
	for _, steps := range turns {
		for _, step := range steps {
			_, file, _ := strings.Cut(step, ":")
			noFile(t, filepath.Join(s.work, file))
		}
	}
}

// reject-plain: what --permission reject does (RequireAsking, every asked
// request rejected) on an agent started in its own default mode: nothing
// is written.
func testRejectPlain(t *testing.T, a Agent) {
	s := start(t, a, plain(func(_ *session, o *acphost.ACPOptions) { o.RequireAsking = true }))
	s.setPolicy(pick(acp.RejectOnce, acp.RejectAlways))
	e := s.client.Session().Enforcement()
	t.Logf("%s: mode %q (%s)", a.Name, e.Mode, e.ModeKind)
	r := s.turn(turnCtx(t), prompt("sh:out1.txt"))
	switch {
	case errors.Is(r.err, acphost.ErrUnaskedChange):
		t.Logf("turn stopped: %v", r.err)
	case r.err != nil:
		t.Fatalf("turn failed: %v", r.err)
	}
	noFile(t, filepath.Join(s.work, "out1.txt"))
	if e := s.client.Session().Enforcement(); e.ModeKind == acphost.ModeUnasked && r.err == nil {
		t.Errorf("the session is still in %q, which acts without asking", e.Mode)
	}
}

// TestCLIPlainPolicies runs the built acphost on each agent by its plain
// command (no --mode): --permission plan and reject write nothing, and the
// header says which layers hold.
func TestCLIPlainPolicies(t *testing.T) {
	var bin string
	binDir := t.TempDir()
	for _, a := range Agents {
		for _, policy := range []string{"plan", "reject"} {
			t.Run(a.Name+"/"+policy, func(t *testing.T) {
				p := prepare(t, a)
				if bin == "" {
					bin = buildCLI(t, binDir)
				}
				args := []string{"--permission", policy}
				if a.FSWrite {
					args = append(args, "--fs")
				}
				header := cliWritesNothing(t, bin, p, nil, args, append([]string{"--", p.opts.Command}, p.opts.Args...))
				if policy == "plan" && !strings.Contains(header, "held by host") {
					t.Errorf("the header does not say what holds: %s", header)
				}
			})
		}
	}
}

// cliWritesNothing runs the built CLI in p's project on the turn that
// tries a shell write and a file write, with nobody to ask: flags before
// the prompt, after it (an agent command after --), env over p's (the
// config file defaults to one in p's directory). The run must end (or the
// turn be stopped) and neither file exist; it returns the header line.
func cliWritesNothing(t *testing.T, bin string, p place, env, flags, after []string) (header string) {
	t.Helper()
	env = append(append(append([]string(nil), p.opts.Process.Env...), "NO_COLOR=1",
		"ACPHOST_CONFIG="+filepath.Join(p.tmp, "config.json"), "XDG_STATE_HOME="+filepath.Join(p.tmp, "state")), env...)
	args := append([]string{"--cwd", p.work, "--no-store", "--non-interactive-permissions", "deny",
		"--start-timeout", startTimeout.String(), "--timeout", turnTimeout.String()}, flags...)
	args = append(append(args, "-p", prompt("sh:out1.txt", "write:note1.txt").Prompt), after...)
	r := runCLI(t, bin, env, args...)
	header, _, _ = strings.Cut(r.stdout, "\n")
	t.Logf("exit %d; header: %s", r.code, header)
	if r.code != 0 && !strings.Contains(r.stderr, "the turn was stopped") {
		t.Fatalf("exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"out1.txt", "note1.txt"} {
		noFile(t, filepath.Join(p.work, f))
	}
	return header
}

// TestCLINamedAgentThroughNpx: the way a user runs Claude — a named agent
// (`--agent claude`) that starts through npx, here pinned in the user's
// config file to the proven build — in plan mode, with the kernel layer on
// where Landlock works: npx writes its cache before the agent runs, so the
// layer must keep the launcher's cache writable, and still no file of the
// project is written.
func TestCLINamedAgentThroughNpx(t *testing.T) {
	i := slices.IndexFunc(Agents, func(a Agent) bool { return a.Name == "claude" })
	if i < 0 {
		t.Fatal("no claude in Agents")
	}
	a := Agents[i]
	p := prepare(t, a)
	bin := buildCLI(t, t.TempDir())
	config := filepath.Join(p.tmp, "config.json")
	if err := os.WriteFile(config, []byte(`{"agents": {"claude": {"command": ["npx", "-y", "`+a.Spec+`"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The tests run offline (a network namespace): npx takes the package
	// from its cache, which run.sh filled (npm's offline mode), and runs no
	// install script (none of the agents here runs with them).
	header := cliWritesNothing(t, bin, p, []string{"npm_config_offline=true", "npm_config_ignore_scripts=true"},
		[]string{"--agent", "claude", "--permission", "plan"}, nil)
	if acphost.CanConfine() && !strings.Contains(header, "kernel") {
		t.Errorf("Landlock works here, but the header does not say the kernel layer holds: %s", header)
	}
	if len(p.mock.Calls()) == 0 {
		t.Error("the agent never asked the model: the turn did not run")
	}
}

// unasked-reported: an agent whose own start mode acts without asking
// (Claude's auto, Codex TS's agent with its guardian) and a host that
// would reject everything but does not require asking: the host cannot
// stop what it is not asked, and says so before the turn (its profile)
// and after it (the change it saw).
func testUnaskedReported(t *testing.T, a Agent) {
	s := start(t, a, plain(nil))
	s.setPolicy(pick(acp.RejectOnce, acp.RejectAlways))
	e := s.client.Session().Enforcement()
	if e.ModeKind != acphost.ModeUnasked {
		t.Skipf("%s starts in %q, which is not known to act unasked (%s)", a.Name, e.Mode, e.ModeKind)
	}
	if !e.ActsUnasked || !strings.Contains(e.String(), "acts without asking") {
		t.Errorf("not reported before the turn: %+v %q", e.Mode, e)
	}
	r := s.turn(turnCtx(t), prompt("sh:out1.txt"))
	if r.err != nil {
		t.Fatalf("turn failed: %v", r.err)
	}
	_, err := os.Stat(filepath.Join(s.work, "out1.txt"))
	t.Logf("%s in %q: %d permission request(s), guardian calls %d, out1.txt written: %v; unasked changes seen %d",
		a.Name, e.Mode, len(s.permissions()), s.mock.Count("guardian"), err == nil, s.client.Session().Enforcement().Unasked)
}
