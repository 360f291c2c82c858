package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/terminal"
)

// TerminalOptions turns on the host's terminal service (terminal/create,
// output, wait_for_exit, kill, release), advertised only when set. Commands
// run in the session's directory (or a cwd inside its roots), each in its
// own process group and, on Linux, its own cgroup (see ACPOptions.Process.Contain:
// a daemon a command forks dies with its terminal), without a shell unless
// Shell is set. Terminals the agent leaves behind are killed when the
// client closes; a host killed without Close takes their commands with it
// (Linux, FreeBSD).
type TerminalOptions struct {
	// Shell, e.g. {"/bin/sh", "-c"}, runs each command through a shell:
	// command and args are joined with spaces. Nil runs the command itself.
	Shell []string
	// OnCommand, if set, approves (nil) or refuses (an error) each command
	// before it starts. PlanMode refuses every command before asking.
	OnCommand func(ctx context.Context, cmd *TerminalCommand) error
	// KillGrace is the time between SIGTERM and SIGKILL on terminal/kill.
	// Default 2s.
	KillGrace time.Duration
	// Confine has the kernel confine each command, and every process it
	// starts, as Confinement describes, writable beneath the client's
	// roots (ACPOptions.Dir and FSOptions.AdditionalDirs) and Writable.
	// With ACPOptions.Process.Confine set, commands are always confined, like the
	// agent, to Confinement.Writable and Writable (the roots are not
	// implied): an agent's shell commands run by the host are still its
	// own. Where Landlock is missing, Start fails with
	// ErrUnsupported rather than run commands unconfined.
	Confine bool
	// Writable lists more directories a confined command may write
	// beneath, such as a build cache or a temporary directory.
	Writable []string
	// MaxOutputBytes caps the output kept per terminal, whatever the
	// agent's outputByteLimit (the smaller one wins; the agent's 0, "no
	// limit", gets this one): the tail is kept, truncated is reported.
	// Default 1 MiB: about 250k tokens of text, more than any model's
	// context window takes from one command, while MaxTerminals of them
	// (the buffer holds up to twice the cap) stay within tens of MiB.
	MaxOutputBytes int
	// MaxTerminals caps the terminals an agent has live at once
	// (created and not released, or released and still running): past it
	// terminal/create fails with an error the agent sees (-32602),
	// released ones still ending are killed at once to make room. Default
	// 16.
	MaxTerminals int
}

// Defaults of TerminalOptions.
const (
	defaultTerminalOutputBytes = 1 << 20
	defaultMaxTerminals        = 16
)

// TerminalCommand is a command the agent asks the host to run.
type TerminalCommand struct {
	SessionID string
	Command   string
	Args      []string
	Env       []string // "KEY=value"
	Dir       string
}

type envVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type createParams struct {
	SessionID       string   `json:"sessionId"`
	Command         string   `json:"command"`
	Args            []string `json:"args"`
	Env             []envVar `json:"env"`
	Cwd             string   `json:"cwd"`
	OutputByteLimit int      `json:"outputByteLimit"`
}

type terminalRef struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type exitStatus struct {
	ExitCode *int    `json:"exitCode"`
	Signal   *string `json:"signal"`
}

func toExitStatus(s terminal.ExitStatus) exitStatus {
	e := exitStatus{ExitCode: s.Code}
	if s.Signal != "" {
		sig := s.Signal
		e.Signal = &sig
	}
	return e
}

// terminalService serves terminal/* for one agent with what it needs: the
// options, the session's directory and roots, the commands' manager, plan
// mode, and a way to run the hook as the agent's callback.
type terminalService struct {
	opts     *TerminalOptions
	dir      string
	roots    *sandbox.Roots
	terms    *terminal.Manager
	planMode func() bool
	hook     hookRunner
}

