// Command remote runs an agent one machine away, as far as acphost can
// tell: it serves the agent over WebSocket with websocket.Bridge (one
// agent process per connection, a bearer token required) and reaches it
// with websocket.Transport, through the same seam an SSH or container
// transport uses. It runs a turn, takes the box away and brings it back,
// and lets crash recovery dial again.
//
//	go run ./examples/remote                # on the built-in fake agent
//	go run ./examples/remote -- AGENT ARGS  # on any ACP agent, for example
//	go run ./examples/remote -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/websocket"
)

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

	// The box's agent: the command given after "--", or else the built-in
	// fake agent, which is this same program started again playing script.
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hello from the other side"))}}}}
	flag.Parse()
	var local acphost.ACPOptions
	if args := flag.Args(); len(args) > 0 {
		local.Command, local.Args = args[0], args[1:]
	} else {
		path, args, env, err := fakeagent.Command(script)
		if err != nil {
			log.Fatal(err)
		}
		local.Command, local.Args, local.Process.Env = path, args, env
	}

	// The box: a bridge in front of that local stdio agent.
	token := rand.Text()
	addr, stop, err := serve("127.0.0.1:0", local, token)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { stop() }()

	// The host: a client whose agent is a WebSocket away.
	transport := &websocket.Transport{URL: "ws://" + addr + websocket.DefaultPath, Token: token}
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{
		Transport: transport,
		Dir:       "/", // a directory on the agent's machine
		Recover:   &acphost.RecoverOptions{},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	p := c.Promises()
	fmt.Printf("link: %s (exit status %v, stderr %v, redial %v, host files %v), a connection id: %v\n",
		p.Transport, p.ExitStatus, p.Stderr, p.Redial, p.HostFiles, transport.ConnectionID() != "")

	resp, err := c.Generate(acphost.Request{Prompt: "hi"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("turn 1: %q\n", acp.SafeText(resp.Text))

	// The box goes away (its agent with it) and comes back: the next call
	// reports the lost link, and the one after runs on a new connection.
	stop()
	if _, stop, err = serve(addr, local, token); err != nil {
		log.Fatal(err)
	}
	for turn := 2; turn <= 3; turn++ {
		resp, err = c.Generate(acphost.Request{Prompt: "again"})
		var lost *acphost.LinkError
		switch {
		case errors.Is(err, acphost.ErrContextLost): // the restart's error wraps why: the lost link
			fmt.Printf("turn %d: redialled after the lost link; the agent could not keep the conversation\n", turn)
		case errors.As(err, &lost):
			fmt.Printf("turn %d: link lost (%s)\n", turn, lost.Op)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("turn %d: %q (restarted: %v)\n", turn, acp.SafeText(resp.Text), resp.Restarted != nil)
		}
	}
}

// serve runs a bridge for the agent of opts on addr until stop is called;
// stop returns once every connection and agent has ended.
func serve(addr string, opts acphost.ACPOptions, token string) (listening string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	bridge := &websocket.Bridge{Command: opts.Command, Args: opts.Args, Env: opts.Process.Env, Token: token}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- websocket.Serve(ctx, ln, bridge) }()
	return ln.Addr().String(), func() {
		cancel()
		<-served
	}, nil
}
