//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// loadRefused names the agents whose pinned build refuses session/load of
// a session it persisted, with the agent's words: Gemini CLI 0.61.0 lists
// no session for the project although the session's chat file is there.
var loadRefused = map[string]string{"gemini": "No previous sessions found for this project."}

const exitFailed = 1

// buildCLI builds cmd/acphost into a temporary directory.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "acphost")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/acphost/acphost/cmd/acphost").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type cliRun struct {
	code           int
	stdout, stderr string
}

// runCLI runs the acphost binary to its end with env added to the
// environment.
func runCLI(t *testing.T, bin string, env []string, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout+2*turnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil // /dev/null: nobody to ask
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliRun{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("acphost %q did not exit in time; stdout:\n%s\nstderr:\n%s", args, r.stdout, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatal(err)
	}
	return r
}

// TestCLIResume drives the built acphost against the real Claude and
// Gemini: a two-turn chat with -p -p in one process, then --resume last in
// a second process, which continues the conversation (the model sees the
// first process's prompts).
func TestCLIResume(t *testing.T) {
	var bin string
	binDir := t.TempDir() // outlives the subtests
	for _, a := range Agents {
		if a.Name != "claude" && a.Name != "gemini" {
			continue
		}
		t.Run(a.Name, func(t *testing.T) {
			p := prepare(t, a)
			if bin == "" {
				bin = buildCLI(t, binDir)
			}
			tmp, work, home, m, opts := p.tmp, p.work, p.home, p.mock, p.opts
			// The agent's environment is acphost's (the agent inherits it);
			// acphost's own config and store are the test's.
			env := append(append([]string(nil), opts.Process.Env...), "NO_COLOR=1",
				"ACPHOST_CONFIG="+filepath.Join(tmp, "config.json"),
				"ACPHOST_STATE_DIR="+filepath.Join(tmp, "state"))
			common := []string{"--cwd", work, "--permission", "allow", "--start-timeout", startTimeout.String(), "--timeout", turnTimeout.String()}
			if a.Mode != "" {
				common = append(common, "--mode", a.Mode)
			}
			agent := append([]string{"--", opts.Command}, opts.Args...)
			defer func() {
				if t.Failed() {
					for _, c := range m.Calls() {
						t.Logf("mock: %s %s -> %s %s", c.Method, c.Path, c.API, c.Action)
					}
					_ = filepath.WalkDir(home, func(path string, d os.DirEntry, err error) error {
						if err == nil && !d.IsDir() && !strings.Contains(path, "node_modules") {
							t.Logf("agent home: %s", path)
						}
						return nil
					})
				}
			}()

			const word = "pelican"
			args := append(append([]string(nil), common...),
				"-p", "Remember the word "+word+". [mock:steps=sh:one.txt]",
				"-p", "Thanks. [mock:steps=]")
			r := runCLI(t, bin, env, append(args, agent...)...)
			if r.code != 0 || strings.Count(r.stdout, FinalText) < 2 || !strings.Contains(r.stdout, "permission: allow") {
				t.Fatalf("first run: exit %d, want 0 and %q for each turn; stdout:\n%s\nstderr:\n%s", r.code, FinalText, r.stdout, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(work, "one.txt")); err != nil {
				t.Errorf("the first turn's command did not run: %v", err)
			}

			before := len(m.Calls())
			args = append(append([]string(nil), common...), "--resume", "last", "-p", "Once more. [mock:steps=sh:two.txt]")
			r = runCLI(t, bin, env, append(args, agent...)...)
			if why, ok := loadRefused[a.Name]; ok && r.code == exitFailed && strings.Contains(r.stderr, why) {
				// The agent's own bug: acphost says so, and fails.
				if !strings.Contains(r.stderr, "acphost: could not continue session ") {
					t.Errorf("the refusal is not explained; stderr:\n%s", r.stderr)
				}
				t.Logf("KNOWN AGENT BUG: %s refuses session/load of the session it persisted: %q", a, why)
			} else if r.code != 0 || !strings.Contains(r.stdout, FinalText) ||
				!(strings.Contains(r.stdout, "session loaded") || strings.Contains(r.stdout, "session resumed")) {
				t.Errorf("--resume last: exit %d; stdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			} else {
				if _, err := os.Stat(filepath.Join(work, "two.txt")); err != nil {
					t.Errorf("the resumed turn's command did not run: %v", err)
				}
				// The model saw the earlier conversation in the resumed turn.
				continued := false
				for _, c := range m.Calls()[before:] {
					if c.Body != nil && bytes.Contains(c.Body, []byte("Once more.")) && bytes.Contains(c.Body, []byte(word)) {
						continued = true
					}
				}
				if !continued {
					t.Errorf("no model call of the resumed turn carries the first process's prompt (%q)", word)
				}
			}

			// --quiet: the final answer only, in a fresh session.
			args = append(append([]string(nil), common...), "--no-store", "--quiet", "-p", "Last one. [mock:steps=sh:three.txt]")
			r = runCLI(t, bin, env, append(args, agent...)...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != FinalText {
				t.Errorf("--quiet: exit %d; stdout %q; stderr:\n%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestCLISetConfigOption drives the built acphost with --set against each
// real agent that offers a select option besides its mode (its model only
// when there is nothing else): the option is set before the prompt (the
// CLI says its new value, as the agent reports it) and the turn runs.
func TestCLISetConfigOption(t *testing.T) {
	var bin string
	binDir := t.TempDir()
	for _, a := range Agents {
		t.Run(a.Name, func(t *testing.T) {
			p := prepare(t, a)
			id, value, offered := pickOption(t, p.opts)
			if id == "" {
				t.Skipf("%s offers no select option with another value besides its mode (its options: %s)", a.Name, offered)
			}
			if bin == "" {
				bin = buildCLI(t, binDir)
			}
			env := append(append([]string(nil), p.opts.Process.Env...), "NO_COLOR=1",
				"ACPHOST_CONFIG="+filepath.Join(p.tmp, "config.json"), "XDG_STATE_HOME="+filepath.Join(p.tmp, "state"))
			args := []string{"--cwd", p.work, "--permission", "allow", "--no-store", "--start-timeout", startTimeout.String(),
				"--timeout", turnTimeout.String(), "--set", id + "=" + value, "-p", "Hello. [mock:steps=]", "--", p.opts.Command}
			r := runCLI(t, bin, env, append(args, p.opts.Args...)...)
			if r.code != 0 || !strings.Contains(r.stdout, id+" = ") || !strings.Contains(r.stdout, FinalText) {
				t.Fatalf("--set %s=%s: exit %d; stdout:\n%s\nstderr:\n%s", id, value, r.code, r.stdout, r.stderr)
			}
			t.Logf("%s: --set %s=%s took", a.Name, id, value)
		})
	}
}

// pickOption starts the agent once and returns a select option other than
// its mode and model, with a value it does not have now ("" for none).
func pickOption(t *testing.T, opts acphost.ACPOptions) (id, value, offered string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := acphost.Start(ctx, opts)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	var all []string
	for _, o := range c.Session().ConfigOptions() {
		all = append(all, fmt.Sprintf("%s (%s, %d choices)", o.ID, o.Type, len(o.Choices)))
	}
	offered = strings.Join(all, ", ")
	// Anything but the mode first; the model (the mock LLM answers any)
	// only when there is nothing else.
	for _, models := range []bool{false, true} {
		for _, o := range c.Session().ConfigOptions() {
			isModel := o.ID == "model" || o.Category == acp.CategoryModel
			if o.Type != "select" || o.ID == "mode" || o.Category == acp.CategoryMode || isModel != models {
				continue
			}
			current := ""
			_ = json.Unmarshal(o.CurrentValue, &current)
			for _, ch := range o.Choices {
				if ch.Value != current && safeWord(ch.Value) && safeWord(o.ID) {
					return o.ID, ch.Value, offered
				}
			}
		}
	}
	return "", "", offered
}

// safeWord is a value that shows as itself (no SafeText escaping).
func safeWord(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return r < ' ' || r == 0x7f }) < 0
}
