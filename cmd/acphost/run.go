package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/policy"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/internal/confine"
)

// app is one run: an agent, its turns, the user's signals.
type app struct {
	recording   *boundedRecording // --record's file, nil without it
	refusals    *refusalCount     // the run's permission answers, nil at a terminal
	recovers    bool              // the client restarts a crashed agent (a chat at a terminal)
	stderrTail  stderrTail        // the agent's stderr, last bytes, when it goes nowhere else (no --stderr)
	agentStderr io.Writer         // where --stderr - sends the agent's stderr when not os.Stderr (a background acphost's bounded log)
	cfg         config
	stdinTTY    bool
	in          *tty.Inbox
	out         *tty.Screen // human output on stdout; nil with --json
	errs        *tty.Screen // diagnostics (and, with --json, questions) on stderr
	human       *human      // the human sink, nil with --json
	sink        sink
	approver    *approver
	elicitor    *elicitor
	store       *state.Store // nil: sessions are not recorded
	cwd         string       // the session's directory, absolute ("" for a remote agent's default)

	// remembered holds the tool call ids whose permission Remember
	// answered from an earlier "always" without asking.
	remembered sync.Map
	// answerNotes holds, by tool call id, why a permission was answered
	// without asking (the policy file's rule).
	answerNotes sync.Map
	// decisions holds, by tool call id, who answered a permission without
	// asking and by which rule, for the --json permission_decision line.
	decisions sync.Map
	// permFail names the permission request that ended the turn under
	// --non-interactive-permissions fail.
	permFail string
	// humanWait is the time the current turn spent waiting for the person
	// (approvals, forms), in nanoseconds.
	humanWait atomic.Int64

	mu          sync.Mutex
	client      *acphost.ACPClient
	sess        *acphost.Session // the session prompts go to
	rec         state.Record     // its record in the store, once written (ID "" before)
	startCancel context.CancelFunc
	turnCancel  context.CancelFunc // set while a turn runs
	interrupted bool               // Ctrl-C already cancelled the running turn
	quit        chan struct{}      // closed when a signal (or /quit) asks to exit
	quitDone    chan struct{}      // closed once that signal has closed the agent
	quitCode    int

	ed *tty.Editor // the line editor at an interactive prompt, nil without one
	// turnSince is when the running turn started (zero between turns),
	// and released that the process let go of its session: both go in
	// the session's record, for acphost sessions and acphost cancel.
	turnSince time.Time
	released  bool

	ctl *control.Server // the control socket, nil without one

	failed   bool        // a turn failed: exit status 1
	chatting atomic.Bool // the chat reads prompts (a Ctrl-C between turns goes to the line editor)
	authGood bool        // a turn went through: no login is missing (see reportNeedsLogin)
	modeSet  bool        // cfg.mode was set (the agent accepted session/set_mode)
}

func newApp(cfg config, stdin *os.File, stdout, stderr *os.File) *app {
	a := &app{cfg: cfg, stdinTTY: tty.IsTerminal(stdin), in: tty.NewInbox(stdin),
		quit: make(chan struct{}), quitDone: make(chan struct{})}
	var outW, errW io.Writer = stdout, stderr
	if detached { // a background acphost: its log is bounded
		log := newCappedLog(stdout, maxBackgroundLogBytes)
		outW, errW, a.agentStderr = log, log, log
	}
	a.errs = tty.NewScreen(errW, tty.ColorAllowed(stderr), false)
	switch {
	case cfg.json:
		js := newJSONSink(outW)
		js.decision = a.decision
		a.sink = js
	case cfg.quiet:
		a.sink = newQuietSink(outW)
	default:
		live := tty.IsTerminal(stdout) && os.Getenv("TERM") != "dumb"
		a.out = tty.NewScreen(outW, tty.ColorAllowed(stdout), live)
		a.human = newHuman(a.out, cfg.permission, cfg.elicit)
		a.human.remembered = a.wasRemembered
		a.human.answerNote = a.answerNote
		a.human.toolOutput = cfg.toolOutput
		a.human.humanWait = func() time.Duration { return time.Duration(a.humanWait.Load()) }
		a.sink = a.human
	}
	scr := a.out // questions
	if scr == nil {
		scr = a.errs
	}
	seat := make(chan struct{}, 1) // one question at a time reads stdin
	// The person answers --permission ask, and a policy file's ask rules
	// when there is a terminal to ask at.
	if cfg.permission == permAsk || cfg.permission == permReads || cfg.policy != nil && a.stdinTTY && !cfg.json {
		a.approver = newApprover(a.in, scr, cfg.json, !a.stdinTTY, seat)
	}
	a.elicitor = &elicitor{policy: cfg.elicit, auto: cfg.elicitAuto, values: cfg.elicitValues, json: cfg.json,
		in: a.in, scr: scr, errs: a.errs, echo: !a.stdinTTY, asking: seat}
	a.in.OnQueued = a.onQueued
	if a.stdinTTY && a.out != nil && a.out.IsLive() && tty.IsTerminal(stdout) {
		a.useEditor(stdin, stdout, stderr)
	}
	if !a.stdinTTY {
		a.refusals = &refusalCount{sink: a.sink}
		a.sink = a.refusals
	}
	if !cfg.noStore {
		if st, err := state.Open(); err == nil {
			a.store = st
			a.sink = &transcriptSink{sink: a.sink, a: a} // each turn goes in the session's transcript
		} else {
			a.diag(tty.StyleYellow, "%v; this session is not recorded", err)
		}
	}
	return a
}

