package registry_test

import (
	"context"
	"fmt"
	"log"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/registry"
)

// A Go program starts an agent of the registry by its id: Devin is
// downloaded, checked and unpacked into the cache on first use, then
// started from there.
func ExampleResolve() {
	ctx := context.Background()
	opts, err := registry.Resolve(ctx, "devin", registry.Source{}, nil)
	if err != nil {
		log.Fatal(err)
	}
	c, err := acphost.Start(ctx, opts)
	if err != nil {
		log.Fatal(err) // a *acphost.AuthError lists Devin's login methods
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "list files"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Text)
}

// An agent's command on this platform, without installing anything.
func ExampleCache_Command() {
	a, _ := registry.Embedded().Agent("gemini")
	cmd, _, err := (&registry.Cache{}).Command(context.Background(), a, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cmd.Path, cmd.Args)
	// Output: npx [-y @google/gemini-cli@0.55.1 --acp]
}
