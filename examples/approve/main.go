// Command approve is a terminal approval prompt built from the typed
// permission values: the heading (the agent's presentation record when it
// sent one), the description, the tool, and each option with the structured
// changes it would make.
//
//	go run ./examples/approve                # on the built-in fake agent (answer a number, y or n)
//	echo 1 | go run ./examples/approve       # non-interactively: option 1
//	go run ./examples/approve -- AGENT ARGS  # on any ACP agent, for example
//	go run ./examples/approve -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// codexAsk is a request shaped like the Codex adapter's (1.1.8–1.6), with a
// presentation record and an option that would add a policy rule.
const codexAsk = `{
 "toolCall": {"toolCallId": "call_1", "title": "npm install", "kind": "execute", "status": "pending",
  "rawInput": {"command": "npm install", "cwd": "/home/user/project"}},
 "_meta": {"permission": {"version": 1, "title": "Run command?", "description": "Installing dependencies"}},
 "options": [
  {"optionId": "allow_once", "name": "Allow Once", "kind": "allow_once"},
  {"optionId": "accept_execpolicy_amendment", "name": "Allow Commands Starting With npm install", "kind": "allow_always",
   "_meta": {"permission": {"version": 1, "changes": [{"type": "policy_rule", "operation": "add", "ruleBehavior": "allow",
    "description": "Allow commands starting with npm install",
    "targets": [{"type": "command", "matcher": {"type": "argv_prefix", "argv": ["npm", "install"]}}]}]}}},
  {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"}
 ]}`

var script = fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
	fakeagent.Ask(json.RawMessage(codexAsk)),
	fakeagent.Say(fakeagent.Text("you chose {{answer}}")),
}}}}

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

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

	opts.Advertise.PermissionPresentation = true // current Claude and Codex adapters then send their record
	in := bufio.NewReader(os.Stdin)
	opts.OnPermission = func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		render(req)
		return choose(ctx, in, req)
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "install the dependencies"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acp.SafeText(resp.Text))
}

// render prints the request as an approval card.
func render(req *acp.PermissionRequest) {
	heading, fromRecord := req.Heading()
	if heading == "" {
		heading = "Allow this tool call?"
	}
	fmt.Printf("\n== %s ==\n", acp.SafeText(heading))
	if p := req.Presentation; fromRecord && p.HasDescription {
		fmt.Println(p.SafeDescription())
	}
	tc := req.ToolCall
	fmt.Printf("tool: %s (%s)\n", acp.SafeText(tc.Title), tc.Kind)
	if len(tc.RawInput) > 0 {
		fmt.Printf("input: %s\n", acp.SafeText(string(tc.RawInput)))
	}
	for i, o := range req.Options {
		fmt.Printf("  %d) %s [%s]\n", i+1, acp.SafeText(o.Name), o.Kind)
		for _, ch := range o.Meta.Changes {
			fmt.Printf("       - %s\n", ch.Describe())
		}
	}
}

// choose reads an option number, or y (the first allow option) or n (the
// first reject option) as in cmd/acphost; end of input or a bad answer
// rejects.
func choose(ctx context.Context, in *bufio.Reader, req *acp.PermissionRequest) (string, error) {
	fmt.Print("choice (a number, y or n): ")
	line, err := in.ReadString('\n')
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	switch answer {
	case "y", "yes":
		if id := acphost.AllowOption(req); id != "" {
			return id, nil
		}
	case "n", "no":
		return acphost.RejectOption(req), nil
	}
	n, convErr := strconv.Atoi(answer)
	if (err != nil && answer == "") || convErr != nil || n < 1 || n > len(req.Options) {
		fmt.Println("(no valid choice: rejecting)")
		return acphost.RejectOption(req), nil
	}
	return req.Options[n-1].ID, nil
}
