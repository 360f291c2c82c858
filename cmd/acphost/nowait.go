package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// envDetached marks the acphost a --no-wait started in the background:
// there --no-wait is ignored, and the prompts run as -p prompts do.
const envDetached = "ACPHOST_DETACHED"

// detached is set (and envDetached removed from the environment) by main
// in the background acphost a --no-wait started.
var detached bool

// noWait is acphost --resume ID|last -p TEXT... --no-wait: the prompts go
// to the acphost that has the session open, over its control socket,
// queued as prompts typed during a turn are; with none, an acphost is
// started in the background (its own session, stdio to a log file in the
// state directory) to run them and exit. It returns once the prompts are
// queued, or the background acphost has the session open.
func noWait(cfg config, stdout, stderr io.Writer) int {
	st, err := state.Open()
	if err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitFailed
	}
	cwd := dirOrHere(cfg.cwd)
	if cfg.resume == "" { // -s NAME: the session must have been started
		all, err := st.List()
		if err != nil {
			fmt.Fprintln(stderr, "acphost:", err)
			return exitFailed
		}
		var probe state.Record
		probe.Agent, probe.Command = recordAgent(cfg)
		r, ok := state.FindNamed(all, probe, cfg.sessionName, cwd)
		if !ok {
			fmt.Fprintf(stderr, "acphost: --no-wait -s %s: %s has no session of that name here yet; start it with acphost -s %s (without --no-wait)\n",
				cfg.sessionName, agentName(cfg), cfg.sessionName)
			return exitUsage
		}
		cfg.resume = r.ID
	}
	rec, err := st.Lookup(cfg.resume, cwd)
	if err != nil {
		fmt.Fprintf(stderr, "acphost: --resume %s: %v\n", cfg.resume, err)
		return exitUsage
	}
	if code, done := handOver(cfg, st, rec, cfg.prompts, stdout, stderr); done {
		return code
	}
	if rec.ID == "last" {
		// --resume=last (here, and to the background acphost) means the
		// latest session in the directory.
		fmt.Fprintln(stderr, `acphost: --no-wait: the agent named its session "last", which a background acphost cannot be told apart from the latest session; run acphost --resume with a prefix of it in a terminal`)
		return exitFailed
	}
	// Nobody has the session open. One background acphost at a time is
	// started, so two --no-wait at once never open the session twice:
	// the second finds the first one's socket.
	dir, err := control.RunDir(st.Dir)
	if err != nil {
		fmt.Fprintln(stderr, "acphost: --no-wait:", err)
		return exitFailed
	}
	unlock, err := state.LockPath(filepath.Join(dir, "spawn.lock"))
	if err != nil {
		fmt.Fprintln(stderr, "acphost: --no-wait:", err)
		return exitFailed
	}
	defer unlock()
	if rec, err = st.Lookup(rec.ID, cwd); err != nil {
		fmt.Fprintf(stderr, "acphost: --resume %s: %v\n", cfg.resume, err)
		return exitFailed
	}
	if code, done := handOver(cfg, st, rec, cfg.prompts, stdout, stderr); done {
		return code
	}
	if unreachable(rec) {
		fmt.Fprintf(stderr, "acphost: --no-wait: acphost pid %d has session %s open but has no control socket; type the prompt there (or end it first)\n",
			rec.PID, acp.SafeText(rec.ID))
		return exitFailed
	}
	return startDetached(cfg, st, rec, cwd, stdout, stderr)
}

// unreachable reports whether a live acphost has rec's session open
// without a control socket (it could not make one): nothing can be handed
// to it, and another must not open the session too.
func unreachable(rec state.Record) bool {
	return rec.PID != 0 && rec.Control == "" && state.ProcessAlive(rec.PID)
}

// handOver queues the prompts in the acphost that has rec's session open.
// done is false when there is none (nothing was queued).
func handOver(cfg config, st *state.Store, rec state.Record, prompts []string, stdout, stderr io.Writer) (code int, done bool) {
	sid := acp.SafeText(rec.ID)
	for i, p := range prompts {
		rep, err := control.Ask(rec.Control, control.Request{Op: control.OpPrompt, Session: rec.ID, Text: p})
		if i == 0 && (errors.Is(err, control.ErrNoController) || rep.Ending) {
			if rep.Ending {
				waitReleased(st, rec, rep.PID)
			}
			return 0, false
		}
		if err != nil {
			fmt.Fprintf(stderr, "acphost: --no-wait: session %s: %s", sid, tty.ErrMsg(err))
			if i > 0 {
				fmt.Fprintf(stderr, " (the first %d prompt(s) were queued)", i)
			}
			fmt.Fprintln(stderr)
			return exitFailed, true
		}
		report(cfg, stdout, map[string]any{"type": "queued", "sessionId": rec.ID, "pid": rep.PID, "place": rep.Queued, "prompt": p},
			fmt.Sprintf("queued in session %s (acphost pid %d; place %d in its queue): %s", sid, rep.PID, rep.Queued, tty.OneLine(acp.SafeText(p), 60)))
	}
	return exitOK, true
}

