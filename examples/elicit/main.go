// Command elicit answers an agent's question (a form-mode elicitation)
// from standard input, one field at a time, built from the typed form:
// choices by number, Enter takes the default, each answer checked with the
// library's own validation before it is sent.
//
//	go run ./examples/elicit                 # on the built-in fake agent
//	echo 2 | go run ./examples/elicit        # non-interactively: choice 2, defaults for the rest
//	go run ./examples/elicit -- AGENT ARGS   # on any ACP agent (e.g. Claude's AskUserQuestion), for example
//	go run ./examples/elicit -- npx -y @agentclientprotocol/claude-agent-acp
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// question is a form like the one Claude's adapter sends for AskUserQuestion.
const question = `{"type": "object", "title": "New service", "properties": {
 "database": {"type": "string", "title": "Database", "default": "postgres", "oneOf": [
  {"const": "postgres", "title": "PostgreSQL"}, {"const": "sqlite", "title": "SQLite"}, {"const": "mysql", "title": "MySQL"}]},
 "replicas": {"type": "integer", "title": "Replicas", "minimum": 1, "maximum": 5, "default": 1},
 "notes": {"type": "string", "title": "Notes", "maxLength": 200}},
 "required": ["database", "replicas"]}`

var script = fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
	fakeagent.Elicit(fakeagent.FormElicitation("Which database should the new service use?", json.RawMessage(question))),
	fakeagent.Say(fakeagent.Text("thanks, setting it up")),
}}}}

// terminal reports whether stdin is a terminal.
var terminal = func() bool {
	fi, err := os.Stdin.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}()

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

	in := bufio.NewReader(os.Stdin)
	opts.Elicitation.OnRequest = func(ctx context.Context, req *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
		fmt.Printf("\n? %s\n", acp.SafeText(req.Message))
		if req.Mode != acp.ModeForm {
			fmt.Printf("(a %s question; this example answers forms only: declining)\n", acp.SafeText(string(req.Mode)))
			return acphost.ElicitationAnswer{Action: acp.ElicitDecline}, nil
		}
		return fill(ctx, in, req.Form)
	}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.GenerateStream(context.Background(), acphost.Request{Prompt: "set up the new service"}, func(ev acphost.StreamEvent) {
		if a := ev.ElicitationAnswer; ev.Type == acphost.EventElicitationAnswer && a != nil {
			if a.Action != acp.ElicitAccept || a.Content == nil {
				fmt.Printf("sent: %s\n", a.Action)
				return
			}
			content, _ := json.Marshal(a.Content)
			fmt.Printf("sent: %s %s\n", a.Action, content)
		}
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acp.SafeText(resp.Text))
}

// fill asks each field in turn and accepts the form; "!decline" declines.
func fill(ctx context.Context, in *bufio.Reader, form *acp.FormSchema) (acphost.ElicitationAnswer, error) {
	content := map[string]any{}
	for i := range form.Fields {
		f := &form.Fields[i]
		for {
			for n, c := range f.Choices {
				fmt.Printf("  %d) %s\n", n+1, acp.SafeText(c.Title))
			}
			fmt.Printf("%s%s: ", acp.SafeText(f.Title), hint(f))
			line, err := in.ReadString('\n')
			if ctx.Err() != nil {
				return acphost.ElicitationAnswer{}, ctx.Err()
			}
			eof := errors.Is(err, io.EOF) // input ran out: as if Enter were pressed
			line = strings.TrimSpace(line)
			if !terminal { // a terminal echoed it; piped input is echoed for a readable transcript
				fmt.Println(acp.SafeText(line))
			}
			if line == "!decline" {
				return acphost.ElicitationAnswer{Action: acp.ElicitDecline}, nil
			}
			if line == "" && (f.Default != nil || !f.Required) {
				if f.Default != nil {
					content[f.Name] = f.Default
				}
				break
			}
			v := parse(f, line)
			one := acp.FormSchema{Fields: []acp.FormField{*f}}
			if _, err := one.Validate(map[string]any{f.Name: v}); err != nil {
				fmt.Println(acp.SafeText(err.Error()))
				if eof {
					return acphost.ElicitationAnswer{Action: acp.ElicitDecline}, nil
				}
				continue
			}
			content[f.Name] = v
			break
		}
	}
	return acphost.ElicitationAnswer{Action: acp.ElicitAccept, Content: content}, nil
}

// hint shows the default and whether Enter skips.
func hint(f *acp.FormField) string {
	switch {
	case f.Default != nil:
		return fmt.Sprintf(" [%v]", acp.SafeText(fmt.Sprint(f.Default)))
	case !f.Required:
		return " (optional)"
	}
	return ""
}

// parse reads a choice by number, a number, y/n, or text; Validate then
// says whether it fits.
func parse(f *acp.FormField, s string) any {
	switch f.Kind {
	case acp.FormEnum:
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(f.Choices) {
			return f.Choices[n-1].Value
		}
	case acp.FormInteger:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	case acp.FormNumber:
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return n
		}
	case acp.FormBoolean:
		return s == "y" || s == "yes" || s == "true"
	}
	return s
}
