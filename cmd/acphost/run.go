package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acphost/acphost"
)

// maxStderrLines is how much of the agent's stderr a failure shows.
const maxStderrLines = 10

// app is one run: an agent, its turns, the user's signals.
type app struct {
	cfg      config
	stdinTTY bool
	in       *lineReader
	out      *screen // human output on stdout; nil with --json
	errs     *screen // diagnostics (and, with --json, questions) on stderr
	sink     sink
	approver *approver
	elicitor *elicitor

	mu          sync.Mutex
	client      *acphost.ACPClient
	startCancel context.CancelFunc
	turnCancel  context.CancelFunc // set while a turn runs
	interrupted bool               // Ctrl-C already cancelled the running turn
	quit        chan struct{}      // closed when a signal asks to exit
	quitDone    chan struct{}      // closed once that signal has closed the agent
	quitCode    int

	failed bool // a turn failed: exit status 1
}

func newApp(cfg config, stdin *os.File, stdout, stderr *os.File) *app {
	a := &app{cfg: cfg, stdinTTY: isTerminal(stdin), in: newLineReader(stdin),
		quit: make(chan struct{}), quitDone: make(chan struct{})}
	a.errs = newScreen(stderr, colorAllowed(stderr), false)
	if cfg.json {
		a.sink = newJSONSink(stdout)
	} else {
		live := isTerminal(stdout) && os.Getenv("TERM") != "dumb"
		a.out = newScreen(stdout, colorAllowed(stdout), live)
		a.sink = newHuman(a.out, cfg.permission, cfg.elicit)
	}
	scr := a.out // questions
	if scr == nil {
		scr = a.errs
	}
	seat := make(chan struct{}, 1) // one question at a time reads stdin
	if cfg.permission == permAsk {
		a.approver = newApprover(a.in, scr, cfg.json, !a.stdinTTY, seat)
	}
	a.elicitor = &elicitor{policy: cfg.elicit, auto: cfg.elicitAuto, values: cfg.elicitValues, json: cfg.json,
		in: a.in, scr: scr, errs: a.errs, echo: !a.stdinTTY, asking: seat}
	return a
}

// diag prints a diagnostic on stderr, on a line of its own.
func (a *app) diag(code, format string, args ...any) {
	if a.out != nil {
		a.out.breakLine() // stdout and stderr often share a terminal
	}
	a.errs.line(code, "acphost: "+fmt.Sprintf(format, args...))
}

func (a *app) options() (acphost.ACPOptions, io.Closer, error) {
	path, args, env, err := agentCommand(a.cfg)
	if err != nil {
		return acphost.ACPOptions{}, nil, err
	}
	opts := acphost.ACPOptions{
		Command:                path,
		Args:                   args,
		Env:                    env,
		Dir:                    a.cfg.cwd,
		Mode:                   a.cfg.mode,
		PermissionPresentation: a.cfg.presentation,
		TurnTimeout:            a.cfg.timeout,
		OnElicitation:          a.elicitor.answer,
		OnElicitationComplete:  a.sink.elicitationComplete,
	}
	switch a.cfg.permission {
	case permAsk:
		opts.OnPermission = a.approver.decide
	case permAllow:
		opts.OnPermission = acphost.AllowAll()
	case permReject:
		opts.OnPermission = acphost.RejectAll()
	case permPlan:
		// The client rejects whatever can change anything before asking
		// OnPermission, and refuses fs writes; reads get the default
		// (allow once).
		opts.PlanMode = true
	}
	if a.cfg.fs {
		opts.FS = &acphost.FSOptions{Read: true, Write: true}
	}
	if a.cfg.remote.remote() {
		if err := a.remoteOptions(&opts); err != nil {
			return opts, nil, err
		}
	}
	if len(a.cfg.writable) > 0 {
		opts.Confine = &acphost.Confinement{Writable: a.cfg.writable}
	}
	var closer io.Closer
	switch a.cfg.stderrPath {
	case "":
	case "-":
		opts.Stderr = os.Stderr
	default:
		f, err := os.Create(a.cfg.stderrPath)
		if err != nil {
			return opts, nil, fmt.Errorf("--stderr: %w", err)
		}
		opts.Stderr, closer = f, f
	}
	return opts, closer, nil
}

