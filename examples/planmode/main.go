// Command planmode runs one turn in plan mode: every permission request for
// a tool that could change something is rejected, the host refuses writes
// and commands itself, the session is put in the agent's own plan mode,
// a change the agent reports anyway stops the turn, and where Linux
// Landlock works the kernel keeps the agent from writing anywhere but its
// own state. It prints which of those layers hold.
//
//	go run ./examples/planmode                # on the built-in fake agent
//	go run ./examples/planmode -- AGENT ARGS  # on any ACP agent, for example
//	go run ./examples/planmode -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"context"
	"errors"
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

	opts.PlanMode = true
	if acphost.CanConfine() {
		opts.Process.Confine = &acphost.Confinement{PlanOnly: true}
	}
	opts.OnPermission = func(_ context.Context, req *acp.PermissionRequest) (string, error) {
		// Only read-only tools get here in plan mode.
		fmt.Println("allowed a read:", acp.SafeText(req.ToolCall.Title))
		return acphost.AllowOption(req), nil
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("plan mode", c.Session().Enforcement())
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if errors.Is(err, acphost.ErrPlanModeBypassed) {
		fmt.Println("stopped:", err) // the agent changed something anyway
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, tc := range resp.ToolCalls {
		fmt.Printf("tool %q (%s): %s\n", acp.SafeText(tc.Title), tc.Kind, tc.Status)
	}
	fmt.Println("answer:", acp.SafeText(resp.Text))
}
