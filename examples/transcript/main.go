// Command transcript prints a live transcript of one turn from OnUpdate:
// thoughts, tool calls and their updates, plans and the answer, as they
// arrive.
//
//	go run ./examples/transcript                # on the built-in fake agent
//	go run ./examples/transcript -- AGENT ARGS  # on any ACP agent, for example
//	go run ./examples/transcript -- npx -y @agentclientprotocol/claude-agent-acp
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

	opts.OnUpdate = printUpdate // runs on the client's dispatcher goroutine, in wire order
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.GenerateCtx(context.Background(), acphost.Request{Prompt: "list files"})
	if err != nil {
		log.Fatal(err)
	}
	// Every update before the answer has been printed by now.
	fmt.Printf("[done: %s]\n", resp.StopReason)
}

func printUpdate(u acp.Update) {
	switch u := u.(type) {
	case *acp.MessageChunk:
		label := map[acp.UpdateKind]string{acp.KindAgentThoughtChunk: "thought", acp.KindAgentMessageChunk: "agent", acp.KindUserMessageChunk: "user"}[u.Kind()]
		fmt.Printf("%-8s %s\n", label, acp.SafeText(u.Content.Text))
	case *acp.ToolCallUpdate:
		fmt.Printf("%-8s %s [%s] %s\n", "tool", acp.SafeText(u.State.Title), u.State.Kind, u.State.Status)
	case *acp.PlanUpdate:
		for _, e := range u.Entries {
			mark := map[string]string{"completed": "x", "in_progress": "~"}[e.Status]
			fmt.Printf("%-8s [%1s] %s\n", "plan", mark, acp.SafeText(e.Content))
		}
	case *acp.UnknownUpdate:
		fmt.Printf("%-8s %s\n", "unknown", u.Kind())
	default:
		fmt.Printf("%-8s %s\n", "update", u.Kind())
	}
}
