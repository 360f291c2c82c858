package acphost_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLibraryImportsNoThirdPartyPackage: a program that imports only the
// library links nothing but the standard library, errgroup and this module's own
// packages; the transports' dependencies come only with their packages.
func TestLibraryImportsNoThirdPartyPackage(t *testing.T) {
	t.Parallel()
	for pkg, allowed := range map[string][]string{
		// errgroup: the parallel starts (SPEC.md, Dependencies).
		".":           {"golang.org/x/sync/errgroup"},
		"./fakeagent": nil,
		"./container": {"golang.org/x/sync/errgroup"},
		"./registry":  {"golang.org/x/sync/errgroup"},
		"./ssh":       {"golang.org/x/crypto/", "golang.org/x/sys/", "golang.org/x/sync/errgroup"},
		"./websocket": {"github.com/coder/websocket", "golang.org/x/sync/errgroup"},
		// The MCP Go SDK and what it links (SPEC.md, Host tools).
		"./hosttools": {"github.com/modelcontextprotocol/go-sdk/", "github.com/google/jsonschema-go/", "github.com/segmentio/",
			"github.com/yosida95/uritemplate/", "golang.org/x/oauth2", "golang.org/x/sync/", "golang.org/x/sys/", "golang.org/x/time/"},
	} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
	next:
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/acphost/acphost") {
				continue
			}
			for _, a := range allowed {
				if strings.HasPrefix(dep, a) {
					continue next
				}
			}
			t.Errorf("%s imports %s", pkg, dep)
		}
	}
}

// TestWordsImportNothingOfTheHost: the protocol's words (acp/) link the
// standard library and the two internal packages that encode them, never
// the host or any other package of this module.
func TestWordsImportNothingOfTheHost(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./acp").Output()
	if err != nil {
		t.Fatalf("go list ./acp: %v", err)
	}
	allowed := []string{
		"github.com/acphost/acphost/acp",
		"github.com/acphost/acphost/internal/fastjson",
		"github.com/acphost/acphost/internal/acpinternal",
	}
	for _, dep := range strings.Fields(string(out)) {
		if !slices.Contains(allowed, dep) {
			t.Errorf("acp imports %s", dep)
		}
	}
}