// handler returns the handler of a terminal method, nil for one not
// served.
func (t *terminalService) handler(method string) func(context.Context, json.RawMessage) (any, error) {
	if t.opts == nil {
		return nil
	}
	switch method {
	case "terminal/create":
		return t.create
	case "terminal/output":
		return t.withTerminal(func(_ context.Context, id string) (any, error) {
			out, truncated, exit, err := t.terms.Output(id)
			if err != nil {
				return nil, err
			}
			res := struct {
				Output     string      `json:"output"`
				Truncated  bool        `json:"truncated"`
				ExitStatus *exitStatus `json:"exitStatus,omitempty"`
			}{Output: out, Truncated: truncated}
			if exit != nil {
				es := toExitStatus(*exit)
				res.ExitStatus = &es
			}
			return res, nil
		})
	case "terminal/wait_for_exit":
		return t.withTerminal(func(ctx context.Context, id string) (any, error) {
			st, err := t.terms.WaitForExit(ctx, id)
			if err != nil {
				return nil, err
			}
			return toExitStatus(st), nil
		})
	case "terminal/kill":
		return t.withTerminal(func(_ context.Context, id string) (any, error) { return struct{}{}, t.terms.Kill(id) })
	case "terminal/release":
		return t.withTerminal(func(_ context.Context, id string) (any, error) { return struct{}{}, t.terms.Release(id) })
	}
	return nil
}

func (t *terminalService) withTerminal(f func(ctx context.Context, id string) (any, error)) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var ref terminalRef
		if err := json.Unmarshal(raw, &ref); err != nil {
			return nil, &RPCError{Code: acp.CodeInvalidParams, Message: err.Error()}
		}
		res, err := f(ctx, ref.TerminalID)
		if err == terminal.ErrNotFound {
			return nil, &RPCError{Code: acp.CodeResourceNotFound, Message: "unknown terminal " + ref.TerminalID}
		}
		return res, err
	}
}

func (t *terminalService) create(ctx context.Context, raw json.RawMessage) (any, error) {
	var p createParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &RPCError{Code: acp.CodeInvalidParams, Message: err.Error()}
	}
	cmd := &TerminalCommand{SessionID: p.SessionID, Command: p.Command, Args: p.Args, Dir: t.dir}
	for _, e := range p.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	if p.Cwd != "" {
		dir, err := t.roots.Resolve(p.Cwd)
		if err != nil {
			return nil, err
		}
		cmd.Dir = dir
	}
	if t.planMode() {
		return nil, fmt.Errorf("%w: plan mode: no commands (%s)", ErrRefused, p.Command)
	}
	if hook := t.opts.OnCommand; hook != nil {
		var err error
		if perr := t.hook(p.SessionID, "OnCommand", func() { err = hook(ctx, cmd) }); perr != nil {
			err = perr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, err := t.terms.Create(p.SessionID, terminal.Spec{Command: cmd.Command, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, OutputByteLimit: p.OutputByteLimit})
	if errors.Is(err, terminal.ErrTooMany) {
		return nil, fmt.Errorf("%w: %w (TerminalOptions.MaxTerminals)", ErrRefused, err)
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"terminalId": id}, nil
}

func newTerminals(opts *ACPOptions, roots *sandbox.Roots) *terminal.Manager {
	o := opts.Terminal
	if o == nil {
		return nil
	}
	t := terminal.Options{Shell: o.Shell, KillGrace: o.KillGrace, MaxOutputBytes: o.MaxOutputBytes, MaxTerminals: o.MaxTerminals}
	if t.MaxOutputBytes <= 0 {
		t.MaxOutputBytes = defaultTerminalOutputBytes
	}
	if t.MaxTerminals <= 0 {
		t.MaxTerminals = defaultMaxTerminals
	}
	terminalContain(opts, &t)
	switch {
	case opts.Process.Confine != nil: // the agent's commands are confined as it is
		t.Confine, t.Writable = true, append(slices.Clone(opts.Process.Confine.Writable), o.Writable...)
	case o.Confine:
		t.Confine, t.Writable = true, append(roots.Dirs(), o.Writable...)
	}
	return terminal.NewManager(t)
}
