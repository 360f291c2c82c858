// Opening sessions on an agent (new, load, resume) and the records of the
// sessions a connection opened.

package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acphost/acphost/acp"
)

type openResult struct {
	SessionID     string            `json:"sessionId"`
	Modes         *acp.SessionModes `json:"modes"`
	ConfigOptions json.RawMessage   `json:"configOptions"`
}

// openKind is how a session is opened on an agent.
type openKind int

const (
	openNew openKind = iota
	openLoad
	openResume
	openFork // unstable: a new session from an existing one
)

var openMethods = [...]string{openNew: "session/new", openLoad: "session/load", openResume: "session/resume", openFork: "session/fork"}

// opensNew reports whether the agent answers how with a new session id.
func opensNew(how openKind) bool { return how == openNew || how == openFork }

// withModes adds the session's modes to the agent's refusal of a mode, so
// that a person who asked for one that does not exist learns which do.
func withModes(err error, m acp.SessionModes) error {
	var rpc *RPCError
	if !errors.As(err, &rpc) || len(m.AvailableModes) == 0 {
		return err
	}
	ids := make([]string, len(m.AvailableModes))
	for i, mode := range m.AvailableModes {
		ids[i] = mode.ID
	}
	return fmt.Errorf("%w (the agent's modes: %s)", err, strings.Join(ids, ", "))
}

// openDefault opens the client's default session at Start: a new one, or
// the stored session id re-attached by load, else resume.
func (a *agent) openDefault(ctx context.Context, h *Session, id string) error {
	if id == "" {
		return a.open(ctx, h, openNew)
	}
	h.id = id
	h.conversed = true
	for _, how := range []openKind{openLoad, openResume} {
		if a.supports(how) {
			return a.open(ctx, h, how)
		}
	}
	return fmt.Errorf("acphost: re-attaching session %s at start: the agent offers neither session/load nor session/resume: %w", id, ErrUnsupported)
}

// open opens h's session on this agent (new, load or resume), binds the
// agent-side record to h and sets h's initial mode.
func (a *agent) open(ctx context.Context, h *Session, how openKind) (err error) {
	method := openMethods[how]
	if !a.supports(how) {
		if how == openFork && !a.opts.Unstable {
			return fmt.Errorf("acphost: session/fork is unstable: it needs ACPOptions.Unstable: %w", ErrUnsupported)
		}
		return fmt.Errorf("acphost: the agent does not support %s: %w", method, ErrUnsupported)
	}
	servers, err := h.mcpServers(a)
	if err == nil {
		err = checkMCPServers(method, servers, a.caps.MCPCapabilities)
	}
	if err != nil {
		return err
	}
	params := map[string]any{"cwd": h.opts.Dir, "mcpServers": servers}
	if dirs := h.opts.AdditionalDirectories; len(dirs) > 0 {
		if err := a.checkAdditionalDirectories(method, dirs); err != nil {
			return err
		}
		params["additionalDirectories"] = dirs
	}
	if how == openFork {
		params["sessionId"] = h.forkOf
	}
	if !opensNew(how) {
		params["sessionId"] = h.ID()
		known := a.sessions.known(h.ID()) != nil
		s := a.session(h.ID())
		prev := s.pub.Swap(h) // the replay goes to h's hooks
		defer func() {
			switch {
			case err == nil:
			case known:
				s.pub.Store(prev)
			default: // not opened after all: its id is foreign again
				a.sessions.drop(h.ID())
			}
		}()
	}
	res, err := a.openCall(ctx, how, params, h)
	tried := a.opts.AuthMethod
	if errors.Is(err, &RPCError{Code: acp.CodeAuthRequired}) && tried == "" {
		if tried = a.firstAuthMethod(); tried != "" {
			if err := a.authenticate(ctx, tried); err != nil {
				return err
			}
			res, err = a.openCall(ctx, how, params, h)
		}
	}
	if errors.Is(err, &RPCError{Code: acp.CodeAuthRequired}) {
		err = &AuthError{Methods: a.init.AuthMethods, Tried: tried, Err: err, program: a.started()}
	}
	if err != nil {
		return wrapOp(method, err)
	}
	if opensNew(how) {
		if res.SessionID == "" {
			return &ProtocolError{Msg: method + " answered without a sessionId"}
		}
		if s := a.sessions.known(res.SessionID); s == nil || s.pub.Load() != h {
			return &ProtocolError{Msg: fmt.Sprintf("%s answered with the id of a session already open on this connection (%q)", method, res.SessionID)}
		}
		h.setID(res.SessionID)
	}
	s := a.session(h.ID())
	s.bind(h)
	s.setState(res.Modes, acp.DecodeConfigOptions(res.ConfigOptions))
	if mode := h.wantedMode(); mode != "" {
		held, err := a.holdMode(ctx, h, mode)
		if !held && err == nil {
			reports := s.modeReportCount()
			if err = a.call(ctx, "session/set_mode", map[string]string{"sessionId": h.ID(), "modeId": mode}, nil); err == nil {
				s.noteModeSet(mode, reports)
			}
		}
		if err != nil {
			return wrapOp(fmt.Sprintf("setting mode %q", mode), withModes(err, s.modes()))
		}
	}
	a.syncMode(ctx, h)
	return nil
}

