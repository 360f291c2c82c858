// Package agent picks the agent an example talks to: the command after
// "--" on the command line, or the built-in fake agent playing a script.
package agent

import (
	"flag"
	"fmt"
	"os"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
)

// Options returns ACPOptions that start the agent given after "--" (for
// example `go run ./examples/stream -- npx @agentclientprotocol/claude-agent-acp`),
// or, with no agent given, this same binary as a fake agent playing script.
// Call fakeagent.Main first thing in main.
func Options(script fakeagent.Script) acphost.ACPOptions {
	flag.Parse()
	if args := flag.Args(); len(args) > 0 {
		return acphost.ACPOptions{Command: args[0], Args: args[1:]}
	}
	path, args, env, err := fakeagent.Command(script)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}}
}

// Fatal prints err and exits.
func Fatal(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}
