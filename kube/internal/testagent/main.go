// Command testagent is the agent of the kube package's end-to-end tests:
// github.com/acphost/acphost/fakeagent playing a script. The script comes
// in the environment as fakeagent.Command gives it (the tests pass it in
// Transport.Env, which travels on the exec's stdin), or is chosen by the
// first argument:
//
//	hello         one turn that says "hello from the pod"
//	permission    one turn that asks to run ls, then says the answer
//	slow          one turn that waits for session/cancel
//	crash N       one turn that exits with status N
//	ignore-eof    hello, and the agent ignores stdin EOF and SIGTERM
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/acphost/acphost/fakeagent"
)

func main() {
	fakeagent.Main() // runs the environment's script, if there is one
	s, err := preset(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(2)
	}
	b, err := json.Marshal(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(2)
	}
	os.Setenv("ACPHOST_FAKEAGENT_MODE", "agent")
	os.Setenv("ACPHOST_FAKEAGENT_SCRIPT", string(b))
	fakeagent.Main()
}

func preset(args []string) (fakeagent.Script, error) {
	if len(args) == 0 {
		return fakeagent.Script{}, fmt.Errorf("no script: set one in the environment or name one (hello, permission, slow, crash N, ignore-eof)")
	}
	hello := fakeagent.Turn{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("hello from the pod"))}}
	switch args[0] {
	case "hello":
		return fakeagent.Script{Turns: []fakeagent.Turn{hello}}, nil
	case "permission":
		return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Ask(fakeagent.PermissionParams("t1", "ls", "execute")),
			fakeagent.Say(fakeagent.Text("you picked {{answer}}")),
		}}}}, nil
	case "slow":
		return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{WaitCancel: true}}}}}, nil
	case "crash":
		code := 3
		if len(args) > 1 {
			n, err := strconv.Atoi(args[1])
			if err != nil {
				return fakeagent.Script{}, err
			}
			code = n
		}
		return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{Exit: &code}}}}}, nil
	case "ignore-eof":
		return fakeagent.Script{Turns: []fakeagent.Turn{hello}, IgnoreEOF: true, IgnoreSIGTERM: true}, nil
	}
	return fakeagent.Script{}, fmt.Errorf("unknown script %q", args[0])
}
