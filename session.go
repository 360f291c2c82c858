package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/acphost/acphost/acp"
)

// Session is one conversation with the agent. A client starts with one (see
// ACPClient.Session) and may open, load and resume more on the same agent
// process. Each session has its own turn serialization, updates and pending
// permissions: an update or request for one session never reaches another
// session's hooks. All methods are safe for concurrent use.
//
// A Session outlives agent restarts: after the client restarts its agent it
// re-attaches each live session by session/load or session/resume when the
// agent supports it, and otherwise opens a fresh one and reports the lost
// context (see RestartError).
type Session struct {
	c       *ACPClient
	opts    SessionOptions
	turnSem chan struct{}

	mu        sync.Mutex
	id        string
	running   *turn
	holding   bool          // a turn holds the session but is not running yet
	stopAsked bool          // Cancel came while holding: stop the turn once it runs
	restarted *RestartError // reported by the next turn
	closed    bool
	forkOf    string // ForkSession: the session it is made from
	// conversed: the session has a conversation the agent may keep — it
	// was opened from a stored one (load, resume, fork) or a prompt was
	// sent in it. One without has nothing a restart could lose.
	conversed bool
	setMode   string // the last mode SetMode set: re-applied when the session is opened again
	onClose   func() // set by a Pool: returns the session's slot

	planFrom     string       // the mode plan mode found the session in, restored when it goes off
	planSwitched bool         // plan mode switched the session's mode (planFrom is set)
	unasked      atomic.Int64 // changes the agent reported making without asking (Enforcement)
	host         hostServing  // ACPOptions.HostTools' servers for this session
}

// SessionOptions configures one session. Zero values take the client's.
type SessionOptions struct {
	// Dir is the session's working directory (absolute). Default: ACPOptions.Dir.
	Dir string
	// MCPServers are given to the agent (with the host tools' servers,
	// see ACPOptions.HostTools). Default: ACPOptions.MCPServers.
	MCPServers []acp.MCPServer
	// AdditionalDirectories are more workspace roots (absolute paths) for
	// the session, sent as additionalDirectories on session/new, load and
	// resume (and on the re-attach after a restart): the agent's file
	// scope grows, Dir stays the base of relative paths. Nil or empty
	// sends none. Only an agent that advertised
	// sessionCapabilities.additionalDirectories is sent them: with any
	// other, a non-empty list fails the open with ErrUnsupported, and a
	// relative path fails it with an error, before anything is sent.
	AdditionalDirectories []string
	// SystemPrompt is the session's system-level instructions, sent as
	// systemPrompt on session/new, and again on load, resume and fork (and
	// on the re-attach after a restart), as cwd and mcpServers are. Nil:
	// ACPOptions.SystemPrompt; a zero &acp.SystemPrompt{} sends none even
	// when that is set. It is checked before anything is sent: text blocks
	// only, at least one, none empty (acp.SystemPrompt.Check). Only an
	// agent that advertised sessionCapabilities.systemPrompt is sent one,
	// and override mode only one that advertised its override mode: with
	// any other the open fails with a *SystemPromptError matching
	// ErrSystemPromptUnsupported, nothing sent. The prompt is never
	// dropped silently, as the agent would then act without the
	// instructions the host relies on; a host that would rather go without
	// asks ACPClient.SystemPromptModes first.
	SystemPrompt *acp.SystemPrompt
	// OnUpdate receives this session's updates instead of ACPOptions.OnUpdate.
	OnUpdate func(acp.Update)
	// OnPermission answers this session's requests instead of
	// ACPOptions.OnPermission.
	OnPermission PermissionFunc
	// OnElicitation answers this session's elicitations instead of
	// ACPOptions.Elicitation.OnRequest. The capability is advertised per
	// connection, from ACPOptions alone: without ACPOptions.Elicitation.OnRequest
	// the agent is told elicitation is not served, and this is never asked.
	// Request-scoped elicitations (outside any session, even one during the
	// session/new that opens this session) go to ACPOptions.Elicitation.OnRequest.
	OnElicitation ElicitationFunc
	// Mode, if set, is set right after the session opens.
	Mode string
}

// ID returns the session id the agent assigned (it changes only when a
// restart could not keep the conversation).
func (s *Session) ID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

func (s *Session) setID(id string) {
	s.mu.Lock()
	s.id = id
	s.mu.Unlock()
}

// converse notes that the session has a conversation (see conversed).
func (s *Session) converse() {
	s.mu.Lock()
	s.conversed = true
	s.mu.Unlock()
}

