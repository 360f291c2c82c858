// Command stream streams one turn as events: text deltas, thoughts, the
// agent's own tool calls and results (Via "acp"), plans and permissions.
//
//	go run ./examples/stream
//	go run ./examples/stream -- AGENT ARGS
package main

import (
	"context"
	"fmt"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/examples/internal/agent"
	"github.com/acphost/acphost/fakeagent"
)

func main() {
	fakeagent.Main()
	c, err := acphost.Start(context.Background(), agent.Options(fakeagent.Demo()))
	if err != nil {
		agent.Fatal(err)
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
			fmt.Printf("done       %s\n", ev.StopReason)
		case acphost.EventError:
			agent.Fatal(err)
		}
	}
}
