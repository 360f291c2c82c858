package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/configopt"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/policy"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/kube"
)

// app is one run: an agent, its turns, the user's signals. It holds the
// run's configuration, its input and the outcome of its turns, and the
// parts that keep the rest: what it shows (output), how it answers
// permission requests (permissions) and elicitations (elicitor), what it
// has open (live), what the person's interruptions do (signals), the line
// editor (editor) and where the agent's stderr and wire go (streams). The
// parts are handed what they need; none of them knows the app.
type app struct {
	cfg      config
	stdinTTY bool
	in       *tty.Inbox
	store    *state.Store // nil: sessions are not recorded
	cwd      string       // the session's directory, absolute ("" for a remote agent's default)

	output    *output
	perms     *policy.Permissions
	elicitor  *ask.Elicitor
	live      *liveSession
	signals   *signals
	editor    *lineEditor // the line editor at an interactive prompt, nil without one
	streams   agentStreams
	humanWait ask.Wait // the running turn's wait for the person

	kube  *kube.Transport // the agent's pods with --kube-image or --kube-warm-pool, else nil
	named named           // -s NAME and --worktree: the session they belong to

	recovers bool // the client restarts a crashed agent (a chat at a terminal)
	failed   bool // a turn failed: exit status 1
	authGood bool // a turn went through: no login is missing (see reportNeedsLogin)

	shadowNoted map[string]bool // the agent's commands acphost's hide, said once each (chat goroutine)
}

func newApp(cfg config, stdin *os.File, stdout, stderr *os.File) *app {
	a := &app{cfg: cfg, stdinTTY: tty.IsTerminal(stdin), in: tty.NewInbox(stdin),
		output: &output{}, live: &liveSession{}}
	o := a.output
	a.signals = newSignals(a.live, o, a.in)
	a.perms = &policy.Permissions{Permission: cfg.permission, NonInteractive: cfg.nonInteractive, NoOneToAsk: cfg.noOneToAsk,
		Policy: cfg.policy, JSON: cfg.json, Note: o.note, FailTurn: a.live.failTurn, Wait: &a.humanWait}
	var outW, errW io.Writer = stdout, stderr
	if detached { // a background acphost: its log is bounded
		log := newCappedLog(stdout, maxBackgroundLogBytes)
		outW, errW, a.streams.log = log, log, log
	}
	o.errs = tty.NewScreen(errW, tty.ColorAllowed(stderr), false)
	switch {
	case cfg.json:
		js := render.NewJSONSink(outW)
		js.Decision = a.perms.Decision
		js.Elicit = cfg.elicit
		o.sink, o.json = js, js
	case cfg.quiet:
		o.sink = render.NewQuietSink(outW)
	default:
		live := tty.IsTerminal(stdout) && os.Getenv("TERM") != "dumb"
		o.out = tty.NewScreen(outW, tty.ColorAllowed(stdout), live)
		o.human = render.NewHuman(o.out, cfg.permission, cfg.elicit)
		o.human.Remembered = a.perms.WasRemembered
		o.human.AnswerNote = a.perms.AnswerNote
		o.human.ToolOutput = cfg.toolOutput
		o.human.HumanWait = a.humanWait.Total
		o.sink = o.human
		a.perms.Notes = true
	}
	scr := o.questions()
	seat := make(chan struct{}, 1) // one question at a time reads stdin
	// The person answers --permission ask, and a policy file's ask rules
	// when there is a terminal to ask at.
	if cfg.permission == ask.PermAsk || cfg.permission == ask.PermReads || cfg.policy != nil && a.stdinTTY && !cfg.json {
		a.perms.Approver = ask.NewApprover(a.in, scr, cfg.json, !a.stdinTTY, seat)
	}
	a.elicitor = &ask.Elicitor{Policy: cfg.elicit, Auto: cfg.elicitAuto, Values: cfg.elicitValues, JSON: cfg.json,
		In: a.in, Scr: scr, Errs: o.errs, Echo: !a.stdinTTY, Asking: seat}
	a.in.OnQueued = a.onQueued
	a.in.OnQuit = func() { a.signals.on(syscall.SIGINT, true) } // /quit typed at a question quits
	var storeErr error
	if !cfg.noStore {
		a.store, storeErr = state.Open()
	}
	if a.stdinTTY && o.out != nil && o.out.IsLive() && tty.IsTerminal(stdout) {
		a.editor = newLineEditor(stdin, stdout, stderr, a.in, o, &a.cfg, a.store, a.live,
			func() { a.signals.on(os.Interrupt, false) }, a.signals.quitOnInterrupt)
		a.signals.editor = a.editor
		a.elicitor.Errs = o.errs // above the edited line
	}
	if !a.stdinTTY {
		o.refusals = &refusalCount{Sink: o.sink}
		o.sink = o.refusals
	}
	switch {
	case a.store != nil:
		// each turn goes in the session's transcript
		o.sink = &transcriptSink{Sink: o.sink, store: a.store, cfg: &a.cfg, live: a.live, output: o}
	case storeErr != nil:
		o.diag(tty.StyleYellow, "%v; this session is not recorded", storeErr)
	}
	return a
}

