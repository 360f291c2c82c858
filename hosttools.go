// Host tools: functions of the host's own that the agent calls (over MCP,
// served by package hosttools), seen and gated on the host side.

package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"

	"github.com/acphost/acphost/acp"
)

// HostTools serves tools of the host's own to every session of a client
// (ACPOptions.HostTools). Package hosttools implements it with the MCP Go
// SDK: an MCP server per session on loopback. A HostTools of your own
// reports each call through Session.BeginHostTool.
type HostTools interface {
	// ServeSession starts serving session s and returns the MCP servers
	// its agent is to be given: sent after SessionOptions.MCPServers on
	// every session/new, load and resume of s (a restart's re-attach too),
	// and checked with them. The client calls it once per Session, on the
	// goroutine opening it (Start, NewSession, LoadSession …), before the
	// first open, and stop once: when the session or the client closes, or
	// when that first open fails. s.ID is "" until the agent answers.
	ServeSession(s *Session) (servers []acp.MCPServer, stop func(), err error)
}

// HostToolCall is one call of a host tool, as the host saw it.
// EventHostTool carries it once the call is over; HostToolCallFrom gives
// it to the tool's handler (without the outcome).
type HostToolCall struct {
	// SessionID and Turn say who called: the session, and its turn's
	// number (unique in the process, counting from 1).
	SessionID string
	Turn      uint64
	// Server and Tool name the tool: the MCP server's name as given to the
	// agent, and the tool's name on it. Args are the arguments the agent
	// sent (hostile: the handler validates them).
	Server, Tool string
	Args         json.RawMessage
	// ReadOnly: the tool is annotated read-only (MCP readOnlyHint).
	ReadOnly bool

	// The outcome. Result is the MCP CallToolResult sent to the agent
	// (after the size cap; Truncated says it was cut), IsError its isError.
	// Err is why the call did not run or failed: a refusal (matching
	// ErrRefused: plan mode, a policy, no turn running), a handler's panic
	// or error.
	Result    json.RawMessage
	IsError   bool
	Truncated bool
	Err       error
}

type hostCallKey struct{}

// HostToolCallFrom returns the call a host tool's handler serves, from
// the handler's ctx (see Session.BeginHostTool).
func HostToolCallFrom(ctx context.Context) (HostToolCall, bool) {
	c, ok := ctx.Value(hostCallKey{}).(*HostToolCall)
	if !ok {
		return HostToolCall{}, false
	}
	return *c, true
}

// hostServing is a session's host tools: served once, stopped once.
type hostServing struct {
	mu      sync.Mutex
	ready   chan struct{} // closed once ServeSession returned; nil before it is called
	servers []acp.MCPServer
	err     error
	stop    func()
	stopped bool
}

// A HostForwarder is a Link whose agent can be given a way back to the
// host (ssh.Transport's links are: a port forwarded on the connection).
// The client uses it to serve ACPOptions.HostTools to an agent that does
// not share the host's loopback.
type HostForwarder interface {
	Link
	// ForwardHost makes addr, a TCP address on the host's loopback,
	// reachable from the agent's side and returns the address the agent
	// is to dial for it there; called again with the same addr it returns
	// the same. What it starts ends with the link (Stop). It is called on
	// the goroutine opening a session.
	ForwardHost(addr string) (string, error)
}

// forwarderOf returns the link's HostForwarder, if its Link is one.
func forwarderOf(l link) HostForwarder {
	if t, ok := l.(*transportLink); ok {
		f, _ := t.l.(HostForwarder)
		return f
	}
	return nil
}

// forwarded is servers with each loopback URL's address replaced by the
// address fwd gives the agent for it.
func forwarded(servers []acp.MCPServer, fwd HostForwarder) ([]acp.MCPServer, error) {
	out := make([]acp.MCPServer, len(servers))
	for i, m := range servers {
		out[i] = m
		if m.Raw != nil || m.URL == "" {
			continue
		}
		u, err := url.Parse(m.URL)
		if err != nil || u.Hostname() != "127.0.0.1" {
			continue // not the host's loopback: the agent reaches it as it is
		}
		there, err := fwd.ForwardHost(u.Host)
		if err != nil {
			return nil, fmt.Errorf("acphost: forwarding host tools %q to the agent: %w", m.Name, err)
		}
		u.Host = there
		out[i].URL = u.String()
	}
	return out, nil
}

// serve calls start the first time, without holding the lock; later
// calls wait for it and get what it returned.
func (hs *hostServing) serve(start func() ([]acp.MCPServer, func(), error)) ([]acp.MCPServer, error) {
	hs.mu.Lock()
	if hs.ready != nil {
		ready := hs.ready
		hs.mu.Unlock()
		<-ready
		hs.mu.Lock()
		defer hs.mu.Unlock()
		return hs.servers, hs.err
	}
	hs.ready = make(chan struct{})
	hs.mu.Unlock()
	servers, stop, err := start()
	hs.mu.Lock()
	hs.servers, hs.err = servers, err
	late := hs.stopped // closed while starting
	if !late {
		hs.stop = stop
	}
	close(hs.ready)
	hs.mu.Unlock()
	if late && stop != nil {
		stop()
	}
	return servers, err
}

// close stops serving, once (the stop function runs without the lock).
func (hs *hostServing) close() {
	hs.mu.Lock()
	stop := hs.stop
	hs.stop, hs.stopped = nil, true
	hs.mu.Unlock()
	if stop != nil {
		stop()
	}
}
