// Command remote runs an agent one machine away, as far as acphost can
// tell: it serves the agent over WebSocket with websocket.Bridge (one
// agent process per connection, a bearer token required) and reaches it
// with websocket.Transport, through the same seam an SSH or container
// transport uses. It runs a turn, takes the box away and brings it back,
// and lets crash recovery dial again.
//
//	go run ./examples/remote
//	go run ./examples/remote -- AGENT ARGS
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/examples/internal/agent"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/websocket"
)

func main() {
	fakeagent.Main()
	local := agent.Options(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hello from the other side"))}}}})

	// The box: a bridge in front of a local stdio agent.
	token := randomToken()
	addr, stop := serve("127.0.0.1:0", local, token)
	defer func() { stop() }()

	// The host: a client whose agent is a WebSocket away.
	transport := &websocket.Transport{URL: "ws://" + addr + websocket.DefaultPath, Token: token}
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{
		Transport: transport,
		Dir:       "/", // a directory on the agent's machine
		Recover:   &acphost.RecoverOptions{},
	})
	if err != nil {
		agent.Fatal(err)
	}
	defer c.Close()
	p := c.Promises()
	fmt.Printf("link: %s (exit status %v, stderr %v, redial %v, host files %v), a connection id: %v\n",
		p.Transport, p.ExitStatus, p.Stderr, p.Redial, p.HostFiles, transport.ConnectionID() != "")

	resp, err := c.Generate(acphost.Request{Prompt: "hi"})
	if err != nil {
		agent.Fatal(err)
	}
	fmt.Printf("turn 1: %q\n", acp.SafeText(resp.Text))

	// The box goes away (its agent with it) and comes back: the next call
	// reports the lost link, and the one after runs on a new connection.
	stop()
	_, stop = serve(addr, local, token)
	for turn := 2; turn <= 3; turn++ {
		resp, err = c.Generate(acphost.Request{Prompt: "again"})
		var lost *acphost.LinkError
		switch {
		case errors.Is(err, acphost.ErrContextLost): // the restart's error wraps why: the lost link
			fmt.Printf("turn %d: redialled after the lost link; the agent could not keep the conversation\n", turn)
		case errors.As(err, &lost):
			fmt.Printf("turn %d: link lost (%s)\n", turn, lost.Op)
		case err != nil:
			agent.Fatal(err)
		default:
			fmt.Printf("turn %d: %q (restarted: %v)\n", turn, acp.SafeText(resp.Text), resp.Restarted != nil)
		}
	}
}

// serve runs a bridge for the agent of opts on addr until stop is called;
// stop returns once every connection and agent has ended.
func serve(addr string, opts acphost.ACPOptions, token string) (string, func()) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		agent.Fatal(err)
	}
	bridge := &websocket.Bridge{Command: opts.Command, Args: opts.Args, Env: opts.Process.Env, Token: token}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- websocket.Serve(ctx, ln, bridge) }()
	return ln.Addr().String(), func() {
		cancel()
		<-served
	}
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
