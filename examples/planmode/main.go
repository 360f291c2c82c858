// Command planmode runs one turn in plan mode: every permission request for
// a tool that could change something is rejected, the host refuses writes
// and commands itself, the session is put in the agent's own plan mode,
// a change the agent reports anyway stops the turn, and where Linux
// Landlock works the kernel keeps the agent from writing anywhere but its
// own state. It prints which of those layers hold.
//
//	go run ./examples/planmode                # on the built-in fake agent
//	go run ./examples/planmode -- AGENT ARGS  # on any ACP agent
package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/examples/internal/agent"
	"github.com/acphost/acphost/fakeagent"
)

func main() {
	fakeagent.Main()
	opts := agent.Options(fakeagent.Demo())
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
		agent.Fatal(err)
	}
	defer c.Close()
	fmt.Println("plan mode", c.Session().Enforcement())
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if errors.Is(err, acphost.ErrPlanModeBypassed) {
		fmt.Println("stopped:", err) // the agent changed something anyway
		return
	}
	if err != nil {
		agent.Fatal(err)
	}
	for _, tc := range resp.ToolCalls {
		fmt.Printf("tool %q (%s): %s\n", acp.SafeText(tc.Title), tc.Kind, tc.Status)
	}
	fmt.Println("answer:", acp.SafeText(resp.Text))
}
