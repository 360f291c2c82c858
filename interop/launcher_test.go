//go:build interop

package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost"
)

// Launchers: how many people start an agent — a small script that gives it
// a home of its own (HOME, XDG directories, CODEX_HOME or
// CLAUDE_CONFIG_DIR), copies its settings there, and execs it. The host
// sees only the script: it knows nothing of that home. Plan mode must let
// the agent start and run its turns there, and still write nothing in the
// project.

// launcher writes p's agent a wrapper script in p.tmp that makes the
// agent's home under p.tmp/launcher-home (never the host's HOME), copies
// the settings p.home holds into it at every start, and execs the agent;
// it returns the options that run the agent through it, with the
// environment of a user who set none of that (no HOME or XDG of p's).
func launcher(t *testing.T, p place) acphost.ACPOptions {
	t.Helper()
	home := filepath.Join(p.tmp, "launcher-home")
	var exports, keep []string
	for _, kv := range p.opts.Process.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "XDG_"):
			continue // the script sets them
		case k == "CODEX_HOME", k == "CLAUDE_CONFIG_DIR", strings.HasPrefix(v, p.home):
			// the agent's own directories, moved to the launcher's home
			exports = append(exports, fmt.Sprintf("export %s=%q", k, home+strings.TrimPrefix(v, p.home)))
		default:
			keep = append(keep, kv)
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
# a launcher: the agent's own home, its settings copied in, then the agent
set -e
home=%q
mkdir -p "$home"
cp -R %q/. "$home/"
export HOME="$home" XDG_CONFIG_HOME="$home/.config" XDG_DATA_HOME="$home/.local/share" \
	XDG_STATE_HOME="$home/.local/state" XDG_CACHE_HOME="$home/.cache"
%s
exec "$@"
`, home, p.home, strings.Join(exports, "\n"))
	path := filepath.Join(p.tmp, "launch.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := p.opts
	o.Process.Env = keep
	o.Command, o.Args = path, append([]string{p.opts.Command}, p.opts.Args...)
	return o
}

// TestPlanModeThroughALauncher runs each agent through a launcher script,
// in its own default mode, under plan mode with the kernel layer: through
// the CLI (--permission plan) and the library (PlanMode with Confine). The
// turn must run (the model is asked) and write nothing in the project.
func TestPlanModeThroughALauncher(t *testing.T) {
	var bin string
	binDir := t.TempDir()
	for _, a := range Agents {
		t.Run(a.Name+"/cli", func(t *testing.T) {
			p := prepare(t, a)
			if bin == "" {
				bin = buildCLI(t, binDir)
			}
			o := launcher(t, p)
			p.opts.Process.Env = o.Process.Env
			args := []string{"--permission", "plan"}
			if a.FSWrite {
				args = append(args, "--fs")
			}
			header := cliWritesNothing(t, bin, p, nil, args, append([]string{"--", o.Command}, o.Args...))
			if acphost.CanConfine() && !strings.Contains(header, "kernel") {
				t.Errorf("Landlock works here, but the header does not say the kernel layer holds: %s", header)
			}
			if len(p.mock.Calls()) == 0 {
				t.Error("the agent never asked the model: the turn did not run")
			}
		})
		t.Run(a.Name+"/library", func(t *testing.T) {
			s := start(t, a, func(s *session, o *acphost.ACPOptions) {
				l := launcher(t, place{tmp: filepath.Dir(s.home), work: s.work, home: s.home, opts: *o})
				o.Command, o.Args, o.Process.Env, o.Mode = l.Command, l.Args, l.Process.Env, ""
				o.PlanMode = true
				o.Process.Confine = &acphost.Confinement{PlanOnly: true}
			})
			s.setPolicy(allowOnce)
			if acphost.CanConfine() && !s.client.Session().Enforcement().Kernel {
				t.Errorf("the kernel layer does not hold: %s", s.client.Session().Enforcement())
			}
			s.planTurns([]string{"sh:out1.txt", "write:note1.txt"}, []string{"write:note2.txt"})
			if len(s.mock.Calls()) == 0 {
				t.Error("the agent never asked the model: the turn did not run")
			}
		})
	}
}