func (s *Session) hasConversation() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conversed
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// state returns the agent-side record of the session on the current agent.
// It is an empty record, not kept, once the session is closed.
func (s *Session) state() *sessionState {
	a := s.c.agent()
	if st := a.sessions.known(s.ID()); st != nil {
		return st
	}
	return newSessionState(a.forSessions(), s.ID())
}

// Modes returns the session's modes as last reported by the agent.
func (s *Session) Modes() acp.SessionModes { return s.state().modes() }

// ConfigOptions returns the session's config options as last reported.
func (s *Session) ConfigOptions() []acp.ConfigOption { return s.state().configOptions() }

// Details returns what the agent has said of the session (its slash
// commands, title, context use and cost), kept current from its updates as
// they are delivered; a copy.
func (s *Session) Details() SessionDetails { return s.state().details() }

// SessionDetails is what the agent has said of a session, from its updates.
type SessionDetails struct {
	// Commands are the slash commands the agent offers
	// (available_commands_update), nil before it says.
	Commands []acp.AvailableCommand
	// Title and UpdatedAt are from session_info_update ("" until sent, or
	// once cleared); UpdatedAt is the agent's own timestamp, unparsed.
	Title, UpdatedAt string
	// Usage is the last usage_update; nil before one.
	Usage *ContextUsage
}

// ContextUsage is the session's context window use and cumulative cost.
type ContextUsage struct {
	Used, Size uint64    // tokens
	Cost       *acp.Cost // nil when the agent reports none
}

// SetMode asks the agent to switch the session to mode id. The agent
// confirms with a CurrentModeUpdate, which Modes reflects; Enforcement's
// Mode is id as soon as the agent accepted it, until the agent reports
// another. The mode is set again whenever the client re-attaches the
// session to a restarted agent (or opens it fresh after one), as
// SessionOptions.Mode is.
//
// While plan mode holds the session in the agent's plan mode, another mode
// the agent offers is not set: it is kept (Enforcement.RestoreMode) and
// set when plan mode goes off; one it does not offer is refused.
func (s *Session) SetMode(ctx context.Context, id string) error {
	a := s.c.agent()
	if held, err := a.holdMode(ctx, s, id); held || err != nil {
		return err
	}
	st := a.session(s.ID())
	reports := st.modeReportCount()
	err := a.call(ctx, "session/set_mode", map[string]string{"sessionId": s.ID(), "modeId": id}, nil)
	if err != nil {
		return withModes(err, s.Modes())
	}
	st.noteModeSet(id, reports)
	s.chose(id)
	return nil
}

// chose records mode id as the one the session's user wants: set again
// when the session is opened again, and, outside plan mode, no longer
// the one a plan mode turned off was to put back.
func (s *Session) chose(id string) {
	plan := s.c.PlanMode()
	s.mu.Lock()
	s.setMode = id
	if !plan {
		s.planFrom, s.planSwitched = "", false
	}
	s.mu.Unlock()
}

// wantedMode is the mode the session is to be in when it is opened (again,
// after a restart): the last SetMode's, else SessionOptions.Mode.
func (s *Session) wantedMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.setMode != "" {
		return s.setMode
	}
	return s.opts.Mode
}

// SetConfigOption sets a config option (value is a select option's value
// id, or a bool for a boolean option) and returns the complete state the
// agent answered with. A mode set by the config option of category "mode"
// is held by plan mode as SetMode's is (the options are then returned as
// they are).
func (s *Session) SetConfigOption(ctx context.Context, configID string, value any) ([]acp.ConfigOption, error) {
	params := map[string]any{"sessionId": s.ID(), "configId": configID, "value": value}
	if _, ok := value.(bool); ok {
		params["type"] = "boolean"
	}
	var res struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	a := s.c.agent()
	mode, isMode := value.(string)
	isMode = isMode && a.sessions.known(s.ID()) != nil && a.session(s.ID()).modeOffer().configID == configID
	if isMode {
		if held, err := a.holdMode(ctx, s, mode); err != nil {
			return nil, err
		} else if held {
			return s.ConfigOptions(), nil
		}
	}
	if err := a.call(ctx, "session/set_config_option", params, &res); err != nil {
		return nil, err
	}
	if isMode {
		s.chose(mode)
	}
	opts := acp.DecodeConfigOptions(res.ConfigOptions)
	if st := a.sessions.known(s.ID()); st != nil {
		st.setState(nil, opts)
	}
	return opts, nil
}