// diag prints a diagnostic on stderr, on a line of its own.
func (a *app) diag(code, format string, args ...any) {
	if a.out != nil {
		a.out.BreakLine() // stdout and stderr often share a terminal
		a.out.Forget()    // and the line above is no longer the last tool line
	}
	a.errs.Line(code, "acphost: "+fmt.Sprintf(format, args...))
}

// note prints information for the person: on stdout for human output, on
// stderr with --json.
func (a *app) note(code, text string) {
	if a.out != nil {
		a.out.Line(code, text)
		return
	}
	a.errs.Line(code, text)
}

// timed wraps a callback that waits for the person, adding its time to
// humanWait.
func timed[T any](a *app, f func(context.Context, T) (string, error)) func(context.Context, T) (string, error) {
	return func(ctx context.Context, req T) (string, error) {
		start := time.Now()
		defer func() { a.humanWait.Add(int64(time.Since(start))) }()
		return f(ctx, req)
	}
}

// askPermission is the "ask" policy under acphost.Remember: an "always"
// answer is remembered for the same tool kind and title in the session,
// and requests it answers are noted in remembered.
func (a *app) askPermission() acphost.PermissionFunc {
	asked := sync.Map{} // *PermissionRequest → struct{}: the person was asked
	ask := timed(a, a.approver.decide)
	remember := acphost.Remember(func(ctx context.Context, req *acphost.PermissionRequest) (string, error) {
		asked.Store(req, struct{}{})
		id, err := ask(ctx, req)
		if o := req.Option(id); err == nil && o != nil && (o.Kind == acphost.AllowAlways || o.Kind == acphost.RejectAlways) {
			verb := "allowed"
			if o.Kind == acphost.RejectAlways {
				verb = "rejected"
			}
			a.note(tty.StyleDim, fmt.Sprintf("  remembered: later %s requests in this session are %s without asking", describeTool(req), verb))
		}
		return id, err
	})
	return func(ctx context.Context, req *acphost.PermissionRequest) (string, error) {
		id, err := remember(ctx, req)
		if _, ok := asked.LoadAndDelete(req); !ok && err == nil {
			a.remembered.Store(req.ToolCall.ID, struct{}{})
			a.decided(req, decidedRemembered, "an earlier \"always\" answer for "+describeTool(req))
		}
		return id, err
	}
}

// describeTool names a request's tool as Remember matches it: kind and
// title.
func describeTool(req *acphost.PermissionRequest) string {
	kind := acphost.SafeText(string(req.ToolCall.Kind))
	if kind == "" {
		kind = "tool"
	}
	return fmt.Sprintf("%q (%s)", oneLine(acphost.SafeText(req.ToolCall.Title), 60), kind)
}

// failPermission is --non-interactive-permissions fail: the request is
// noted, the turn cancelled (turn reports it and stops), and the request
// rejected meanwhile.
func (a *app) failPermission(ctx context.Context, req *acphost.PermissionRequest) (string, error) {
	a.decided(req, decidedNonInteractive, "--non-interactive-permissions fail")
	a.mu.Lock()
	if a.permFail == "" {
		a.permFail = describeTool(req)
		if l := policy.RequestPaths(req, acphost.Classify(req)); len(l) > 0 {
			a.permFail += " on " + strings.Join(l, ", ")
		}
	}
	cancel := a.turnCancel
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		// The cancelled turn answers this request "cancelled" itself; an
		// answer returned before that would let the agent act on it.
		<-ctx.Done()
	}
	return acphost.RejectOption(req), nil
}

// answerNote returns (once) why a tool call's permission was answered
// without asking.
func (a *app) answerNote(toolCallID string) string {
	v, ok := a.answerNotes.LoadAndDelete(toolCallID)
	if !ok {
		return ""
	}
	return v.(string)
}