func (a *app) options() (acphost.ACPOptions, io.Closer, error) {
	path, args, env, err := agentCommand(a.cfg)
	if err != nil {
		return acphost.ACPOptions{}, nil, err
	}
	opts := acphost.ACPOptions{
		Command: path,
		Args:    args,
		Dir:     a.cfg.cwd,
		Profile: a.cfg.profile,
		// The mode is set after the session opens (openSession), so that
		// a mode the agent does not have is named with the ones it has.
		Process:     acphost.ProcessOptions{Env: env},
		Advertise:   acphost.AdvertiseOptions{PermissionPresentation: a.cfg.presentation, Notices: true},
		Timeouts:    acphost.Timeouts{TurnTimeout: a.cfg.timeout},
		Elicitation: acphost.ElicitationOptions{OnRequest: a.elicitor.Answer, OnComplete: a.output.sink.ElicitationComplete},
	}
	if a.cfg.elicit == ask.ElicitAsk {
		opts.Elicitation.OnRequest = ask.Timed(&a.humanWait, a.elicitor.Answer)
	}
	opts.MCPServers = a.cfg.mcpServers
	opts.SystemPrompt = a.cfg.systemPrompt
	// The end-of-turn usage (unstable in the schema) is typed only then:
	// the closing line shows it.
	opts.Unstable = true
	if detached {
		// Nobody watches a background acphost: a turn the agent stops
		// speaking in ends, rather than keeping it alive for ever.
		opts.Timeouts.IdleTimeout = backgroundIdleTimeout
	}
	opts.AuthMethod = a.cfg.auth
	// acphost login runs an agent's terminal login; a remote agent's is
	// its host's to run.
	opts.Advertise.TerminalAuth = !a.cfg.remote.remote()
	a.perms.Hook(&opts, a.cwd)
	if a.cfg.fs {
		opts.FS = &acphost.FSOptions{Read: true, Write: true}
	}
	if a.cfg.remote.remote() {
		if err := remoteOptions(a.cfg, &opts); err != nil {
			return opts, nil, err
		}
	}
	opts.Process.Confine = confinement(a.cfg, a.cwd)
	if a.stdinTTY && len(a.cfg.prompts) == 0 && a.cfg.login == nil {
		// A chat outlives a crash: the next prompt restarts the agent,
		// re-attaching the session where the agent keeps it.
		opts.Recover = &acphost.RecoverOptions{}
		a.recovers = true
	}
	stderr, record, closer, err := a.streams.open(a.cfg.stderrPath, a.cfg.recordPath)
	if err != nil {
		return opts, nil, err
	}
	opts.Process.Stderr = stderr
	if record != nil {
		opts.Debug.Record = record
	}
	if k, ok := opts.Transport.(*kube.Transport); ok {
		// Closed after the client: what a failed start or a lost link
		// left in the cluster goes, with the host instance's lease.
		a.kube = k
		closer = closers{k, closer}
	}
	return opts, closer, nil
}

// reportRecordingCut says, once the run ends, that --record stopped at its
// bound.
func (a *app) reportRecordingCut() {
	if a.streams.recordingCut() {
		a.output.diag(tty.StyleYellow, "--record: the recording stopped at %d MiB; what followed is not in it", maxRecordBytes>>20)
	}
}