// SetTitle asks the agent to store title as the session's title
// (session/set_title, unstable: it needs ACPOptions.Unstable and the
// agent's sessionCapabilities.title) and returns the title the agent
// stored, which may differ (trimmed, shortened). Without them it returns
// an error matching ErrUnsupported without calling.
func (s *Session) SetTitle(ctx context.Context, title string) (string, error) {
	a := s.c.agent()
	if !a.opts.Unstable || !a.caps.SessionCapabilities.Title.present() {
		return "", fmt.Errorf("acphost: session/set_title needs ACPOptions.Unstable and the agent's sessionCapabilities.title: %w", ErrUnsupported)
	}
	var res struct {
		Title *string `json:"title"`
	}
	if err := a.call(ctx, "session/set_title", map[string]string{"sessionId": s.ID(), "title": title}, &res); err != nil {
		return "", err
	}
	if res.Title != nil {
		return *res.Title, nil
	}
	return title, nil
}

// Generate runs one turn on this session with no cancellation.
func (s *Session) Generate(req Request) (Response, error) {
	return s.GenerateCtx(context.Background(), req)
}

// GenerateCtx runs one turn on this session; see ACPClient.GenerateCtx.
func (s *Session) GenerateCtx(ctx context.Context, req Request) (Response, error) {
	return s.generate(ctx, req, nil, 0)
}

// GenerateStream runs one turn on this session as events; see
// ACPClient.GenerateStream.
func (s *Session) GenerateStream(ctx context.Context, req Request, emit func(StreamEvent)) (Response, error) {
	return s.generate(ctx, req, emit, 0)
}

// generate runs a turn for the goroutine caller (0: this one; see
// callbacks.callerID).
func (s *Session) generate(ctx context.Context, req Request, emit func(StreamEvent), caller uint64) (Response, error) {
	w := s.watch(ctx)
	if w.Event != nil {
		emit = w.tee(s.c.opts.Debug.Logger, emit)
	}
	resp, err := s.runOne(ctx, req, emit, caller, w.Meta)
	if resp.SessionID == "" {
		resp.SessionID = s.ID() // a turn that failed before it ran
	}
	if emit != nil {
		emit(endEvent(resp, err))
	}
	if w.End != nil {
		s.c.agent().cb.safely("OnTurn's End", func() { w.End(resp, err) })
	}
	return resp, err
}

// watch asks ACPOptions.Debug.OnTurn how to watch a turn beginning.
func (s *Session) watch(ctx context.Context) (w TurnWatch) {
	hook := s.c.opts.Debug.OnTurn
	if hook == nil {
		return w
	}
	a := s.c.agent()
	a.cb.safely("OnTurn", func() { w = hook(ctx, TurnInfo{Session: s, Agent: a.init.AgentInfo}) })
	return w
}

// runOne runs one turn: it takes the session, makes sure the agent is live
// (restarting it if needed) and runs the prompt.
func (s *Session) runOne(ctx context.Context, req Request, emit func(StreamEvent), caller uint64, meta map[string]string) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	leave, reentrant := s.c.agent().cb.enterTurn(s.ID(), len(s.turnSem) > 0, caller)
	if reentrant {
		return Response{}, fmt.Errorf("acphost: a turn of session %s started from a callback that turn would wait for: %w", s.ID(), ErrReentrant)
	}
	defer leave()
	if s.isClosed() {
		return Response{}, fmt.Errorf("acphost: session %s is closed: %w", s.ID(), ErrClosed)
	}
	if err := s.acquireTurn(ctx); err != nil {
		return Response{}, err
	}
	s.hold(true)
	defer func() {
		s.hold(false)
		<-s.turnSem
	}()
	was := s.state().effectiveMode()
	a, err := s.c.readyAgent(ctx)
	if err != nil {
		return Response{}, err
	}
	restarted := s.takeRestart()
	if restarted != nil {
		if emit != nil {
			emit(StreamEvent{Type: EventRestart, Err: restarted, SessionID: s.ID()})
		}
		if restarted.ContextLost {
			return Response{SessionID: s.ID()}, restarted
		}
	}
	a.syncMode(ctx, s)
	if now := s.state().effectiveMode(); emit != nil && now != was && now != "" {
		// The host switched it (plan mode on or off, a restart): the
		// agent's confirmation may come before the turn sees it.
		emit(StreamEvent{Type: EventMode, Mode: now, SessionID: s.ID()})
	}
	s.converse() // the prompt may reach the agent: from here on a restart can lose it
	t := a.newTurn(s, req, emit)
	t.meta = meta
	resp, err := t.run(ctx, s, req)
	resp.Restarted = restarted
	return resp, err
}