func (a *app) wasRemembered(toolCallID string) bool {
	_, ok := a.remembered.LoadAndDelete(toolCallID)
	return ok
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
		PermissionPresentation: a.cfg.presentation,
		TurnTimeout:            a.cfg.timeout,
		OnElicitation:          a.elicitor.answer,
		OnElicitationComplete:  a.sink.elicitationComplete,
		Notices:                true,
		Profile:                a.cfg.profile,
		// The mode is set after the session opens (openSession), so that
		// a mode the agent does not have is named with the ones it has.
	}
	if a.cfg.elicit == elicitAsk {
		ask := a.elicitor.answer
		opts.OnElicitation = func(ctx context.Context, req *acphost.ElicitationRequest) (acphost.ElicitationAnswer, error) {
			start := time.Now()
			defer func() { a.humanWait.Add(int64(time.Since(start))) }()
			return ask(ctx, req)
		}
	}
	opts.MCPServers = a.cfg.mcpServers
	if detached {
		// Nobody watches a background acphost: a turn the agent stops
		// speaking in ends, rather than keeping it alive for ever.
		opts.IdleTimeout = backgroundIdleTimeout
	}
	opts.AuthMethod = a.cfg.auth
	// acphost login runs an agent's terminal login; a remote agent's is
	// its host's to run.
	opts.TerminalAuth = !a.cfg.remote.remote()
	// noOne answers what would be asked when nobody can be asked.
	noOne := a.deciding(acphost.RejectAll(), decidedNonInteractive, "--non-interactive-permissions deny")
	if a.cfg.nonInteractive == nonInteractiveFail {
		noOne = a.failPermission
	}
	ask := noOne
	if a.approver != nil {
		ask = a.askPermission()
	}
	// Every policy but allow needs an agent that asks: one in a mode that
	// acts unasked is moved to its asking mode, and a change it reports
	// making unasked stops the turn.
	opts.RequireAsking = a.cfg.permission != permAllow
	switch a.cfg.permission {
	case permAsk:
		opts.OnPermission = ask
	case permAllow:
		opts.OnPermission = a.deciding(acphost.AllowAll(), decidedPermission, "--permission allow")
	case permReject:
		opts.OnPermission = a.deciding(acphost.RejectAll(), decidedPermission, "--permission reject")
		if a.cfg.noOneToAsk {
			opts.OnPermission = noOne
		}
	case permReads:
		allow := a.deciding(acphost.AllowAll(), decidedPermission, "--permission reads")
		opts.OnPermission = func(ctx context.Context, req *acphost.PermissionRequest) (string, error) {
			if !isRead(req) {
				return ask(ctx, req)
			}
			if a.human != nil {
				a.answerNotes.Store(req.ToolCall.ID, "--permission reads: the agent calls it a "+string(req.ToolCall.Kind))
			}
			return allow(ctx, req)
		}
	case permPlan:
		// The client rejects whatever can change anything before asking
		// OnPermission, and refuses fs writes; reads get the default
		// (allow once).
		opts.PlanMode = true
	}
	if p := a.cfg.policy; p != nil {
		fallback := opts.OnPermission
		if fallback == nil { // plan mode: what reaches OnPermission only reads
			fallback = a.deciding(func(_ context.Context, req *acphost.PermissionRequest) (string, error) {
				return acphost.DefaultPermission(req), nil
			}, decidedPlan, "plan mode allows reads")
		}
		opts.OnPermission = p.Decider(a.cwd, ask, fallback, func(req *acphost.PermissionRequest, rule, text string) {
			if a.human != nil {
				a.answerNotes.Store(req.ToolCall.ID, text)
			}
			a.decided(req, decidedPolicy, rule)
		})
	}
	if a.cfg.fs {
		opts.FS = &acphost.FSOptions{Read: true, Write: true}
	}
	if a.cfg.remote.remote() {
		if err := a.remoteOptions(&opts); err != nil {
			return opts, nil, err
		}
	}
	opts.Confine = confinement(a.cfg, a.cwd)
	if a.stdinTTY && len(a.cfg.prompts) == 0 && a.cfg.login == nil {
		// A chat outlives a crash: the next prompt restarts the agent,
		// re-attaching the session where the agent keeps it.
		opts.Recover = &acphost.RecoverOptions{}
		a.recovers = true
	}
	var closer io.Closer
	switch a.cfg.stderrPath {
	case "":
		opts.Stderr = &a.stderrTail
	case "-":
		opts.Stderr = os.Stderr
		if a.agentStderr != nil {
			opts.Stderr = a.agentStderr
		}
	default:
		f, err := state.OpenOutput(a.cfg.stderrPath, true)
		if err != nil {
			return opts, nil, fmt.Errorf("--stderr: %w", err)
		}
		opts.Stderr, closer = f, f
	}
	if a.cfg.recordPath != "" {
		f, err := openRecording(a.cfg.recordPath)
		if err != nil {
			if closer != nil {
				closer.Close()
			}
			return opts, nil, fmt.Errorf("--record: %w", err)
		}
		a.recording = &boundedRecording{w: f, left: maxRecordBytes}
		opts.Record = a.recording
		closer = closers{closer, f}
	}
	return opts, closer, nil
}