func (a *app) run() int {
	if a.editor != nil {
		defer a.editor.close()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go a.signals.handle(sigs, done)
	defer a.signals.wait() // exit only once the agent is closed

	var resume *state.Record
	switch {
	case a.cfg.continueLast:
		if r, ok := a.pickContinue(); ok {
			if err := a.adopt(r); err != nil {
				a.output.diag(tty.StyleRed, "%v", err)
				return exitUsage
			}
			resume = &r
		}
	case a.cfg.sessionName != "" && a.cfg.resume == "" || a.cfg.worktree.on:
		r, ok, err := a.resolveNamed()
		if err != nil {
			a.output.diag(tty.StyleRed, "%v", err)
			return exitUsage
		}
		if ok {
			a.named.id, a.named.name = r.ID, a.cfg.sessionName
			resume = &r
		}
	case a.cfg.resume != "":
		r, err := a.resolveResume()
		if err != nil {
			a.output.diag(tty.StyleRed, "%v", err)
			return exitUsage
		}
		resume = &r
	}
	a.cwd = a.cfg.cwd
	if a.cwd == "" && !a.cfg.remote.remote() {
		a.cwd, _ = os.Getwd()
	}
	for _, s := range []*tty.Screen{a.output.out, a.output.errs} {
		if s != nil {
			s.SetDir(a.cwd) // questions may go to either
		}
	}
	opts, files, err := a.options()
	if err != nil {
		a.output.diag(tty.StyleRed, "%v", err)
		if errors.Is(err, acphost.ErrLinkLost) {
			return exitFailed // the remote host could not be reached: the agent failed to start
		}
		return exitUsage
	}
	if files != nil {
		defer files.Close() // after the client is closed, below
	}
	// Flushed last, once the client is closed and its turns ended.
	tel := startTelemetry(func(err error) { a.output.diag(tty.StyleYellow, "%v", err) }, a.perms.Decision)
	defer tel.shutdown()
	tel.instrument(&opts)
	defer a.reportRecordingCut()
	if a.cfg.login != nil {
		return a.login(opts)
	}
	var rp *replay
	if resume != nil {
		// Start re-attaches the recorded session as the warm one
		// (session/load, else session/resume): no session/new.
		opts.SessionID = resume.ID
		rp = a.beginReplay(*resume)
		if rp != nil {
			opts.OnUpdate = rp.update
		}
	}

	client, err := a.start(opts)
	a.live.started(client)
	quitting := a.signals.quitting()
	if err != nil {
		a.unmake()
		if quitting {
			return a.signals.exitCode()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			why := "a first npx download can take longer: try --start-timeout 10m"
			if opts.PlanMode && opts.Process.Confine != nil {
				why += "; it started under plan mode's kernel layer, which keeps the project read-only and " +
					"lets it write only its state and private copies of its homes: if it needs to write elsewhere, --writable DIR"
			}
			a.output.diag(tty.StyleRed, "the agent did not start within %v (--start-timeout); %s", a.cfg.startTimeout, why)
			return exitFailed
		}
		if resume != nil && errors.Is(err, acphost.ErrUnsupported) && a.cfg.sessionName != "" {
			a.output.diag(tty.StyleRed, "session %s (%s) cannot be continued: %s offers neither session/load nor session/resume; "+
				"no new session was started in its place (acphost sessions rm %s forgets it, or pick another name)",
				acp.SafeText(a.cfg.sessionName), acp.SafeText(resume.ID), agentName(a.cfg), acp.SafeText(a.cfg.sessionName))
			return exitFailed
		}
		if resume != nil {
			a.reportAgentError("could not continue session "+acp.SafeText(resume.ID), err)
			if hint := systemPromptHint(a.cfg, err); hint != "" {
				a.output.diag(tty.StyleRed, "%s", hint)
				return exitUsage
			}
			return exitFailed
		}
		a.reportAgentError("could not start the agent", err)
		if ae := (*acphost.AuthError)(nil); errors.As(err, &ae) {
			a.output.note("", authMethodsText(ae.Methods)) // what the agent offers, and how to log in
			a.output.diag(tty.StyleRed, "the agent needs a login: run %s", loginCommand(a.cfg))
		}
		if me := (*acphost.MCPServerError)(nil); errors.As(err, &me) {
			return exitUsage // the configuration asks what the agent cannot do
		}
		if hint := systemPromptHint(a.cfg, err); hint != "" {
			a.output.diag(tty.StyleRed, "%s", hint)
			return exitUsage // likewise
		}
		return exitFailed
	}
	defer a.closeClient(client)
	defer tel.observe(client)()
	if quitting {
		return a.signals.exitCode()
	}

	sess := client.Session()
	a.opened(sess.ID())
	if a.output.json != nil && a.cfg.sessionName != "" {
		a.output.json.SetName(sess.ID(), a.cfg.sessionName)
	}
	if w := provenWarning(a.cfg, client.AgentInfo()); w != "" {
		a.output.diag(tty.StyleYellow, "%s", w)
	}
	if resume != nil {
		a.endReplay(rp, *resume, loadsSessions(client))
	}
	if a.cfg.mode != "" {
		if err := a.setMode(sess, a.cfg.mode); err != nil {
			if !a.cfg.modeSoft {
				a.output.diag(tty.StyleRed, "--mode %s: %s", acp.SafeText(a.cfg.mode), tty.ErrMsg(err))
				return exitUsage
			}
			a.output.diag(tty.StyleYellow, "mode %s: %s; staying in the agent's mode", acp.SafeText(a.cfg.mode), tty.ErrMsg(err))
		} else if note := heldModeNote(sess.Enforcement(), a.cfg.mode); note != "" && !a.cfg.modeSoft {
			a.output.note(tty.StyleDim, "--mode "+note)
		}
	}
	if code := applySets(sess, a.cfg.sets, a.output); code != 0 {
		return code
	}
	a.openControl()
	defer a.closeControl()
	a.useSession(sess)
	a.greet(client, sess)

	if len(a.cfg.prompts) > 0 {
		a.runPrompts()
	} else {
		a.chat(client)
	}
	if a.output.refusals != nil && !a.signals.quitting() {
		if line := a.output.refusals.closingLine(a.cfg); line != "" {
			a.output.diag(tty.StyleYellow, "%s", line)
		}
	}
	a.in.CloseQueue()
	a.closeClient(client)
	a.release()
	a.closeControl()
	switch {
	case a.signals.quitting():
		return a.signals.exitCode()
	case a.failed:
		return exitFailed
	}
	return exitOK
}

// openControl opens the run's control socket; without the store (or when
// the socket cannot be made) acphost cancel and --no-wait cannot reach it.
func (a *app) openControl() {
	if a.store == nil {
		return
	}
	ctl, err := control.Listen(a.store.Dir, controlAnswers{live: a.live, signals: a.signals, in: a.in, output: a.output}.answer)
	if err != nil {
		a.output.diag(tty.StyleYellow, "%v; acphost cancel and --no-wait cannot reach this acphost", err)
		return
	}
	a.live.listening(ctl)
}

// closeControl closes the control socket (idempotent).
func (a *app) closeControl() {
	if ctl := a.live.control(); ctl != nil {
		ctl.Close()
	}
}

// runPrompts runs the -p prompts in order, each prompt handed over
// meanwhile (acphost --no-wait) right after the turn running when it came,
// and those still queued after the last -p.
func (a *app) runPrompts() {
	next := 0
	for !a.signals.quitting() {
		p, ok := a.in.PopQueued()
		if !ok {
			if next < len(a.cfg.prompts) {
				p, next = a.cfg.prompts[next], next+1
			} else if a.in.CloseQueue() {
				return
			} else {
				continue // one was queued just now
			}
		}
		if !a.turn(p, !a.cfg.json, len(a.cfg.prompts)-next+a.in.Queued()) {
			return
		}
	}
}

// start starts the agent within --start-timeout, showing that it is
// starting (npx may download it first).
func (a *app) start(opts acphost.ACPOptions) (*acphost.ACPClient, error) {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.startTimeout)
	defer cancel()
	a.live.starting(cancel)
	what := agentName(a.cfg)
	if len(a.cfg.agent) > 0 && filepath.Base(a.cfg.agent[0]) == "npx" {
		what += " (npx " + strings.Join(a.cfg.agent[1:], " ") + "; the first run downloads it)"
	}
	var stopSpin func()
	if a.output.out != nil && a.output.out.IsLive() {
		stopSpin = a.output.out.Spin("starting agent " + what + "…")
	} else if len(a.cfg.agent) > 0 && !a.cfg.json && !a.cfg.quiet {
		a.output.errs.Line(tty.StyleDim, "acphost: starting agent "+what+"…")
	}
	client, err := acphost.Start(ctx, opts)
	if stopSpin != nil {
		stopSpin()
	}
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return client, err
}

