// Command stopbutton shows the stop button: Ctrl-C cancels the running turn
// and the next prompt runs on the same warm agent process.
//
//	go run ./examples/stopbutton                # demo on the built-in fake agent: the first turn is stopped for you
//	go run ./examples/stopbutton -- AGENT ARGS  # on any ACP agent: type prompts; Ctrl-C stops a turn; Ctrl-D quits
//	go run ./examples/stopbutton -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// slowAgent answers "count" with numbers until it is cancelled, and anything
// else at once.
var slowAgent = fakeagent.Script{Turns: []fakeagent.Turn{
	{Prompt: "count", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("1 2 3 ")), {WaitCancel: true}}},
	{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("still here"))}},
}}

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

	// The agent: the command given after "--", or else the built-in fake
	// agent, which is this same program started again playing slowAgent.
	flag.Parse()
	var opts acphost.ACPOptions
	if args := flag.Args(); len(args) > 0 {
		opts.Command, opts.Args = args[0], args[1:]
	} else {
		path, args, env, err := fakeagent.Command(slowAgent)
		if err != nil {
			log.Fatal(err)
		}
		opts.Command, opts.Args, opts.Process.Env = path, args, env
	}
	demo := flag.NArg() == 0

	pressed := make(chan struct{}, 1)
	if demo {
		// Press the stop button as soon as the agent starts talking.
		opts.OnUpdate = func(acp.Update) {
			select {
			case pressed <- struct{}{}:
			default:
			}
		}
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	interrupts := make(chan os.Signal, 1)
	signal.Notify(interrupts, os.Interrupt)
	go func() {
		for {
			select {
			case <-interrupts:
			case <-pressed:
			}
			c.Cancel() // the stop button; does nothing between turns
		}
	}()

	prompts := []string{"count to a million", "are you still there?"}
	if !demo {
		prompts = nil
	}
	in := bufio.NewScanner(os.Stdin)
	for i := 0; ; i++ {
		var prompt string
		switch {
		case demo && i < len(prompts):
			prompt = prompts[i]
		case !demo && in.Scan():
			prompt = in.Text()
		default:
			return
		}
		fmt.Printf("> %s (agent pid %d)\n", prompt, c.PID())
		resp, err := c.Generate(acphost.Request{Prompt: prompt})
		switch {
		case errors.Is(err, context.Canceled):
			fmt.Printf("stopped: %q so far, stop reason %s\n", resp.Text, resp.StopReason)
		case err != nil:
			log.Fatal(err)
		default:
			fmt.Printf("%s\n", acp.SafeText(resp.Text))
		}
	}
}
