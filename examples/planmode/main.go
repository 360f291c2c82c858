// Command planmode runs one turn in plan mode: every permission request for
// a tool that could change something is rejected, and the host refuses
// writes and commands itself.
//
//	go run ./examples/planmode                # on the built-in fake agent
//	go run ./examples/planmode -- AGENT ARGS  # on any ACP agent
package main

import (
	"context"
	"fmt"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/examples/internal/agent"
	"github.com/acphost/acphost/fakeagent"
)

func main() {
	fakeagent.Main()
	opts := agent.Options(fakeagent.Demo())
	opts.PlanMode = true
	opts.OnPermission = func(_ context.Context, req *acphost.PermissionRequest) (string, error) {
		// Only read-only tools get here in plan mode.
		fmt.Println("allowed a read:", acphost.SafeText(req.ToolCall.Title))
		return acphost.AllowOption(req), nil
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		agent.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if err != nil {
		agent.Fatal(err)
	}
	for _, tc := range resp.ToolCalls {
		fmt.Printf("tool %q (%s): %s\n", acphost.SafeText(tc.Title), tc.Kind, tc.Status)
	}
	fmt.Println("answer:", acphost.SafeText(resp.Text))
}