// openRecording opens --record's file: created 0600, no link followed,
// and, when it exists, only a regular file of the user's own (made 0600),
// never another user's or a FIFO (whose open would wait for a reader).
func openRecording(path string) (*os.File, error) { return state.OpenOutput(path, false) }

// maxRecordBytes bounds a --record file: a flooding agent must not fill
// the disk.
const maxRecordBytes = 1 << 30

// boundedRecording is the --record file: whole entries (one per Write, as
// the library writes them) until max bytes, then nothing, so what is kept
// still replays.
type boundedRecording struct {
	mu   sync.Mutex
	w    io.Writer
	left int64
	cut  bool
}

func (r *boundedRecording) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut || int64(len(p)) > r.left {
		r.cut = true
		return len(p), nil
	}
	r.left -= int64(len(p))
	return r.w.Write(p)
}

// reportRecordingCut says, once the run ends, that --record stopped at its
// bound.
func (a *app) reportRecordingCut() {
	if r := a.recording; r != nil {
		r.mu.Lock()
		cut := r.cut
		r.mu.Unlock()
		if cut {
			a.diag(tty.StyleYellow, "--record: the recording stopped at %d MiB; what followed is not in it", maxRecordBytes>>20)
		}
	}
}

// closers closes each of its non-nil members.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

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
		a.diag(tty.StyleYellow, "session %s may be open in acphost pid %d, which has no control socket to ask; continuing it here", acphost.SafeText(r.ID), r.PID)
	}
	remote := !a.cfg.remote.remote() && (r.SSH != "" || r.URL != "")
	if remote {
		// Reached as before; --ssh-identity and the like come from the
		// command line again, a --url token from --token or the environment.
		a.cfg.remote.ssh, a.cfg.remote.url = r.SSH, r.URL
	}
	if a.cfg.agentName == "" && len(a.cfg.agent) == 0 && r.URL == "" {
		a.cfg.agentName = r.Agent
		if r.Agent != "" && r.Agent != demoAgent {
			def, err := a.cfg.file.lookupAgent(r.Agent)
			if err != nil {
				return fmt.Errorf("--resume %s: its agent %q: %w", a.cfg.resume, r.Agent, err)
			}
			// The command a named agent runs is the configuration's, never
			// the one a record holds.
			a.cfg.agentEnv, a.cfg.agent = def.envList(), def.Command
			a.cfg.mcpServers = mergeMCP(a.cfg.mcpServers, def.MCPServers)
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

func (a *app) run() int {
	defer a.closeEditor()
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

	var resume *state.Record
	switch {
	case a.cfg.continueLast:
		if r, ok := a.pickContinue(); ok {
			if err := a.adopt(r); err != nil {
				a.diag(tty.StyleRed, "%v", err)
				return exitUsage
			}
			resume = &r
		}
	case a.cfg.resume != "":
		r, err := a.resolveResume()
		if err != nil {
			a.diag(tty.StyleRed, "%v", err)
			return exitUsage
		}
		resume = &r
	}
	a.cwd = a.cfg.cwd
	if a.cwd == "" && !a.cfg.remote.remote() {
		a.cwd, _ = os.Getwd()
	}
	for _, s := range []*tty.Screen{a.out, a.errs} {
		if s != nil {
			s.SetDir(a.cwd) // questions may go to either
		}
	}
	opts, files, err := a.options()
	if err != nil {
		a.diag(tty.StyleRed, "%v", err)
		if errors.Is(err, acphost.ErrLinkLost) {
			return exitFailed // the remote host could not be reached: the agent failed to start
		}
		return exitUsage
	}
	if files != nil {
		defer files.Close() // after the client is closed, below
	}
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
	a.mu.Lock()
	a.client = client
	a.mu.Unlock()
	quitting := a.quitting()
	if err != nil {
		if quitting {
			return a.quitCode
		}
		if errors.Is(err, context.DeadlineExceeded) {
			a.diag(tty.StyleRed, "the agent did not start within %v (--start-timeout); a first npx download can take longer: try --start-timeout 10m", a.cfg.startTimeout)
			return exitFailed
		}
		if resume != nil {
			a.reportAgentError("could not continue session "+acphost.SafeText(resume.ID), err)
			return exitFailed
		}
		a.reportAgentError("could not start the agent", err)
		if ae := (*acphost.AuthError)(nil); errors.As(err, &ae) {
			a.authHelp(ae)
			a.diag(tty.StyleRed, "the agent needs a login: run %s", loginCommand(a.cfg))
		}
		if me := (*acphost.MCPServerError)(nil); errors.As(err, &me) {
			return exitUsage // the configuration asks what the agent cannot do
		}
		return exitFailed
	}
	defer a.closeClient(client)
	if quitting {
		return a.quitCode
	}

	sess := client.Session()
	if w := provenWarning(a.cfg, client.AgentInfo()); w != "" {
		a.diag(tty.StyleYellow, "%s", w)
	}
	if resume != nil {
		a.endReplay(rp, *resume, loadsSessions(client))
	}
	if a.cfg.mode != "" {
		if err := a.setMode(sess, a.cfg.mode); err != nil {
			if !a.cfg.modeSoft {
				a.diag(tty.StyleRed, "--mode %s: %s", acphost.SafeText(a.cfg.mode), errMsg(err))
				return exitUsage
			}
			a.diag(tty.StyleYellow, "mode %s: %s; staying in the agent's mode", acphost.SafeText(a.cfg.mode), errMsg(err))
		} else {
			a.modeSet = true
		}
	}
	if code := a.applySets(sess); code != 0 {
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
	if a.refusals != nil && !a.quitting() {
		if line := a.refusals.closingLine(a.cfg); line != "" {
			a.diag(tty.StyleYellow, "%s", line)
		}
	}
	a.in.CloseQueue()
	a.closeClient(client)
	a.release()
	a.closeControl()
	switch {
	case a.quitting():
		return a.quitCode
	case a.failed:
		return exitFailed
	}
	return exitOK
}

// runPrompts runs the -p prompts in order, each prompt handed over
// meanwhile (acphost --no-wait) right after the turn running when it came,
// and those still queued after the last -p.
func (a *app) runPrompts() {
	next := 0
	for !a.quitting() {
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
	a.mu.Lock()
	a.startCancel = cancel
	a.mu.Unlock()
	what := agentName(a.cfg)
	if len(a.cfg.agent) > 0 && filepath.Base(a.cfg.agent[0]) == "npx" {
		what += " (npx " + strings.Join(a.cfg.agent[1:], " ") + "; the first run downloads it)"
	}
	var stopSpin func()
	if a.out != nil && a.out.IsLive() {
		stopSpin = a.out.Spin("starting agent " + what + "…")
	} else if len(a.cfg.agent) > 0 && !a.cfg.json && !a.cfg.quiet {
		a.errs.Line(tty.StyleDim, "acphost: starting agent "+what+"…")
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

// beginReplay announces the recorded session about to be continued and
// returns what shows its replayed history dimmed (nil without human
// output).
func (a *app) beginReplay(r state.Record) *replay {
	if a.out == nil {
		return nil
	}
	what := "continuing session " + acphost.SafeText(r.ID)
	if t := oneLine(acphost.SafeText(r.Title), 60); t != "" {
		what += " (" + t + ")"
	}
	a.out.Line(tty.StyleDim, what)
	return &replay{s: a.out}
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
	a.note(tty.StyleDim, "session "+how)
	a.mu.Lock()
	a.rec = r
	a.mu.Unlock()
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

// setMode switches sess to mode id, naming the agent's modes when it has
// no such mode.
func (a *app) setMode(sess *acphost.Session, id string) error {
	modes, optionID := sessionModes(sess)
	if len(modes.AvailableModes) == 0 {
		return errors.New("the agent offers no modes")
	}
	if !slices.ContainsFunc(modes.AvailableModes, func(m acphost.SessionMode) bool { return m.ID == id }) {
		return fmt.Errorf("the agent has no such mode; its modes: %s", modeList(modes))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return switchMode(ctx, sess, optionID, id)
}

// modeList is "default (Default), plan (Plan)".
func modeList(modes acphost.SessionModes) string {
	var parts []string
	for _, m := range modes.AvailableModes {
		p := acphost.SafeText(m.ID)
		if n := oneLine(acphost.SafeText(m.Name), 40); n != "" && n != p {
			p += " (" + n + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// useSession makes sess the one prompts go to, and records it.
// The session left behind is recorded as no longer open here.
func (a *app) useSession(sess *acphost.Session) {
	var left *state.Record
	a.mu.Lock()
	if a.sess != sess {
		if a.rec.ID != sess.ID() {
			if a.rec.ID != "" { // written once: let go of it
				old := a.rec
				left = &old
			}
			a.rec = state.Record{}
		}
		a.sess = sess
	}
	a.mu.Unlock()
	if left != nil && a.store != nil {
		left.PID, left.TurnSince, left.Control = 0, time.Time{}, ""
		if err := a.store.Put(*left); err != nil {
			a.diag(tty.StyleYellow, "%v", err)
		}
	}
	a.record()
}

func (a *app) session() *acphost.Session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sess
}

// record writes the current session's record: new, or its last use,
// title and mode.
func (a *app) record() {
	if a.store == nil {
		return
	}
	a.mu.Lock()
	sess := a.sess
	r := a.rec
	a.mu.Unlock()
	if sess == nil {
		return
	}
	now := time.Now()
	if r.ID != sess.ID() || r.Created.IsZero() {
		r = state.Record{ID: sess.ID(), Created: now}
	}
	r.Agent, r.Command = recordAgent(a.cfg)
	r.SSH, r.URL = a.cfg.remote.ssh, a.cfg.remote.url
	r.Cwd, r.LastUsed = a.cwd, now
	a.mu.Lock()
	r.PID, r.TurnSince, r.Control = os.Getpid(), a.turnSince, a.controlPath()
	if a.released {
		r.PID, r.TurnSince, r.Control = 0, time.Time{}, ""
	}
	a.mu.Unlock()
	if t := sess.Details().Title; t != "" {
		r.Title = t
	}
	if m := sess.Modes().CurrentModeID; m != "" {
		r.Mode = m
	}
	if err := a.store.Put(r); err != nil {
		a.diag(tty.StyleYellow, "%v", err)
		return
	}
	a.mu.Lock()
	if a.sess == sess {
		a.rec = r
	}
	a.mu.Unlock()
}

// release records that this process no longer has its session open.
func (a *app) release() {
	a.mu.Lock()
	a.released, a.turnSince = true, time.Time{}
	a.mu.Unlock()
	a.record()
}

// closeClient closes the agent. An agent that had died after its last
// turn is reported but does not change the exit status: every turn ended.
func (a *app) closeClient(client *acphost.ACPClient) {
	err := client.Close()
	if err != nil && !a.failed && !a.quitting() {
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
	switch {
	case a.cfg.remote.url != "":
		name += " at " + acphost.SafeText(a.cfg.remote.url)
	case len(a.cfg.agent) == 0:
		name += " (built-in demo)"
	}
	parts := []string{"acphost", name, "session " + acphost.SafeText(sess.ID())}
	modes, _ := sessionModes(sess)
	if m := sess.Enforcement().Mode; m != "" {
		// The mode the host set last (plan mode's, RequireAsking's),
		// until the agent reports another: its confirming update may
		// still be on its way.
		modes.CurrentModeID = m
	}
	if a.cfg.mode != "" && a.modeSet {
		// Set and accepted; the agent's confirming update may still be
		// on its way.
		modes.CurrentModeID = a.cfg.mode
	}
	if m := currentMode(modes); m != "" {
		parts = append(parts, "mode: "+m)
	}
	a.human.setMode(modes.CurrentModeID)
	parts = append(parts, "permission: "+a.permissionLabel(client))
	if w := client.Containment().Word(); w != "" {
		parts = append(parts, "containment: "+w)
	}
	a.out.Line(tty.StyleDim, strings.Join(parts, " · "))
	if a.stdinTTY && len(a.cfg.prompts) == 0 {
		hint := "/help lists the commands; a prompt typed while a turn runs is queued; Ctrl-C stops a turn"
		if a.ed != nil {
			hint += "; Tab completes, Up recalls"
		}
		a.out.Line(tty.StyleDim, hint)
	}
}

// currentMode names the session's current mode, with its description: an
// agent's own mode (Claude's "auto", say) may run tools without asking,
// whatever the host's permission policy.
func currentMode(modes acphost.SessionModes) string {
	if modes.CurrentModeID == "" {
		return ""
	}
	s := oneLine(acphost.SafeText(modes.CurrentModeID), 64) // the agent's word, any length
	for _, m := range modes.AvailableModes {
		if m.ID == modes.CurrentModeID {
			if d := oneLine(acphost.SafeText(m.Description), 80); d != "" {
				s += " (" + d + ")"
			} else if n := oneLine(acphost.SafeText(m.Name), 40); n != "" && n != m.ID {
				s += " (" + n + ")"
			}
		}
	}
	return s
}

// permissionLabel tells what will happen, not what was asked for: the
// policy, and what holds of it (see enforcementNote).
func (a *app) permissionLabel(client *acphost.ACPClient) string {
	p := a.cfg.permission
	if a.cfg.noOneToAsk && a.cfg.nonInteractive == nonInteractiveFail {
		p = "fail (nobody to ask: --non-interactive-permissions fail)"
	}
	if a.cfg.policy != nil {
		p = filepath.Base(a.cfg.policy.Source) + ", else " + p
	}
	if client.PlanMode() && p != permPlan {
		p += " + plan mode"
	}
	if note := enforcementNote(client.Enforcement(), a.cfg.permission); note != "" {
		p += " (" + note + ")"
	}
	return p
}

// enforcementNote says which layers hold: in plan mode, each of them;
// under a policy that rejects or asks, whether the agent asks at all.
func enforcementNote(e acphost.Enforcement, policy string) string {
	if !e.PlanMode && policy == permAllow {
		return ""
	}
	return e.String()
}

// chat reads prompts and commands from standard input until it ends, a
// signal or /quit, or the agent dies.
func (a *app) chat(client *acphost.ACPClient) {
	a.chatting.Store(true)
	defer a.chatting.Store(false)
	for {
		scr := a.out
		if scr == nil && a.stdinTTY {
			scr = a.errs
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
		if a.quitting() {
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
		case <-a.quit:
		case <-agentDone:
			dead.Store(true)
		case <-ctx.Done():
		}
		cancel()
	}()
	line, queued, ok, err := a.in.Next(ctx)
	if err != nil {
		cancel()
		return "", false, false, dead.Load() && !a.quitting()
	}
	return line, queued, ok, false
}

// onQueued acts on a line typed while a turn runs: /cancel and /quit at
// once, anything else queued.
func (a *app) onQueued(line string, n int) bool {
	switch strings.TrimSpace(line) {
	case "/cancel":
		a.cancelTurn("cancelling the turn")
		return false
	case "/quit", "/exit":
		a.onSignal(syscall.SIGINT, true)
		return false
	}
	if a.out != nil {
		a.out.Forget()
		a.out.Line(tty.StyleDim, fmt.Sprintf("queued (%d): %s", n, oneLine(acphost.SafeText(line), 60)))
	}
	return true
}

// turn runs one prompt and reports whether the next may run. left is how
// many -p prompts follow (-1: prompts come from stdin).
func (a *app) turn(prompt string, echo bool, left int) bool {
	sess := a.session()
	client := a.client
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.mu.Lock()
	a.turnCancel, a.interrupted = cancel, false
	a.permFail = ""
	a.turnSince = time.Now()
	a.mu.Unlock()
	a.record()
	a.humanWait.Store(0)
	if a.stdinTTY {
		a.in.SetQueueing(true)
		defer a.in.SetQueueing(false)
	}

	a.sink.beginTurn(prompt, echo)
	start := time.Now()
	// Ctrl-C cancels ctx rather than calling client.Cancel: Cancel is lost
	// when it comes before the library has registered the turn.
	resp, err := sess.GenerateStream(ctx, acphost.Request{Prompt: prompt}, a.sink.event)
	r := turnResult{resp: resp, err: err, elapsed: time.Since(start), stop: resp.StopReason}

	a.mu.Lock()
	a.turnCancel = nil
	a.turnSince = time.Time{}
	interrupted := a.interrupted
	permFail := a.permFail
	a.mu.Unlock()

	quitting := a.quitting()
	if permFail != "" && !quitting {
		if r.stop == "" {
			r.stop = acphost.StopCancelled
		}
		a.sink.endTurn(r)
		a.record()
		a.failed = true
		next := ""
		switch {
		case left > 0:
			next = fmt.Sprintf("; the %d prompt(s) left do not run", left)
		case left < 0:
			next = "; no more prompts are read"
		}
		a.diag(tty.StyleRed, "permission request for %s with nobody to answer it (--non-interactive-permissions fail): the turn is cancelled%s; the exit status will be 1", permFail, next)
		return false
	}
	cancelled := errors.Is(err, context.Canceled) && interrupted && client.Err() == nil
	if cancelled && r.stop == "" {
		r.stop = acphost.StopCancelled // cancelled before the agent saw it
	}
	r.userCancel = cancelled && !errors.Is(err, acphost.ErrCancelUnconfirmed)
	a.sink.endTurn(r)
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
		a.diag(tty.StyleRed, "the turn timed out after %v (--timeout applies to each turn); %s; the exit status will be 1", a.cfg.timeout, next)
		a.noteUnconfirmed(err)
		return true
	case cancelled:
		a.noteUnconfirmed(err)
		return true
	case a.recovers && errors.Is(err, acphost.ErrContextLost):
		a.diag(tty.StyleYellow, "the agent was restarted in a fresh session (it could not re-attach this one, so it has no memory of it); the prompt was not sent: sending it again")
		return a.turn(prompt, echo, left)
	case a.recovers && errors.Is(err, acphost.ErrAgentExited):
		a.failed = true
		a.reportAgentError("the agent failed", err)
		a.diag(tty.StyleYellow, "the next prompt restarts the agent (re-attaching this session where the agent keeps sessions); or /quit, and later acphost --resume last")
		return true
	case client.Err() != nil || dead(err):
		a.failed = true
		a.reportAgentError("the agent failed", err)
		if a.store != nil && !a.recovers {
			a.diag(tty.StyleYellow, "acphost --resume last continues this session with a new agent, where the agent keeps sessions")
		}
		return false
	case errors.Is(err, acphost.ErrUnaskedChange):
		a.failed = true
		a.diag(tty.StyleRed, "%s", unaskedMessage(err))
		return true
	case needsLogin(err):
		a.failed = true
		a.reportNeedsLogin(err)
		return left < 0 // prompts of the command line would be refused too
	default:
		a.failed = true
		a.diag(tty.StyleRed, "the turn failed: %s", errMsg(err))
		if errors.As(err, new(*acphost.RPCError)) {
			a.showStderrTail(err)
		}
		return true
	}
}

func (a *app) noteUnconfirmed(err error) {
	if errors.Is(err, acphost.ErrCancelUnconfirmed) {
		a.diag(tty.StyleYellow, "the agent did not confirm the cancellation; it will be restarted before the next turn (the conversation is lost)")
	}
}

// unaskedMessage explains a turn stopped for a change the agent made
// without the host's consent, and what to do about it.
func unaskedMessage(err error) string {
	var uc *acphost.UnaskedChangeError
	if !errors.As(err, &uc) {
		return errMsg(err)
	}
	what := fmt.Sprintf("%s %q", acphost.SafeText(string(uc.ToolCall.Kind)), oneLine(acphost.SafeText(uc.ToolCall.Title), 60))
	if uc.PlanMode {
		return "plan mode: the agent reports it ran " + what + " anyway; the turn was stopped. Its own mode does not keep it from changing files; the kernel layer (Linux Landlock) does: see the header"
	}
	msg := "the agent ran " + what + " without asking"
	if uc.Mode != "" {
		msg += " (its mode " + strconv.Quote(acphost.SafeText(uc.Mode)) + " does not ask)"
	}
	msg += "; the turn was stopped"
	if len(uc.AskingModes) > 0 {
		msg += "; modes that ask: " + acphost.SafeText(strings.Join(uc.AskingModes, ", ")) + " (/mode ID, or --mode ID)"
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
	a.diag(tty.StyleRed, "%s: %s", what, errMsg(err))
	a.showStderrTail(err)
}

// showStderrTail shows the last lines the agent wrote on stderr, unless
// they go elsewhere (--stderr), and the known cause of a failure there.
func (a *app) showStderrTail(err error) {
	defer func() {
		if hint := rootHint(os.Geteuid(), a.cfg, os.Environ()); hint != "" {
			a.diag(tty.StyleYellow, "%s", hint)
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
		tail, named = a.stderrTail.String(), 0
	}
	lines := strings.Split(strings.TrimRight(acphost.SafeText(tail), " \t\r\n"), "\n")
	if len(lines) <= named || lines[0] == "" { // none, or the one line the message already names
		return
	}
	if len(lines) > maxStderrLines {
		lines = lines[len(lines)-maxStderrLines:]
	}
	var b strings.Builder
	b.WriteString(a.errs.Style(tty.StyleDim, "agent stderr (last lines):") + "\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
	if a.out != nil {
		a.out.BreakLine()
	}
	a.errs.Block(b.String())
}

// handleSignals implements Ctrl-C and SIGTERM until done is closed.
func (a *app) handleSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			a.onSignal(sig, false)
		}
	}
}

// cancelTurn cancels the running turn, if any, as a first Ctrl-C does.
func (a *app) cancelTurn(why string) bool {
	a.mu.Lock()
	if a.turnCancel == nil || a.interrupted || a.quitting() {
		a.mu.Unlock()
		return false
	}
	a.interrupted = true
	cancel := a.turnCancel
	a.mu.Unlock()
	more := ""
	if n := a.in.Queued(); n > 0 {
		more = fmt.Sprintf("; %d queued prompt(s) run next", n)
	}
	// The notice first, in place of a running tool's line: the tool's
	// final line comes once the agent has stopped it.
	if a.out != nil {
		a.out.DropRunningTool()
	}
	a.diag(tty.StyleYellow, "%s (Ctrl-C again to quit%s)", why, more)
	cancel()
	return true
}

// onSignal: a first Ctrl-C cancels the running turn; a second one, one
// between turns, SIGTERM and /quit (asked) close the agent and exit.
func (a *app) onSignal(sig os.Signal, asked bool) {
	if sig == os.Interrupt && !asked && a.cancelTurn("cancelling the turn") {
		return
	}
	if sig == os.Interrupt && !asked && a.ed != nil && a.chatting.Load() && a.ed.InterruptLine() {
		return // the editor clears the line, or quits at an empty one
	}
	a.quitOnSignal(sig, asked)
}

// quitOnInterrupt quits as Ctrl-C at an empty line does.
func (a *app) quitOnInterrupt() { a.quitOnSignal(os.Interrupt, false) }

// quitOnSignal closes the agent and ends the run, with the exit status
// the signal (or /quit, asked) calls for.
func (a *app) quitOnSignal(sig os.Signal, asked bool) {
	a.mu.Lock()
	if a.quitting() {
		a.mu.Unlock()
		return
	}
	a.quitCode = exitInterrupt
	switch {
	case asked:
		a.quitCode = exitOK
	case sig != os.Interrupt:
		a.quitCode = exitTerm
	}
	close(a.quit)
	client, startCancel := a.client, a.startCancel
	a.mu.Unlock()
	if !asked {
		a.diag(tty.StyleYellow, "closing the agent")
	}
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
