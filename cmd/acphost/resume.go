package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// Continuing a recorded session: --resume, --continue and /resume pick
// its record and point the run at it; the agent loads (replaying its
// history) or resumes it.

// resolveResume points the run at a recorded session: its agent (unless
// one was given) and directory (unless --cwd was).
func (a *app) resolveResume() (state.Record, error) {
	if a.store == nil {
		return state.Record{}, errors.New("--resume needs the session store, which is off (--no-store) or unavailable")
	}
	r, err := a.store.Lookup(a.cfg.resume, dirOrHere(a.cfg.cwd))
	if err != nil {
		return state.Record{}, fmt.Errorf("--resume %s: %w", a.cfg.resume, err)
	}
	return r, a.adopt(r)
}

// adopt points the run at record r, the session it continues: refused when
// another acphost has it open; its agent (unless one was given), directory
// (unless --cwd was) and mode (unless --mode was).
func (a *app) adopt(r state.Record) error {
	if err := openElsewhere(r); err != nil {
		return fmt.Errorf("--resume %s: %w", a.cfg.resume, err)
	}
	if unreachable(r) && r.PID != os.Getpid() {
		a.output.diag(tty.StyleYellow, "session %s may be open in acphost pid %d, which has no control socket to ask; continuing it here", acp.SafeText(r.ID), r.PID)
	}
	remote := !a.cfg.remote.remote() && (r.SSH != "" || r.URL != "" || r.Kube.Set())
	if remote {
		// Reached as before; --ssh-identity and the like come from the
		// command line again, a --url token from --token or the environment,
		// the cluster's credentials from the kubeconfig.
		a.cfg.remote.ssh, a.cfg.remote.url, a.cfg.remote.kube = r.SSH, r.URL, r.Kube
	}
	if a.cfg.agentName == "" && len(a.cfg.agent) == 0 && r.URL == "" {
		a.cfg.agentName = r.Agent
		if r.Agent != "" && r.Agent != agents.Demo {
			def, err := a.cfg.file.Lookup(r.Agent)
			if err != nil {
				return fmt.Errorf("--resume %s: its agent %q: %w", a.cfg.resume, r.Agent, err)
			}
			// The command a named agent runs is the configuration's, never
			// the one a record holds.
			a.cfg.agentEnv, a.cfg.agent = def.EnvList(), def.Command
			a.cfg.mcpServers = agents.MergeMCP(a.cfg.mcpServers, def.MCPServers)
		} else if r.Agent == "" {
			a.cfg.agent = r.Command
		}
	}
	if a.cfg.cwd == "" {
		a.cfg.cwd = r.Cwd
	}
	if a.cfg.mode == "" {
		a.cfg.mode, a.cfg.modeSoft = r.Mode, true
	}
	if remote {
		if err := checkRemote(&a.cfg, os.Stderr); err != nil {
			return fmt.Errorf("--resume %s: %w", a.cfg.resume, err)
		}
	}
	return nil
}

// beginReplay announces the recorded session about to be continued and
// returns what shows its replayed history dimmed (nil without human
// output).
func (a *app) beginReplay(r state.Record) *replay {
	if a.output.out == nil {
		return nil
	}
	what := "continuing session " + acp.SafeText(r.ID)
	if t := tty.OneLine(acp.SafeText(r.Title), 60); t != "" {
		what += " (" + t + ")"
	}
	a.output.out.Line(tty.StyleDim, what)
	return &replay{s: a.output.out}
}

// endReplay closes the replay of a continued session, says how it was
// continued and takes its record as the current one.
func (a *app) endReplay(rp *replay, r state.Record, loaded bool) {
	if rp != nil && loaded {
		rp.end()
	}
	how := "loaded"
	if !loaded {
		how = "resumed (the agent does not replay its history)"
	}
	a.output.note(tty.StyleDim, "session "+how)
	a.live.adopted(r)
}

// loadsSessions reports whether the agent offers session/load, which the
// library prefers over session/resume.
func loadsSessions(client *acphost.ACPClient) bool {
	var caps struct {
		LoadSession bool `json:"loadSession"`
	}
	_ = json.Unmarshal(client.AgentCapabilities(), &caps)
	return caps.LoadSession
}

// openRecorded continues a recorded session on a running agent (/resume):
// session/load (the history is replayed, and shown dimmed) or
// session/resume, whichever the agent offers.
func (a *app) openRecorded(client *acphost.ACPClient, r state.Record) (*acphost.Session, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.startTimeout)
	defer cancel()
	opts := acphost.SessionOptions{Dir: a.cfg.cwd}
	rp := a.beginReplay(r)
	if rp != nil {
		opts.OnUpdate = rp.update
	}
	sess, err := client.LoadSession(ctx, r.ID, opts)
	loaded := true
	if errors.Is(err, acphost.ErrUnsupported) {
		sess, err = client.ResumeSession(ctx, r.ID, opts)
		loaded = false
	}
	if err != nil {
		if errors.Is(err, acphost.ErrUnsupported) {
			return nil, errors.New("the agent offers neither session/load nor session/resume")
		}
		return nil, err
	}
	a.endReplay(rp, r, loaded)
	return sess, nil
}

// pickContinue is --continue: the agent's latest session in this
// directory, the record itself (another agent's session of the same id is
// not it); with none (ok false), a new session starts.
func (a *app) pickContinue() (r state.Record, ok bool) {
	cwd := dirOrHere(a.cfg.cwd)
	var recs []state.Record
	if a.store != nil {
		all, err := a.store.List()
		if err != nil {
			a.output.diag(tty.StyleYellow, "%v", err)
		}
		recs = thisAgent(a.cfg, all)
	}
	if i, err := state.Find(recs, "last", cwd); err == nil {
		a.cfg.resume = recs[i].ID // for what is said about it
		return recs[i], true
	}
	a.output.note(tty.StyleDim, "no earlier session of this agent here: starting a new one")
	return state.Record{}, false
}

// replay shows the history an agent replays while loading a session,
// dimmed: the person's prompts, the agent's answers and its tool calls.
type replay struct {
	s    *tty.Screen
	last acp.UpdateKind
	any  bool
}

func (r *replay) update(u acp.Update) {
	if !u.Replay() {
		return
	}
	switch u := u.(type) {
	case *acp.MessageChunk:
		if u.Kind() == acp.KindAgentThoughtChunk || u.Content.Type != acp.BlockText {
			return
		}
		text := acp.SafeText(u.Content.Text)
		if u.Kind() != r.last {
			r.s.BreakLine()
			if u.Kind() == acp.KindUserMessageChunk {
				text = "› " + text
			}
		}
		r.s.Print(tty.StyleDim, text)
	case *acp.ToolCallUpdate:
		if u.Kind() != acp.KindToolCall {
			return
		}
		kind := tty.OneLine(acp.SafeText(string(u.State.Kind)), 20)
		if kind == "" {
			kind = "tool"
		}
		r.s.Line(tty.StyleDim, "  · "+kind+" "+tty.OneLine(acp.SafeText(u.State.Title), 100))
	default:
		return
	}
	r.last, r.any = u.Kind(), true
}

func (r *replay) end() {
	r.s.BreakLine()
	if !r.any {
		return
	}
	r.s.Line(tty.StyleDim, "── end of the replayed history ──")
}
