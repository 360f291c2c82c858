package acphost_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// fakeAgentOptions starts this test binary as a fake agent playing the demo
// turn: a thought, a tool call "ls" with a permission request, a plan and
// the answer "picked <option>". With a real agent, set Command and Args.
func fakeAgentOptions() acphost.ACPOptions {
	path, args, env, err := fakeagent.Command(fakeagent.Demo())
	if err != nil {
		log.Fatal(err)
	}
	return acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}}
}

// A warm client runs turn after turn on one agent process. Set
// OnPermission: without it every request the agent makes is allowed (and
// the Logger warned once).
func Example() {
	opts := fakeAgentOptions()
	opts.OnPermission = acphost.RejectChanges(acphost.AllowAll()) // reads yes, anything that can change something no
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		resp, err := c.Generate(acphost.Request{Prompt: "list files"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(resp.Text, resp.StopReason)
	}
	// Output:
	// picked reject end_turn
	// picked reject end_turn
}

// Plan mode rejects every tool that could change something, before
// OnPermission is asked, and refuses the host's own writes and commands.
func Example_planMode() {
	opts := fakeAgentOptions()
	opts.PlanMode = true
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text)
	// Output: picked reject
}

// Plan mode asks the agent to keep to reads; Confine has the kernel make
// sure of it (Linux). The project directory is left out of Writable, so
// the agent's own tools, and every command they run, can read it but not
// change it. The agent keeps its state where it is allowed to write.
func ExampleConfinement() {
	home, _ := os.UserHomeDir()
	opts := acphost.ACPOptions{
		Command:  "npx",
		Args:     []string{"@agentclientprotocol/claude-agent-acp"},
		Dir:      "/src/project",
		PlanMode: true,
		Process: acphost.ProcessOptions{Confine: &acphost.Confinement{Writable: []string{
			filepath.Join(home, ".claude"), filepath.Join(home, ".npm"), os.TempDir(),
		}}},
	}
	c, err := acphost.Start(context.Background(), opts)
	if errors.Is(err, acphost.ErrUnsupported) {
		log.Fatal("this kernel cannot confine the agent: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "plan the refactoring of the parser"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text)
}

// OnPermission sees each request as typed values and may wait for a human.
func Example_onPermission() {
	opts := fakeAgentOptions()
	opts.OnPermission = func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		heading, _ := req.Heading()
		fmt.Printf("asked: %s (%s)\n", heading, req.ToolCall.Kind)
		for _, o := range req.Options {
			fmt.Printf("  %s [%s]\n", o.ID, o.Kind)
		}
		return acphost.RejectOption(req), nil
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text)
	// Output:
	// asked: ls (execute)
	//   allow [allow_once]
	//   allow-always [allow_always]
	//   reject [reject_once]
	// picked reject
}

// Stream gives the turn as events in a for-range loop.
func ExampleSession_Stream() {
	c, err := acphost.Start(context.Background(), fakeAgentOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for ev, err := range c.Session().Stream(context.Background(), acphost.Request{Prompt: "list files"}) {
		switch ev.Type {
		case acphost.EventText, acphost.EventThought:
			fmt.Printf("%s %q\n", ev.Type, ev.Delta)
		case acphost.EventToolCall, acphost.EventToolResult:
			fmt.Printf("%s %s via %s\n", ev.Type, ev.Name, ev.Via)
		case acphost.EventDone:
			// The last event of a turn that ended; a stop ends here too
			// (see the stop example), so err is not fatal.
			fmt.Println(ev.Type, ev.StopReason, err)
		case acphost.EventError:
			// The last event of a turn that failed: err says why.
			fmt.Println("failed:", err)
		}
	}
	// Output:
	// thought "thinking about it"
	// tool_call ls via acp
	// tool_result ls via acp
	// text "picked allow"
	// done end_turn <nil>
}

// A stop button cancels the context given to Stream. The agent is sent
// session/cancel and the turn ends with an EventDone whose StopReason is
// "cancelled" and whose error wraps context.Canceled; what the agent said
// before the stop came as events first. (A stop the agent does not confirm
// in time ends with an EventError wrapping both context.Canceled and
// ErrCancelUnconfirmed, and the agent is replaced before the next turn.)
func ExampleSession_Stream_stop() {
	path, args, env, err := fakeagent.Command(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("working on it")),
		{WaitCancel: true}, // a long task, until the stop
	}}}})
	if err != nil {
		log.Fatal(err)
	}
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for ev, err := range c.Session().Stream(ctx, acphost.Request{Prompt: "refactor everything"}) {
		switch ev.Type {
		case acphost.EventText:
			fmt.Printf("text %q\n", ev.Delta)
			stop() // the person pressed stop
		case acphost.EventDone:
			fmt.Println(ev.Type, ev.StopReason, "stopped:", errors.Is(err, context.Canceled))
		case acphost.EventError:
			fmt.Println("failed:", err, "stopped:", errors.Is(err, context.Canceled))
		}
	}
	// Output:
	// text "working on it"
	// done cancelled stopped: true
}

