// Command stream streams one turn as events: text deltas, thoughts, the
// agent's own tool calls and results (Via "acp"), plans and permissions.
//
//	go run ./examples/stream                # on the built-in fake agent
//	go run ./examples/stream -- AGENT ARGS  # on any ACP agent, for example
//	go run ./examples/stream -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

	// The agent: the command given after "--", or else the built-in fake
	// agent, which is this same program started again with a demo script.
	flag.Parse()
	var opts acphost.ACPOptions
	if args := flag.Args(); len(args) > 0 {
		opts.Command, opts.Args = args[0], args[1:]
	} else {
		path, args, env, err := fakeagent.Command(fakeagent.Demo())
		if err != nil {
			log.Fatal(err)
		}
		opts.Command, opts.Args, opts.Process.Env = path, args, env
	}

	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for ev, err := range c.Session().Stream(context.Background(), acphost.Request{Prompt: "list files"}) {
		switch ev.Type {
		case acphost.EventText:
			fmt.Printf("text       %q\n", ev.Delta)
		case acphost.EventThought:
			fmt.Printf("thought    %q\n", ev.Delta)
		case acphost.EventToolCall, acphost.EventToolResult:
			fmt.Printf("%-10s %s via %s (%s)\n", ev.Type, acp.SafeText(ev.Name), ev.Via, ev.Status)
		case acphost.EventPlan:
			fmt.Printf("plan       %d entries\n", len(ev.Plan))
		case acphost.EventPermission:
			fmt.Printf("permission %s\n", acp.SafeText(ev.Name))
		case acphost.EventPermissionAnswer:
			fmt.Printf("answered   %s (%s)\n", ev.Answer.OptionID, ev.Answer.Reason)
		case acphost.EventDone:
			// The end; a stop (the context cancelled) ends here too, with
			// StopReason "cancelled" and err wrapping context.Canceled.
			fmt.Printf("done       %s\n", ev.StopReason)
		case acphost.EventError:
			log.Fatal(err)
		}
	}
}