// setMode switches sess to mode id, naming the agent's modes when it has
// no such mode.
func (a *app) setMode(sess *acphost.Session, id string) error {
	modes, optionID := sessionModes(sess)
	if len(modes.AvailableModes) == 0 {
		return errors.New("the agent offers no modes")
	}
	if !slices.ContainsFunc(modes.AvailableModes, func(m acp.SessionMode) bool { return m.ID == id }) {
		return fmt.Errorf("the agent has no such mode; its modes: %s", modeList(modes))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return switchMode(ctx, sess, optionID, id)
}

// useSession makes sess the one prompts go to, and records it.
// The session left behind is recorded as no longer open here.
func (a *app) useSession(sess *acphost.Session) {
	if left := a.live.use(sess); left != nil && a.store != nil {
		left.PID, left.TurnSince, left.Control = 0, time.Time{}, ""
		if err := a.store.Put(*left); err != nil {
			a.output.diag(tty.StyleYellow, "%v", err)
		}
	}
	a.record()
}

// record writes the current session's record: new, or its last use,
// title and mode.
func (a *app) record() {
	if a.store == nil {
		return
	}
	sess, r := a.live.current()
	if sess == nil {
		return
	}
	now := time.Now()
	if r.ID != sess.ID() || r.Created.IsZero() {
		r = state.Record{ID: sess.ID(), Created: now}
	}
	r.Agent, r.Command = recordAgent(a.cfg)
	r.SSH, r.URL, r.Kube = a.cfg.remote.ssh, a.cfg.remote.url, a.cfg.remote.kube
	r.Cwd, r.LastUsed = a.cwd, now
	a.live.stamp(&r)
	a.stampNamed(&r)
	if t := sess.Details().Title; t != "" {
		r.Title = t
	}
	if m := sess.Enforcement().OwnMode(); m != "" {
		r.Mode = m // not plan mode's: continued outside it, the session goes back to this one
	}
	if err := a.store.Put(r); err != nil {
		a.output.diag(tty.StyleYellow, "%v", err)
		return
	}
	a.live.written(sess, r)
}

// release records that this process no longer has its session open.
func (a *app) release() {
	a.live.release()
	a.record()
}

// closeClient closes the agent. An agent that had died after its last
// turn is reported but does not change the exit status: every turn ended.
func (a *app) closeClient(client *acphost.ACPClient) {
	err := client.Close()
	if err != nil && !a.failed && !a.signals.quitting() {
		a.reportAgentError("the agent had exited", err)
	}
}

// confinement is --writable's, and the kernel layer of plan mode
// (--permission plan, /plan on) where Landlock works: in plan mode the
// agent may write only its own state (its profile's), a private TMPDIR
// and the --writable directories outside the project cwd (neither holding
// it nor in it, their symlinks resolved: Landlock follows them); outside
// it, --writable's directories, or anywhere without --writable.
// Switching plan mode restarts the agent under the other confinement
// before the next turn (when it can re-attach its session).
func confinement(cfg config, cwd string) *acphost.Confinement {
	var c *acphost.Confinement
	if len(cfg.writable) > 0 {
		c = &acphost.Confinement{Writable: cfg.writable}
	}
	if cfg.remote.remote() || !acphost.CanConfine() {
		return c
	}
	if c == nil {
		c = &acphost.Confinement{PlanOnly: true}
	}
	for _, dir := range cfg.writable {
		if !confine.Overlap(dir, cwd) {
			c.PlanWritable = append(c.PlanWritable, dir)
		}
	}
	return c
}

// greet names the agent, the session, its mode and the permission policy
// at the start of human output.
func (a *app) greet(client *acphost.ACPClient, sess *acphost.Session) {
	if a.output.out == nil {
		return
	}
	info := client.AgentInfo()
	name := strings.TrimSpace(acp.SafeText(info.Title))
	if name == "" {
		name = strings.TrimSpace(acp.SafeText(info.Name))
	}
	if name == "" {
		name = "agent"
	}
	if v := acp.SafeText(info.Version); v != "" {
		name += " " + v
	}
	switch {
	case a.cfg.remote.url != "":
		name += " at " + acp.SafeText(a.cfg.remote.url)
	case a.kube != nil:
		name += " in " + acp.SafeText(a.kube.Where())
	case len(a.cfg.agent) == 0:
		name += " (built-in demo)"
	}
	parts := []string{"acphost", name, "session " + acp.SafeText(sess.ID())}
	if a.named.id == sess.ID() && a.cfg.sessionName != "" {
		parts[2] = "session " + acp.SafeText(a.cfg.sessionName) + " (" + acp.SafeText(sess.ID()) + ")"
	}
	if _, r := a.live.current(); r.ID == sess.ID() && r.Worktree != nil {
		parts = append(parts, "worktree "+acp.SafeText(r.Worktree.Branch))
	}
	modes, _ := sessionModes(sess)
	e := sess.Enforcement()
	if e.Mode != "" {
		// The mode the agent reported, or the one the host set last
		// (--mode, plan mode's, RequireAsking's) and the agent accepted:
		// its confirming update may still be on its way.
		modes.CurrentModeID = e.Mode
	}
	if m := currentMode(modes); m != "" {
		if e.AgentMode && e.RestoreMode != "" {
			m += "; " + tty.OneLine(acp.SafeText(e.RestoreMode), 64) + " once plan mode is off"
		}
		parts = append(parts, "mode: "+m)
	}
	a.output.human.SetMode(modes.CurrentModeID)
	parts = append(parts, "permission: "+a.permissionLabel(client))
	if w := client.Containment().Word(); w != "" {
		parts = append(parts, "containment: "+w)
	}
	a.output.out.Line(tty.StyleDim, strings.Join(parts, " · "))
	if a.stdinTTY && len(a.cfg.prompts) == 0 {
		hint := "/help lists the commands; a prompt typed while a turn runs is queued; Ctrl-C stops a turn"
		if a.editor != nil {
			hint += "; Tab completes, Up recalls"
		}
		a.output.out.Line(tty.StyleDim, hint)
	}
}

// permissionLabel tells what will happen, not what was asked for: the
// policy, and what holds of it (see enforcementNote).
func (a *app) permissionLabel(client *acphost.ACPClient) string {
	p := a.cfg.permission
	if a.cfg.noOneToAsk && a.cfg.nonInteractive == ask.NonInteractiveFail {
		p = "fail (nobody to ask: --non-interactive-permissions fail)"
	}
	if a.cfg.policy != nil {
		p = filepath.Base(a.cfg.policy.Source) + ", else " + p
	}
	if client.PlanMode() && p != ask.PermPlan {
		p += " + plan mode"
	}
	if note := enforcementNote(client.Session().Enforcement(), a.cfg.permission); note != "" {
		p += " (" + note + ")"
	}
	return p
}

// enforcementNote says which layers hold: in plan mode, each of them;
// under a policy that rejects or asks, whether the agent asks at all.
func enforcementNote(e acphost.Enforcement, policy string) string {
	if !e.PlanMode && policy == ask.PermAllow {
		return ""
	}
	return e.String()
}

// chat reads prompts and commands from standard input until it ends, a
// signal or /quit, or the agent dies.
func (a *app) chat(client *acphost.ACPClient) {
	if a.editor != nil {
		a.editor.chatting.Store(true)
		defer a.editor.chatting.Store(false)
	}
	for {
		scr := a.output.out
		if scr == nil && a.stdinTTY {
			scr = a.output.errs
		}
		fromQueue := a.in.Queued() > 0
		if scr != nil && a.stdinTTY && !fromQueue {
			scr.ChatPrompt()
		}
		line, queued, ok, failed := a.nextLine(client)
		if failed {
			a.failed = true
			a.reportAgentError("the agent failed", client.Err())
			return
		}
		if !ok {
			if scr != nil {
				scr.BreakLine()
			}
			return
		}
		if scr != nil && a.stdinTTY && !fromQueue {
			scr.Answered("", false)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		prompt, send := line, true
		if strings.HasPrefix(strings.TrimSpace(line), "/") {
			prompt, send = a.command(client, strings.TrimSpace(line))
		}
		if a.signals.quitting() {
			return
		}
		if send && !a.turn(prompt, !a.cfg.json && (!a.stdinTTY || fromQueue || queued), -1) {
			return
		}
	}
}

// nextLine waits for the next line of input; failed reports the agent's
// death meanwhile.
func (a *app) nextLine(client *acphost.ACPClient) (line string, queued, ok, failed bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var dead atomic.Bool
	agentDone := client.Done()
	if a.recovers {
		agentDone = nil // the next prompt restarts a dead agent
	}
	go func() {
		select {
		case <-a.signals.quitAsked():
		case <-agentDone:
			dead.Store(true)
		case <-ctx.Done():
		}
		cancel()
	}()
	line, queued, ok, err := a.in.Next(ctx)
	if err != nil {
		cancel()
		return "", false, false, dead.Load() && !a.signals.quitting()
	}
	return line, queued, ok, false
}

// onQueued acts on a line typed while a turn runs: /cancel and /quit at
// once, anything else queued.
func (a *app) onQueued(line string, n int) bool {
	switch strings.TrimSpace(line) {
	case "/cancel":
		a.signals.cancelTurn("cancelling the turn")
		return false
	case "/quit", "/exit":
		a.signals.on(syscall.SIGINT, true)
		return false
	}
	if a.output.out != nil {
		a.output.out.Forget()
		a.output.out.Line(tty.StyleDim, fmt.Sprintf("queued (%d): %s", n, tty.OneLine(acp.SafeText(line), 60)))
	}
	return true
}

// turn runs one prompt and reports whether the next may run. left is how
// many -p prompts follow (-1: prompts come from stdin).
func (a *app) turn(prompt string, echo bool, left int) bool {
	sess := a.live.session()
	client, _ := a.live.agent()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.live.beginTurn(cancel)
	a.record()
	a.humanWait.Reset()
	if a.stdinTTY {
		a.in.SetQueueing(true)
		defer a.in.SetQueueing(false)
	}

	a.output.sink.BeginTurn(prompt, echo)
	start := time.Now()
	// Ctrl-C cancels ctx rather than calling client.Cancel: Cancel is lost
	// when it comes before the library has registered the turn.
	resp, err := sess.GenerateStream(ctx, acphost.Request{Prompt: prompt}, a.output.sink.Event)
	r := render.TurnResult{Resp: resp, Err: err, Elapsed: time.Since(start), Stop: resp.StopReason}

	interrupted, permFail := a.live.endTurn()

	quitting := a.signals.quitting()
	if permFail != "" && !quitting {
		if r.Stop == "" {
			r.Stop = acp.StopCancelled
		}
		a.output.sink.EndTurn(r)
		a.record()
		a.failed = true
		next := ""
		switch {
		case left > 0:
			next = fmt.Sprintf("; the %d prompt(s) left do not run", left)
		case left < 0:
			next = "; no more prompts are read"
		}
		a.output.diag(tty.StyleRed, "permission request for %s with nobody to answer it (--non-interactive-permissions fail): the turn is cancelled%s; the exit status will be 1", permFail, next)
		return false
	}
	cancelled := errors.Is(err, context.Canceled) && interrupted && client.Err() == nil
	if cancelled && r.Stop == "" {
		r.Stop = acp.StopCancelled // cancelled before the agent saw it
	}
	r.UserCancel = cancelled && !errors.Is(err, acphost.ErrCancelUnconfirmed)
	a.output.sink.EndTurn(r)
	if !quitting {
		a.record()
	}

	switch {
	case err == nil:
		if !a.authGood { // once a run: the agent is logged in after all
			a.authGood = true
			a.cfg.markAuthRefused(false)
		}
		return true
	case quitting:
		return false
	case errors.Is(err, acphost.ErrTurnTimeout):
		a.failed = true
		next := "the next prompt runs"
		switch {
		case left == 0:
			next = "that was the last prompt"
		case left > 1:
			next = fmt.Sprintf("the %d prompts left still run, each with the same limit", left)
		case left < 0:
			next = "the next prompt you type gets the same limit"
		}
		a.output.diag(tty.StyleRed, "the turn timed out after %v (--timeout applies to each turn); %s; the exit status will be 1", a.cfg.timeout, next)
		a.noteUnconfirmed(err)
		return true
	case cancelled:
		a.noteUnconfirmed(err)
		return true
	case a.recovers && errors.Is(err, acphost.ErrContextLost):
		a.output.diag(tty.StyleYellow, "the agent was restarted in a fresh session (it could not re-attach this one, so it has no memory of it); the prompt was not sent: sending it again")
		return a.turn(prompt, echo, left)
	case a.recovers && errors.Is(err, acphost.ErrAgentExited):
		a.failed = true
		a.reportAgentError("the agent failed", err)
		a.output.diag(tty.StyleYellow, "the next prompt restarts the agent (re-attaching this session where the agent keeps sessions); or /quit, and later acphost --resume last")
		return true
	case client.Err() != nil || dead(err):
		a.failed = true
		a.reportAgentError("the agent failed", err)
		if a.store != nil && !a.recovers {
			a.output.diag(tty.StyleYellow, "acphost --resume last continues this session with a new agent, where the agent keeps sessions")
		}
		return false
	case errors.Is(err, acphost.ErrUnaskedChange):
		a.failed = true
		a.output.diag(tty.StyleRed, "%s", unaskedMessage(err))
		return true
	case needsLogin(err):
		a.failed = true
		a.authGood = false
		reportNeedsLogin(a.cfg, a.output, err)
		return left < 0 // prompts of the command line would be refused too
	default:
		a.failed = true
		a.output.diag(tty.StyleRed, "the turn failed: %s", tty.ErrMsg(err))
		if errors.As(err, new(*acphost.RPCError)) {
			a.showStderrTail(err)
		}
		return true
	}
}

func (a *app) noteUnconfirmed(err error) {
	if errors.Is(err, acphost.ErrCancelUnconfirmed) {
		a.output.diag(tty.StyleYellow, "the agent did not confirm the cancellation; it will be restarted before the next turn (the conversation is lost)")
	}
}

// unaskedMessage explains a turn stopped for a change the agent made
// without the host's consent, and what to do about it.
func unaskedMessage(err error) string {
	var uc *acphost.UnaskedChangeError
	if !errors.As(err, &uc) {
		return tty.ErrMsg(err)
	}
	what := fmt.Sprintf("%s %q", acp.SafeText(string(uc.ToolCall.Kind)), tty.OneLine(acp.SafeText(uc.ToolCall.Title), 60))
	if uc.PlanMode {
		return "plan mode: the agent reports it ran " + what + " anyway; the turn was stopped. Its own mode does not keep it from changing files; the kernel layer (Linux Landlock) does: see the header"
	}
	msg := "the agent ran " + what + " without asking"
	if uc.Mode != "" {
		msg += " (its mode " + strconv.Quote(acp.SafeText(uc.Mode)) + " does not ask)"
	}
	msg += "; the turn was stopped"
	if len(uc.AskingModes) > 0 {
		msg += "; modes that ask: " + acp.SafeText(strings.Join(uc.AskingModes, ", ")) + " (/mode ID, or --mode ID)"
	} else {
		msg += "; the agent offers no mode that asks (/mode lists its modes); --permission allow lets it act"
	}
	return msg
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
	a.output.diag(tty.StyleRed, "%s: %s", what, tty.ErrMsg(err))
	a.showStderrTail(err)
}

// showStderrTail shows the last lines the agent wrote on stderr, unless
// they go elsewhere (--stderr), and the known cause of a failure there.
func (a *app) showStderrTail(err error) {
	defer func() {
		if hint := rootHint(os.Geteuid(), a.cfg, os.Environ()); hint != "" {
			a.output.diag(tty.StyleYellow, "%s", hint)
		}
	}()
	if a.cfg.stderrPath != "" {
		return
	}
	var tail string
	named := 1 // the error's message names the tail's last line
	var exitErr *acphost.ExitError
	var protoErr *acphost.ProtocolError
	switch {
	case errors.As(err, &exitErr):
		tail = exitErr.Stderr
	case errors.As(err, &protoErr):
		tail = protoErr.Stderr
	default: // the agent's own error: its stderr may say more
		tail, named = a.streams.tail.String(), 0
	}
	lines := strings.Split(strings.TrimRight(acp.SafeText(tail), " \t\r\n"), "\n")
	if len(lines) <= named || lines[0] == "" { // none, or the one line the message already names
		return
	}
	if len(lines) > maxStderrLines {
		lines = lines[len(lines)-maxStderrLines:]
	}
	var b strings.Builder
	b.WriteString(a.output.errs.Style(tty.StyleDim, "agent stderr (last lines):") + "\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	if a.output.out != nil {
		a.output.out.BreakLine()
	}
	a.output.errs.Block(b.String())
}

// applySets sets sets on sess, in order, saying each on o. A --set the agent refuses (or
// does not offer) ends the run with a usage error; a config file's only
// warns.
func applySets(sess *acphost.Session, sets []configopt.Set, o *output) int {
	for _, s := range sets {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		now, err := configopt.SetOption(ctx, sess, s.Key, s.Value)
		cancel()
		switch {
		case err == nil:
			o.note(tty.StyleDim, acp.SafeText(s.Key)+" = "+now)
		case s.Soft:
			o.diag(tty.StyleYellow, "config %s: %s; left as the agent has it", acp.SafeText(s.Key), tty.ErrMsg(err))
		default:
			o.diag(tty.StyleRed, "--set %s: %s", acp.SafeText(s.Key), tty.ErrMsg(err))
			return exitUsage
		}
	}
	return 0
}