// acquireTurn takes the session for one turn: turns of a session run one
// at a time, in the order they came.
func (s *Session) acquireTurn(ctx context.Context) error {
	select {
	case s.turnSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Enforcement reports which layers hold plan mode (or, outside it, the
// host's asking) for the session now; see Enforcement.
func (s *Session) Enforcement() Enforcement { return s.enforcement() }

// BeginHostTool is for HostTools implementations: call it as a call of a
// host tool arrives on session s, before any handler runs. It fills in
// call's SessionID and Turn and decides whether the call may run: it
// refuses (an error matching ErrRefused) a call when the session is
// closed or no turn of it is running, and, in plan mode, a call of a tool
// not ReadOnly.
// Otherwise it returns the ctx to run the handler in: it ends when ctx
// does or when the turn ends or is cancelled (the cause says which), and
// HostToolCallFrom reads call from it. Either way call end with the call's
// outcome (exactly once, from any goroutine): it reports EventHostTool to
// the turn's stream, after the updates read so far.
func (s *Session) BeginHostTool(ctx context.Context, call HostToolCall) (context.Context, func(HostToolCall), error) {
	return s.beginHostTool(ctx, call)
}

// Cancel stops this session's running turn, if any; see ACPClient.Cancel.
func (s *Session) Cancel() {
	s.mu.Lock()
	t := s.running
	if t == nil && s.holding {
		s.stopAsked = true
	}
	s.mu.Unlock()
	if t != nil {
		t.halt(errCancelCalled)
	}
}

// hold marks the session taken by a turn that is starting (true) or ended.
func (s *Session) hold(on bool) {
	s.mu.Lock()
	s.holding, s.stopAsked = on, false
	s.mu.Unlock()
}

// setRunning records the running turn; a Cancel that came while the turn
// was starting stops it now.
func (s *Session) setRunning(t *turn) {
	s.mu.Lock()
	s.running = t
	stop := t != nil && s.stopAsked
	s.stopAsked = false
	s.mu.Unlock()
	if stop {
		t.halt(errCancelCalled)
	}
}

// takeRestart returns the restart to report to the next turn, once.
func (s *Session) takeRestart() *RestartError {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.restarted
	s.restarted = nil
	return r
}

// Close ends the session: session/close when the agent supports it (it
// cancels any running turn), and the client forgets it. The client's
// default session closes with the client, unless a Pool handed it out.
func (s *Session) Close(ctx context.Context) error {
	if s == s.c.def && s.onClose == nil {
		return errors.New("acphost: the default session closes with the client")
	}
	s.mu.Lock()
	closed := s.closed
	s.closed = true
	s.mu.Unlock()
	if closed {
		return nil
	}
	if s.onClose != nil {
		defer s.onClose()
	}
	defer s.host.close()
	s.c.forget(s)
	a := s.c.agent()
	defer a.sessions.drop(s.ID())
	if a.terminals.terms != nil {
		a.terminals.terms.CloseOwner(s.ID())
	}
	if !a.caps.SessionCapabilities.Close.present() {
		return nil
	}
	return a.call(ctx, "session/close", map[string]string{"sessionId": s.ID()}, nil)
}

// Stream returns the turn as an iterator for a for-range loop. The turn
// starts when the loop starts; breaking out of the loop (or a panic in its
// body) cancels it and waits for the cancellation to finish. The last pair
// carries the "done" event, or an "error" event with the turn's error (also
// when the turn could not start). Only end events carry an error, and a
// stop — ctx cancelled — ends with "done" (StopReason "cancelled", an error
// wrapping context.Canceled) once the agent confirms it: do not treat every
// error as fatal.
func (s *Session) Stream(ctx context.Context, req Request) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		caller := s.c.agent().cb.callerID() // the turn runs on another goroutine, for this one
		ctx, cancel := context.WithCancel(ctx)
		events, acks := make(chan StreamEvent), make(chan bool)
		quit, finished := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			_, _ = s.generate(ctx, req, func(ev StreamEvent) {
				select {
				case events <- ev:
				case <-quit:
					return
				}
				select {
				case ok := <-acks:
					if !ok {
						cancel()
					}
				case <-quit:
				}
			}, caller)
		}()
		defer func() {
			cancel()
			close(quit)
			<-finished
		}()
		stopped := false
		for {
			select {
			case ev := <-events:
				if stopped {
					acks <- false
					continue
				}
				stopped = !yield(ev, endError(ev))
				acks <- !stopped
			case <-finished:
				return
			}
		}
	}
}

// endEvent is a turn's last event: done when it ended (a cancellation the
// agent confirmed included, with Err set), error when it failed.
func endEvent(resp Response, err error) StreamEvent {
	ev := StreamEvent{Type: EventDone, StopReason: resp.StopReason, Err: err, SessionID: resp.SessionID}
	confirmedCancel := resp.StopReason == acp.StopCancelled && !errors.Is(err, ErrCancelUnconfirmed) && !isDeath(err)
	if err != nil && !confirmedCancel {
		ev.Type = EventError
	}
	return ev
}

