// Command proposal reviews an agent's file write before it lands: the host
// serves fs/write_text_file, shows the proposed change as a diff, and writes
// an amended version (here: a reviewer's note added on top).
//
//	go run ./examples/proposal                # the built-in fake agent edits a file in a temp dir
//	go run ./examples/proposal -- AGENT ARGS  # any agent that writes through the host (opencode, gemini), for example
//	go run ./examples/proposal -- opencode acp
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

const original = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

// editor is a fake agent that reads main.go and writes a new version of it.
func editor(path string) fakeagent.Script {
	q := strconv.Quote(path)
	write := `{"path":` + q + `,"content":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n"}`
	return fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Request: &fakeagent.Call{Method: "fs/read_text_file", Params: json.RawMessage(`{"path":` + q + `}`)}},
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: json.RawMessage(write)}},
		fakeagent.Say(fakeagent.Text("updated main.go")),
	}}}}
}

func main() {
	// Started as the fake agent (see below), this program plays its script
	// here and exits; otherwise Main returns at once.
	fakeagent.Main()

	dir, err := os.MkdirTemp("", "proposal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(original), 0o644); err != nil {
		log.Fatal(err)
	}

	// The agent: the command given after "--", or else the built-in fake
	// agent, which is this same program started again playing editor(file).
	flag.Parse()
	var opts acphost.ACPOptions
	if args := flag.Args(); len(args) > 0 {
		opts.Command, opts.Args = args[0], args[1:]
	} else {
		path, args, env, err := fakeagent.Command(editor(file))
		if err != nil {
			log.Fatal(err)
		}
		opts.Command, opts.Args, opts.Process.Env = path, args, env
	}
	fake := flag.NArg() == 0
	if fake {
		opts.Dir = dir
	}

	opts.FS = &acphost.FSOptions{Read: true, Write: true, OnWriteFile: review}
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "make main.go print hello with fmt"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("agent:", acp.SafeText(resp.Text))
	if fake {
		landed, _ := os.ReadFile(file)
		fmt.Printf("--- what landed ---\n%s", landed)
	}
}

// review shows the proposal and returns the amended content to write.
func review(_ context.Context, p *acphost.WriteProposal) (string, error) {
	fmt.Printf("--- proposed change ---\n%s", acp.UnifiedDiff(p.FileDiff()))
	return "// Reviewed by a human.\n" + p.Proposed, nil
}
