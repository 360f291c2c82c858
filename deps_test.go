package acphost

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLibraryImportsNoThirdPartyPackage: a program that imports only the
// library links nothing but the standard library and this module's own
// packages; the transports' dependencies come only with their packages.
func TestLibraryImportsNoThirdPartyPackage(t *testing.T) {
	t.Parallel()
	for pkg, allowed := range map[string][]string{
		".":           nil,
		"./fakeagent": nil,
		"./container": nil,
		"./registry":  nil,
		"./ssh":       {"golang.org/x/crypto/", "golang.org/x/sys/"},
		"./websocket": {"github.com/coder/websocket"},
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