// checkAdditionalDirectories refuses additional directories the agent
// cannot take: it did not advertise them, or one is not absolute.
func (a *agent) checkAdditionalDirectories(method string, dirs []string) error {
	if !a.caps.SessionCapabilities.AdditionalDirectories.present() {
		return fmt.Errorf("acphost: %s: the agent does not support additionalDirectories: %w", method, ErrUnsupported)
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("acphost: %s: SessionOptions.AdditionalDirectories: %q is not absolute", method, d)
		}
	}
	return nil
}

func (a *agent) supports(how openKind) bool {
	switch how {
	case openLoad:
		return a.caps.LoadSession
	case openResume:
		return a.caps.SessionCapabilities.Resume.present()
	case openFork:
		return a.opts.Unstable && a.caps.SessionCapabilities.Fork.present()
	}
	return true
}

// openCall makes the open request. A load's replayed updates are marked as
// replay and all delivered before it returns (a barrier, as for prompts).
func (a *agent) openCall(ctx context.Context, how openKind, params map[string]any, h *Session) (openResult, error) {
	id := h.ID()
	var res openResult
	switch how {
	case openNew, openFork:
		return res, a.callOpening(ctx, openMethods[how], params, &res, h)
	case openResume:
		return res, a.call(ctx, openMethods[how], params, &res)
	}
	if a.cb.fromDispatcher() {
		return res, fmt.Errorf("acphost: LoadSession from OnUpdate or emit: %w", ErrReentrant)
	}
	s := a.session(id)
	s.replaying.Store(true)
	done := make(chan struct{})
	err := a.callWithBarrier(ctx, "session/load", params, &res, func() {
		s.replaying.Store(false)
		close(done)
	})
	if err != nil {
		s.replaying.Store(false)
		return res, err
	}
	select {
	case <-done:
		return res, nil
	case <-a.dead:
		return res, a.cause
	}
}

// callOpening is call for session/new: until it is answered the agent's
// updates for a session not known yet are held back (see park), and the
// new session's record is made on the read loop as the answer is read,
// so what the agent sends after its answer finds it.
func (a *agent) callOpening(ctx context.Context, method string, params map[string]any, res *openResult, h *Session) error {
	nc := &newCall{h: h}
	a.sessions.beginOpening(nc)
	defer a.opened(nc, nil) // unanswered: hold nothing back for it any more
	a.lift(1)
	defer a.lift(-1)
	return a.callError(method, a.guardedCall(ctx, method, params, res, func(result json.RawMessage) { a.opened(nc, result) }))
}

// opened ends the wait of session/new call nc, making the record of the
// session it answered (when result holds one), and has the dispatcher
// release what it held back. It runs on the read loop for an answer.
func (a *agent) opened(nc *newCall, result json.RawMessage) {
	waited := a.sessions.endOpening(nc, result, func(id string) *sessionState {
		s := newSessionState(a, id)
		s.bind(nc.h)
		return s
	})
	if waited {
		a.dispatcher.q.push(item{kind: itemBarrier, barrier: a.dispatcher.releaseParked}, false) // on the dispatcher, never here
	}
}

// callWithBarrier is call, with atBarrier run on the dispatcher once every
// message read before the answer has been dispatched (queued on the read
// loop as the answer is read, before the call returns).
func (a *agent) callWithBarrier(ctx context.Context, method string, params, result any, atBarrier func()) error {
	err := a.guardedCall(ctx, method, params, result, func(json.RawMessage) { a.dispatcher.q.barrier(atBarrier) })
	return a.callError(method, err)
}

// session returns the record of a session the host opens or uses,
// creating it.
func (a *agent) session(id string) *sessionState {
	return a.sessions.ensure(id, func() *sessionState { return newSessionState(a, id) })
}

// mcpCaps is the agent's mcpCapabilities.
type mcpCaps struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
	ACP  bool `json:"acp"` // unstable: MCP over the ACP connection
}

// transports lists what the agent takes, stdio first (it is baseline).
func (c mcpCaps) transports() []string {
	out := []string{string(acp.MCPStdio)}
	for _, t := range []struct {
		on   bool
		name string
	}{{c.HTTP, "http"}, {c.SSE, "sse"}, {c.ACP, "acp"}} {
		if t.on {
			out = append(out, t.name)
		}
	}
	return out
}

// takes reports whether the agent advertised transport t.
func (c mcpCaps) takes(t acp.MCPTransport) bool {
	return slices.Contains(c.transports(), string(t))
}

// checkMCPServers refuses, before anything is sent, a list the agent
// cannot take: a server without a name (or with one already used), one
// missing what its transport needs, or one of a transport the agent did
// not advertise (an *MCPServerError matching ErrUnsupported).
func checkMCPServers(method string, servers []acp.MCPServer, caps mcpCaps) error {
	seen := make(map[string]bool, len(servers))
	for i, m := range servers {
		name, t, err := m.Check()
		if err == nil && seen[name] {
			err = fmt.Errorf("the name %q is taken by an earlier server", name)
		}
		if err != nil {
			return fmt.Errorf("acphost: %s: mcpServers[%d]: %w", method, i, err)
		}
		seen[name] = true
		if !caps.takes(t) {
			return &MCPServerError{Method: method, Server: name, Transport: t, AgentTransports: caps.transports()}
		}
	}
	return nil
}
