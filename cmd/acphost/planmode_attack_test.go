package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/acphost/acphost"
)

// Plan mode's kernel layer keeps writable only the --writable directories
// outside the project: not one inside it (--writable ./build), nor one
// that reaches it through a symlink, which Landlock follows.
func TestPlanConfinementKeepsNoWritableDirOfTheProject(t *testing.T) {
	if !acphost.CanConfine() {
		t.Skip("Landlock is not available here")
	}
	proj, other := t.TempDir(), t.TempDir()
	link := filepath.Join(other, "link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(other, "cache")
	cfg := config{writable: []string{filepath.Join(proj, "build"), link, filepath.Join(link, "sub"), cache, proj}}
	c := confinement(cfg, proj)
	if !slices.Equal(c.PlanWritable, []string{cache}) {
		t.Fatalf("PlanWritable %q, want only %q", c.PlanWritable, cache)
	}
	if len(c.Writable) != len(cfg.writable) {
		t.Fatalf("Writable %q: outside plan mode --writable holds as given", c.Writable)
	}
}
