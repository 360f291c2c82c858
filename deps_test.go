package acphost_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// TestAProgramOfTheLibraryNamesNoOtherModule: a program that imports only
// the library — in a module of its own, as a user writes it — resolves
// nothing of the modules beside it in this repository: neither its go.sum
// nor `go list -m all` names Kubernetes, OpenTelemetry, the browser driver
// or the Go SDK the bench compares against. (This repository's go.work
// joins those modules for its own builds; a user's program never sees it.)
func TestAProgramOfTheLibraryNamesNoOtherModule(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/user\n\ngo 1.26.0\n\nrequire github.com/acphost/acphost v0.0.0\n\nreplace github.com/acphost/acphost => "+root+"\n")
	write("main.go", "package main\n\nimport _ \"github.com/acphost/acphost\"\n\nfunc main() {}\n")
	goCmd := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"go.sum": string(sum), "go list -m all": goCmd("list", "-m", "all")} {
		for _, foreign := range []string{"k8s.io/", "sigs.k8s.io/", "go.opentelemetry.io/", "github.com/chromedp/", "github.com/coder/acp-go-sdk"} {
			if strings.Contains(text, foreign) {
				t.Errorf("%s of a program that imports only the library names %s:\n%s", what, foreign, text)
			}
		}
	}
}