func (a *app) run() int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go a.handleSignals(sigs, done)
	defer func() {
		if a.quitting() {
			<-a.quitDone // exit only once the agent is closed
		}
	}()

	opts, stderrFile, err := a.options()
	if err != nil {
		a.diag(styleRed, "%v", err)
		if errors.Is(err, acphost.ErrLinkLost) {
			return exitFailed // the remote host could not be reached: the agent failed to start
		}
		return exitUsage
	}
	if stderrFile != nil {
		defer stderrFile.Close() // after the client is closed, below
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.startCancel = cancel
	a.mu.Unlock()
	client, err := acphost.Start(ctx, opts)
	a.mu.Lock()
	a.client = client
	quitting := a.quitCode != 0
	a.mu.Unlock()
	if err != nil {
		if quitting {
			return a.quitCode
		}
		a.reportAgentError("could not start the agent", err)
		return exitFailed
	}
	defer a.closeClient(client)
	if quitting {
		return a.quitCode
	}
	a.greet(client)

	if len(a.cfg.prompts) > 0 {
		for _, p := range a.cfg.prompts {
			if a.quitting() || !a.turn(client, p, !a.cfg.json) {
				break
			}
		}
	} else {
		for {
			p, ok := a.readPrompt(client)
			if !ok || !a.turn(client, p, !a.cfg.json && !a.stdinTTY) {
				break
			}
		}
	}
	a.closeClient(client)
	switch {
	case a.quitting():
		return a.quitCode
	case a.failed:
		return exitFailed
	}
	return exitOK
}

// closeClient closes the agent. An agent that had died after its last
// turn is reported but does not change the exit status: every turn ended.
func (a *app) closeClient(client *acphost.ACPClient) {
	err := client.Close()
	if err != nil && !a.failed && !a.quitting() {
		a.reportAgentError("the agent had exited", err)
	}
}

// greet names the agent and session at the start of human output.
func (a *app) greet(client *acphost.ACPClient) {
	if a.out == nil {
		return
	}
	info := client.AgentInfo()
	name := strings.TrimSpace(acphost.SafeText(info.Title))
	if name == "" {
		name = strings.TrimSpace(acphost.SafeText(info.Name))
	}
	if name == "" {
		name = "agent"
	}
	if v := acphost.SafeText(info.Version); v != "" {
		name += " " + v
	}
	if len(a.cfg.agent) == 0 {
		name += " (built-in demo)"
	}
	parts := []string{"acphost", name, "session " + acphost.SafeText(client.SessionID()), "permission: " + a.cfg.permission}
	a.out.line(styleDim, strings.Join(parts, " · "))
}

// readPrompt reads the next non-empty line of stdin, or reports the end:
// end of input, a signal, or the agent's death (reported here).
func (a *app) readPrompt(client *acphost.ACPClient) (string, bool) {
	scr := a.out
	if scr == nil && a.stdinTTY {
		scr = a.errs
	}
	for {
		if scr != nil && a.stdinTTY {
			scr.prompt(scr.style(styleBold, ">"))
		}
		select {
		case line, ok := <-a.in.C():
			if !ok {
				if scr != nil {
					scr.breakLine()
				}
				return "", false
			}
			if scr != nil && a.stdinTTY {
				scr.answered("", false)
			}
			if strings.TrimSpace(line) != "" {
				return line, true
			}
		case <-a.quit:
			return "", false
		case <-client.Done():
			a.failed = true
			a.reportAgentError("the agent failed", client.Err())
			return "", false
		}
	}
}