// ParsePermissionRequest decodes a request without a client, including the
// presentation record and structured changes real agents attach.
func ExampleParsePermissionRequest() {
	params := json.RawMessage(`{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"npm test","kind":"execute"},
	 "_meta":{"permission":{"version":1,"title":"Run the tests?","description":"Reason: verify the change"}},
	 "options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}]}`)
	req, err := acp.ParsePermissionRequest(params)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(req.Presentation.Title, "|", req.Presentation.Description, "|", req.Presentation.Source)
	fmt.Println(acphost.DefaultPermission(req))
	// Output:
	// Run the tests? | Reason: verify the change | _meta.permission
	// allow-once
}

// DecodeUpdate decodes a session/update by its discriminator; unknown kinds
// keep their raw JSON.
func ExampleDecodeUpdate() {
	for _, params := range []string{
		`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`,
		`{"sessionId":"s1","update":{"sessionUpdate":"agent_status","state":"busy"}}`,
	} {
		switch u := acp.DecodeUpdate(json.RawMessage(params)).(type) {
		case *acp.MessageChunk:
			fmt.Println(u.Kind(), u.Content.Text)
		case *acp.UnknownUpdate:
			fmt.Println("unknown:", u.Kind())
		}
	}
	// Output:
	// agent_message_chunk hi
	// unknown: agent_status
}

// An agent that opens no session until a person logs in fails Start with
// an *AuthError: its methods, and for a terminal one the command to run in
// the person's terminal before starting again.
func ExampleAuthError() {
	path, args, env, err := fakeagent.Command(fakeagent.Script{RequireAuth: true,
		AuthMethods: json.RawMessage(`[{"id":"login","name":"Log in","type":"terminal","args":["--login"]}]`)})
	if err != nil {
		log.Fatal(err)
	}
	_, err = acphost.Start(context.Background(), acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}, Advertise: acphost.AdvertiseOptions{TerminalAuth: true}})
	var ae *acphost.AuthError
	if errors.As(err, &ae) {
		for _, m := range ae.Methods {
			_, loginArgs, _, _ := ae.TerminalCommand(m.ID)
			fmt.Println(acp.SafeText(m.ID), acp.SafeText(m.Name), m.Type, loginArgs[len(loginArgs)-1])
		}
	}
	// Output:
	// login Log in terminal --login
}

// A StreamTransport runs a client over a connection that already exists:
// here a fake agent in this process, over two pipes.
func ExampleStreamTransport() {
	agent := fakeagent.New(fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text("hello from the pipe")),
	}}}})
	toAgentR, toAgentW := io.Pipe()
	toHostR, toHostW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- agent.Serve(context.Background(), toAgentR, toHostW)
		toHostW.Close()
	}()
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{
		Transport: &acphost.StreamTransport{Reader: toHostR, Writer: toAgentW, Closer: toAgentW},
	})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := c.Generate(acphost.Request{Prompt: "hi"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text)
	c.Close() // closes toAgentW: the agent reads EOF and returns
	<-served
	// Output: hello from the pipe
}
