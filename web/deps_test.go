package web_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingBeyondAcphost: the handler links the standard library
// and acphost only, with what acphost links (errgroup; the browser test's
// chromedp lives in a module of its own, web/browsertest).
func TestImportsNothingBeyondAcphost(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "golang.org/x/sync/errgroup" {
			continue // acphost's own (SPEC.md, Dependencies)
		}
		if !strings.HasPrefix(dep, "github.com/acphost/acphost") || strings.HasPrefix(dep, "github.com/acphost/acphost/web/browsertest") {
			t.Errorf("web imports %s", dep)
		}
	}
}
