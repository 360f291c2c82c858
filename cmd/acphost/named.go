package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/cmd/acphost/internal/worktree"
	"github.com/acphost/acphost/fakeagent"
)

// Named sessions (-s NAME) and worktrees (--worktree [NAME]): the first
// run with a name starts the session, later ones continue it, as acpx's
// "ensure"; --worktree starts the session in a git worktree of its own.

// worktreeFlag is --worktree [NAME]: a boolean flag that may carry a
// name (--worktree=NAME; worktreeValue turns --worktree NAME into that).
type worktreeFlag struct {
	on   bool
	name string
}

func (w *worktreeFlag) String() string {
	if w == nil || !w.on {
		return ""
	}
	return w.name
}

func (w *worktreeFlag) Set(v string) error {
	switch v {
	case "true":
		w.on, w.name = true, ""
	case "false":
		w.on, w.name = false, ""
	default:
		if err := worktree.ValidName(v); err != nil {
			return err
		}
		w.on, w.name = true, v
	}
	return nil
}

func (w *worktreeFlag) IsBoolFlag() bool { return true }

// worktreeValue rewrites "--worktree NAME" (NAME not a flag) into
// "--worktree=NAME", before a "--": the flag package gives a boolean flag
// no separate value.
func worktreeValue(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--worktree" || a == "-worktree") && i+1 < len(args) && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") {
			out = append(out, "--worktree="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// checkNamed checks -s and --worktree against the rest of the command line.
func checkNamed(cfg *config) error {
	if cfg.sessionName != "" {
		if err := state.ValidName(cfg.sessionName); err != nil {
			return fmt.Errorf("-s %q: %w", cfg.sessionName, err)
		}
		switch {
		case cfg.resume != "" && detached:
			// The background acphost a --no-wait -s NAME started: it is
			// told the session's id with --resume.
		case cfg.resume != "" || cfg.continueLast:
			return errors.New("-s NAME picks the session itself: it cannot be combined with --resume or --continue")
		case cfg.noStore:
			return errors.New("-s NAME finds the session in the session store: it cannot be combined with --no-store")
		case cfg.remote.remote():
			return errors.New("-s NAME names a session of a local agent; it cannot be combined with --ssh or --url")
		}
	}
	if cfg.worktree.on {
		switch {
		case cfg.resume != "" || cfg.continueLast || cfg.noWait:
			return errors.New("--worktree starts a session in a new worktree: it cannot be combined with --resume, --continue or --no-wait (a continued session runs where it ran)")
		case cfg.noStore:
			return errors.New("--worktree records the worktree in the session store, so that acphost sessions rm can remove it: it cannot be combined with --no-store")
		case cfg.remote.remote():
			return errors.New("--worktree makes a worktree on this machine: it cannot be combined with --ssh or --url")
		}
	}
	return nil
}

// named is what the run knows of its session's name and worktree, which
// record writes into the session's record.
type named struct {
	id       string // the session they belong to, once it opened
	name     string
	worktree *state.Worktree
	made     *worktree.Worktree // the worktree this run made (removed again if the agent does not start)
}

// resolveNamed is -s NAME: the record of this agent's session NAME in this
// directory, adopted (ok true), or none (a new session will be started and
// named). With --worktree and no such session, the worktree is made and
// the run pointed at it.
func (a *app) resolveNamed() (r state.Record, ok bool, err error) {
	name := a.cfg.sessionName
	if name != "" {
		if a.store == nil {
			return r, false, fmt.Errorf("-s %s: the session store is unavailable", name)
		}
		all, err := a.store.List()
		if err != nil {
			return r, false, fmt.Errorf("-s %s: %w", name, err)
		}
		var probe state.Record
		probe.Agent, probe.Command = recordAgent(a.cfg)
		if r, ok = state.FindNamed(all, probe, name, dirOrHere(a.cfg.cwd)); ok {
			if a.cfg.worktree.on && r.Worktree == nil {
				return r, false, fmt.Errorf("-s %s: that session runs in %s, not in a worktree: --worktree starts a new session, so give it another name", name, acp.SafeText(r.Cwd))
			}
			if r.Worktree != nil {
				if _, err := os.Stat(r.Cwd); err != nil {
					return r, false, fmt.Errorf("-s %s: its worktree %s is gone (acphost sessions rm %s forgets the session)", name, acp.SafeText(r.Cwd), name)
				}
			}
			a.cfg.resume = r.ID // what adopt's messages name
			return r, true, a.adopt(r)
		}
	}
	if a.cfg.worktree.on {
		if a.store == nil {
			return r, false, errors.New("--worktree: the session store is unavailable, and the worktree would not be recorded")
		}
		wname := a.cfg.worktree.name
		if wname == "" {
			wname = worktree.DefaultName(name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.startTimeout)
		defer cancel()
		w, err := worktree.Create(ctx, dirOrHere(a.cfg.cwd), wname)
		if err != nil {
			return r, false, fmt.Errorf("--worktree: %w", err)
		}
		a.named.made = &w
		a.named.worktree = &state.Worktree{Path: w.Path, Branch: w.Branch, Base: w.Base, Repo: w.Repo, From: dirOrHere(a.cfg.cwd)}
		a.cfg.cwd = w.Dir
		a.output.note(tty.StyleDim, fmt.Sprintf("worktree %s on branch %s (from %s)", acp.SafeText(w.Path), acp.SafeText(w.Branch), shortCommit(w.Base)))
	}
	a.named.name = name
	return r, false, nil
}

// unmake removes the worktree this run made when no session came to live
// in it (the agent did not start).
func (a *app) unmake() {
	w := a.named.made
	if w == nil || a.named.id != "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.startTimeout)
	defer cancel()
	if _, err := worktree.Remove(ctx, w.Repo, w.Path, w.Branch, w.Base); err != nil {
		a.output.diag(tty.StyleYellow, "the worktree %s was left: %v", acp.SafeText(w.Path), err)
	}
}

// opened notes the session that the name and worktree belong to: the
// first one this run opens.
func (a *app) opened(id string) {
	if a.named.id == "" && (a.named.name != "" || a.named.worktree != nil) {
		a.named.id = id
	}
}

// stampNamed writes the run's name and worktree into r, the record of its
// named session.
func (a *app) stampNamed(r *state.Record) {
	if a.named.id == "" || r.ID != a.named.id {
		return
	}
	if a.named.name != "" {
		r.Name = a.named.name
	}
	if a.named.worktree != nil {
		r.Worktree = a.named.worktree
	}
}

// shortCommit is a commit id's first 12 digits.
func shortCommit(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// demoHistoryBytes bounds the built-in demo agent's history file: past
// it, the file is started afresh (the sessions it held can then no longer
// be continued, which the demo agent says, as a real agent would).
const demoHistoryBytes = 4 << 20

// demoRemembers makes the built-in demo agent keep its sessions as real
// agents do, so that -s NAME, --resume and /resume work on it: it
// advertises session/load (replaying the conversation) and
// session/resume, keeps each session's history in demo-history.ndjson in
// the state directory (in memory with --no-store), and refuses a session
// it has no history of.
func demoRemembers(script *fakeagent.Script, noStore bool) {
	script.AgentCapabilities = json.RawMessage(`{"loadSession":true,"sessionCapabilities":{"resume":{}},` +
		`"promptCapabilities":{"image":true,"embeddedContext":true}}`)
	script.ForgetSessions = true
	if noStore {
		return
	}
	dir, err := state.Dir()
	if err != nil || state.PrivateDir(dir) != nil {
		return // the store says why, when it is opened
	}
	path := filepath.Join(dir, "demo-history.ndjson")
	if fi, err := os.Lstat(path); err == nil && (!fi.Mode().IsRegular() || fi.Size() > demoHistoryBytes) {
		_ = os.Remove(path)
	}
	script.HistoryFile = path
}