// waitReleased waits (a little) for an ending acphost to let go of the
// session's record, so that the one started next is not undone by it.
func waitReleased(st *state.Store, rec state.Record, pid int) {
	deadline := time.Now().Add(control.Deadline)
	for time.Now().Before(deadline) {
		r, err := st.Lookup(rec.ID, rec.Cwd)
		if err != nil || r.PID != pid {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// startDetached starts acphost --resume ID with the same flags and prompts
// in the background, and returns once it has the session open (or has
// failed to).
func startDetached(cfg config, st *state.Store, rec state.Record, cwd string, stdout, stderr io.Writer) int {
	sid := acp.SafeText(rec.ID)
	attr, err := detachAttr()
	if err != nil {
		fmt.Fprintf(stderr, "acphost: --no-wait: no acphost has session %s open, and %v; run acphost --resume %s in another terminal, then --no-wait again\n", sid, err, sid)
		return exitFailed
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "acphost: --no-wait:", err)
		return exitFailed
	}
	logf, err := st.OpenLog(rec.ID)
	if err != nil {
		fmt.Fprintln(stderr, "acphost: --no-wait:", err)
		return exitFailed
	}
	defer logf.Close()
	logPath := logf.Name()
	cmd := exec.Command(exe, detachedArgs(cfg, rec.ID)...)
	// cmd.Dir stays this one: the command line is read again there, and a
	// relative path in it (--permission-policy, --stderr, --cwd) means what
	// it meant here, never a file in the session's directory, which the
	// agent writes.
	cmd.Stdout, cmd.Stderr = logf, logf // stdin: the null device
	cmd.Env = append(os.Environ(), envDetached+"=1")
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "acphost: --no-wait: starting acphost in the background:", err)
		return exitFailed
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(cfg.startTimeout + control.Deadline)
	for {
		if r, err := st.Lookup(rec.ID, cwd); err == nil && r.PID == pid && r.Control != "" {
			report(cfg, stdout, map[string]any{"type": "background", "sessionId": rec.ID, "pid": pid, "prompts": len(cfg.prompts), "log": logPath, "ended": false},
				fmt.Sprintf("no acphost had session %s open: started acphost pid %d in the background to run %d prompt(s), then exit (log: %s; acphost cancel %s stops a turn)",
					sid, pid, len(cfg.prompts), logPath, sid))
			return exitOK
		}
		select {
		case err := <-exited:
			if err == nil { // so quick it has done it all already
				report(cfg, stdout, map[string]any{"type": "background", "sessionId": rec.ID, "pid": pid, "prompts": len(cfg.prompts), "log": logPath, "ended": true},
					fmt.Sprintf("no acphost had session %s open: started acphost pid %d in the background, which ran %d prompt(s) and ended (log: %s)",
						sid, pid, len(cfg.prompts), logPath))
				return exitOK
			}
			fmt.Fprintf(stderr, "acphost: --no-wait: the background acphost for session %s ended (%v) before it had the session open; its log, %s:\n%s", sid, err, logPath, logTail(logPath))
			return exitFailed
		case <-time.After(50 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "acphost: --no-wait: the background acphost (pid %d) has not opened session %s yet; it goes on (log: %s)\n", pid, sid, logPath)
			return exitFailed
		}
	}
}

// detachedArgs is the command line for the background acphost: the one
// given, with --resume naming the session exactly (a later flag wins).
func detachedArgs(cfg config, id string) []string {
	at := cfg.flagEnd
	if at > 0 && cfg.args[at-1] == "--" {
		at--
	}
	args := append([]string{}, cfg.args[:at]...)
	args = append(args, "--resume="+id)
	return append(args, cfg.args[at:]...)
}

// logTail is the last lines of a log file, for an error.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(acp.SafeText(string(b)), "\n"), "\n")
	if len(lines) > maxStderrLines {
		lines = lines[len(lines)-maxStderrLines:]
	}
	return "  " + strings.Join(lines, "\n  ") + "\n"
}

// backgroundIdleTimeout ends a background acphost's turn in which the agent
// sent nothing for this long.
const backgroundIdleTimeout = 15 * time.Minute

// maxBackgroundLogBytes bounds what a background acphost writes into its
// log (its output and, with --stderr -, its agent's stderr).
const maxBackgroundLogBytes = 8 << 20

// cappedLog is a background acphost's log: its output and stderr, shared,
// cut after max bytes with a last line saying so (writes past it are
// dropped, reported as written so nothing upstream fails).
type cappedLog struct {
	mu   sync.Mutex
	w    io.Writer
	left int
	cut  bool
}

func newCappedLog(w io.Writer, max int) *cappedLog { return &cappedLog{w: w, left: max} }

func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return len(p), nil
	}
	if len(p) <= c.left {
		c.left -= len(p)
		return c.w.Write(p)
	}
	c.cut = true
	_, err := c.w.Write(append(p[:c.left:c.left], fmt.Sprintf("\n… (log cut at %d bytes: what follows is not kept)\n", maxBackgroundLogBytes)...))
	return len(p), err
}

// report says what --no-wait did: a JSON line with --json (ev), else the
// sentence.
func report(cfg config, stdout io.Writer, ev map[string]any, human string) {
	if !cfg.json {
		fmt.Fprintln(stdout, human)
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		fmt.Fprintln(stdout, human)
		return
	}
	fmt.Fprintf(stdout, "%s\n", b)
}
