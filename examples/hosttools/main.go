// Command hosttools gives the agent a tool of the host's own: an MCP
// server built with the MCP Go SDK, with one read-only tool, served to the
// session over loopback. The host sees each call (EventHostTool) and its
// handler knows which session and turn called it.
//
//	go run ./examples/hosttools                # on the built-in fake agent
//	go run ./examples/hosttools -- AGENT ARGS  # on any ACP agent that takes http MCP servers, for example
//	go run ./examples/hosttools -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/hosttools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type orderQuery struct {
	ID string `json:"id" jsonschema:"the order's id"`
}

type order struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

	// The app's own tool: look up an order. Read-only, so plan mode lets it run.
	srv := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "lookup_order", Description: "Look up an order by id",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *mcp.CallToolRequest, q orderQuery) (*mcp.CallToolResult, order, error) {
			call, _ := acphost.HostToolCallFrom(ctx) // who is asking: ctx ends with their turn
			fmt.Printf("handler: order %q for session %s, turn %d\n", q.ID, call.SessionID, call.Turn)
			return nil, order{ID: q.ID, Status: "shipped"}, nil
		})

	// On the fake agent, the turn calls the tool as a real agent would.
	script := fakeagent.Script{
		AgentCapabilities: json.RawMessage(`{"mcpCapabilities":{"http":true}}`),
		Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.CallMCP("shop", "lookup_order", json.RawMessage(`{"id":"A-1001"}`)),
			fakeagent.Say(fakeagent.Text("Order A-1001 has shipped.")),
		}}},
	}

	// The agent: the command given after "--", or else the built-in fake
	// agent, which is this same program started again playing script.
	flag.Parse()
	var opts acphost.ACPOptions
	if args := flag.Args(); len(args) > 0 {
		opts.Command, opts.Args = args[0], args[1:]
	} else {
		path, args, env, err := fakeagent.Command(script)
		if err != nil {
			log.Fatal(err)
		}
		opts.Command, opts.Args, opts.Process.Env = path, args, env
	}

	opts.HostTools = hosttools.New(srv, hosttools.Options{Name: "shop"})
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	called := false
	resp, err := c.GenerateStream(context.Background(), acphost.Request{Prompt: "Where is order A-1001? Use the shop's lookup_order tool."},
		func(ev acphost.StreamEvent) {
			if ev.Type == acphost.EventHostTool {
				h := ev.HostTool
				called = true
				fmt.Printf("host tool %s(%s) -> %s (err: %v)\n", h.Tool, h.Args, h.Result, h.Err)
			}
		})
	if err != nil {
		log.Fatal(err)
	}
	if !called {
		log.Fatal("the agent did not call the host's tool")
	}
	fmt.Println("answer:", acp.SafeText(resp.Text))
}