// turn runs one prompt and reports whether the next may run.
func (a *app) turn(client *acphost.ACPClient, prompt string, echo bool) bool {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.turnCancel, a.interrupted = cancel, false
	a.mu.Unlock()

	a.sink.beginTurn(prompt, echo)
	start := time.Now()
	// Ctrl-C cancels ctx rather than calling client.Cancel: Cancel is lost
	// when it comes before the library has registered the turn.
	resp, err := client.GenerateStream(ctx, acphost.Request{Prompt: prompt}, a.sink.event)
	r := turnResult{resp: resp, err: err, elapsed: time.Since(start), stop: resp.StopReason}

	a.mu.Lock()
	a.turnCancel = nil
	interrupted := a.interrupted
	a.mu.Unlock()

	quitting := a.quitting()
	cancelled := errors.Is(err, context.Canceled) && interrupted && client.Err() == nil
	if cancelled && r.stop == "" {
		r.stop = acphost.StopCancelled // cancelled before the agent saw it
	}
	r.userCancel = cancelled && !errors.Is(err, acphost.ErrCancelUnconfirmed)
	a.sink.endTurn(r)

	switch {
	case err == nil:
		return true
	case quitting:
		return false
	case errors.Is(err, acphost.ErrTurnTimeout):
		a.failed = true
		a.diag(styleRed, "the turn timed out after %v", a.cfg.timeout)
		a.noteUnconfirmed(err)
		return true
	case cancelled:
		a.noteUnconfirmed(err)
		return true
	case client.Err() != nil || dead(err):
		a.failed = true
		a.reportAgentError("the agent failed", err)
		return false
	default:
		a.failed = true
		a.diag(styleRed, "the turn failed: %s", errMsg(err))
		return true
	}
}

func (a *app) noteUnconfirmed(err error) {
	if errors.Is(err, acphost.ErrCancelUnconfirmed) {
		a.diag(styleYellow, "the agent did not confirm the cancellation; it will be restarted before the next turn (the conversation is lost)")
	}
}

// errMsg is err's message, safe to print, without the library's prefix
// (ours is there already).
func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return acphost.SafeText(strings.TrimPrefix(err.Error(), "acphost: "))
}

// dead reports errors that mean the agent connection is gone.
func dead(err error) bool {
	return errors.Is(err, acphost.ErrAgentExited) || errors.Is(err, acphost.ErrProtocol) || errors.Is(err, acphost.ErrClosed)
}

// reportAgentError prints why the agent failed and, unless its stderr goes
// elsewhere (--stderr), the last lines it wrote there.
func (a *app) reportAgentError(what string, err error) {
	if err == nil {
		err = errors.New("unknown error")
	}
	a.diag(styleRed, "%s: %s", what, errMsg(err))
	if a.cfg.stderrPath != "" {
		return
	}
	var tail string
	var exitErr *acphost.ExitError
	var protoErr *acphost.ProtocolError
	switch {
	case errors.As(err, &exitErr):
		tail = exitErr.Stderr
	case errors.As(err, &protoErr):
		tail = protoErr.Stderr
	}
	lines := strings.Split(strings.TrimRight(acphost.SafeText(tail), " \t\r\n"), "\n")
	if len(lines) < 2 { // none, or the one line the message already names
		return
	}
	if len(lines) > maxStderrLines {
		lines = lines[len(lines)-maxStderrLines:]
	}
	var b strings.Builder
	b.WriteString(a.errs.style(styleDim, "agent stderr (last lines):") + "\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	if a.out != nil {
		a.out.breakLine()
	}
	a.errs.block(b.String())
}

// handleSignals implements Ctrl-C and SIGTERM until done is closed.
func (a *app) handleSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			a.onSignal(sig)
		}
	}
}

func (a *app) onSignal(sig os.Signal) {
	a.mu.Lock()
	if sig == os.Interrupt && a.turnCancel != nil && !a.interrupted && a.quitCode == 0 {
		a.interrupted = true
		cancel := a.turnCancel
		a.mu.Unlock()
		cancel()
		a.diag(styleYellow, "cancelling the turn (Ctrl-C again to quit)")
		return
	}
	if a.quitCode != 0 {
		a.mu.Unlock()
		return
	}
	a.quitCode = exitInterrupt
	if sig != os.Interrupt {
		a.quitCode = exitTerm
	}
	close(a.quit)
	client, startCancel := a.client, a.startCancel
	a.mu.Unlock()
	a.diag(styleYellow, "closing the agent")
	if startCancel != nil {
		startCancel()
	}
	if client != nil {
		// A running turn fails with ErrClosed, and the approval prompt's
		// ctx ends.
		_ = client.Close()
	}
	close(a.quitDone)
}

func (a *app) quitting() bool {
	select {
	case <-a.quit:
		return true
	default:
		return false
	}
}