// beginHostTool is Session.BeginHostTool.
func (s *Session) beginHostTool(ctx context.Context, call HostToolCall) (context.Context, func(HostToolCall), error) {
	s.mu.Lock()
	t, closed := s.running, s.closed
	s.mu.Unlock()
	call.SessionID = s.ID()
	if closed {
		call.Err = fmt.Errorf("acphost: host tool %s: session %s is closed: %w", call.Tool, call.SessionID, ErrRefused)
		return ctx, func(HostToolCall) {}, call.Err
	}
	if t == nil {
		call.Err = fmt.Errorf("acphost: host tool %s: no turn of session %s is running: %w", call.Tool, call.SessionID, ErrRefused)
		return ctx, func(HostToolCall) {}, call.Err
	}
	call.Turn = t.seq
	report := func(done HostToolCall) {
		done.SessionID, done.Turn = call.SessionID, call.Turn
		t.emitHostTool(done)
	}
	if s.c.PlanMode() && !call.ReadOnly {
		call.Err = fmt.Errorf("acphost: host tool %s is not annotated read-only (readOnlyHint), and plan mode is on: %w", call.Tool, ErrRefused)
		report(call)
		return ctx, func(HostToolCall) {}, call.Err
	}
	hctx, cancel := context.WithCancelCause(context.WithValue(ctx, hostCallKey{}, &call))
	stop := context.AfterFunc(t.ctx, func() { cancel(context.Cause(t.ctx)) })
	once := sync.Once{}
	return hctx, func(done HostToolCall) {
		once.Do(func() {
			stop()
			cancel(errTurnOver)
			report(done)
		})
	}, nil
}

// mcpServers returns the servers to give the agent for session h: its
// SessionOptions.MCPServers and its host tools' (served on first use;
// for an agent beyond the host's loopback, through its link's forward).
func (h *Session) mcpServers(a *agent) ([]acp.MCPServer, error) {
	ht := h.c.opts.HostTools
	if ht == nil {
		return h.opts.MCPServers, nil
	}
	p := a.link.promises()
	local := p.Transport == "process" || p.Transport == "stream"
	fwd := forwarderOf(a.link)
	if !local && fwd == nil {
		return nil, fmt.Errorf("acphost: host tools are served on the host's loopback, which a %s link's agent does not share, and the link forwards no port: %w", p.Transport, ErrUnsupported)
	}
	host, err := h.host.serve(func() ([]acp.MCPServer, func(), error) {
		var servers []acp.MCPServer
		var stop func()
		var err error
		if perr := a.cb.safely("HostTools.ServeSession", func() { servers, stop, err = ht.ServeSession(h) }); perr != nil {
			err = perr
		}
		return servers, stop, err
	})
	if err != nil {
		return nil, err
	}
	if !local {
		if host, err = forwarded(host, fwd); err != nil {
			return nil, err
		}
	}
	return append(append([]acp.MCPServer{}, h.opts.MCPServers...), host...), nil
}

// enforcement is Session.Enforcement: which layers hold for s now.
func (s *Session) enforcement() Enforcement {
	a := s.c.agent()
	st := s.state()
	off := st.modeOffer()
	cur := st.effectiveMode()
	e := Enforcement{PlanMode: s.c.PlanMode(), Mode: cur, Unasked: int(s.unasked.Load())}
	if a.profile != nil {
		e.Profile = a.profile.Name
	}
	e.ModeKind = a.profile.kind(off.mode(cur))
	if cur == "" {
		e.ModeKind = ModeUnknown
	}
	e.PlanModeID = a.profile.planMode(off.modes)
	e.AgentMode = e.PlanMode && e.PlanModeID != "" && cur == e.PlanModeID
	s.mu.Lock()
	if s.planSwitched {
		e.RestoreMode = s.planFrom
	}
	s.mu.Unlock()
	e.AskingModes = namedModes(a.profile.askingModes(off.modes, maxNamedModes))
	e.Kernel = a.planKernel
	if e.PlanMode && !e.Kernel {
		e.KernelReason = s.c.kernelReason(a)
	}
	if e.Kernel {
		e.View, e.ViewReason = a.planView, a.noView
	}
	e.Detection = e.PlanMode || s.c.opts.RequireAsking
	e.ActsUnasked = e.ModeKind == ModeUnasked || e.Unasked > 0
	return e
}

func (s *Session) noteRestart(r *RestartError) {
	s.mu.Lock()
	s.restarted = r
	s.mu.Unlock()
}
