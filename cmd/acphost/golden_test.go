//go:build unix

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// durations and the like vary from run to run; the golden screens hold
// placeholders for them.
var (
	goldenDuration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m)\b`)
	goldenTempDir  = regexp.MustCompile(`/tmp/[^\s]+`)
	goldenVersion  = regexp.MustCompile(`acphost \d+\.\d+\.\d+(-\S+)?`)
	goldenContain  = regexp.MustCompile(`· containment: (cgroup|namespace|group)\b`) // the machine's
	goldenDemoID   = regexp.MustCompile(`\bdemo-[0-9a-f]{8}\b`)
)

func normalizeScreen(s string) string {
	s = goldenTempDir.ReplaceAllString(s, "<tmp>")
	s = goldenDuration.ReplaceAllString(s, "<d>")
	s = goldenVersion.ReplaceAllString(s, "acphost <version>")
	s = goldenContain.ReplaceAllString(s, "· containment: <containment>")
	s = goldenDemoID.ReplaceAllString(s, "demo-<id>")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimRight(l, " "))
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// TestGoldenScreens: what a person sees in a terminal, for the built-in
// agent's turn, allowed and rejected, compared with testdata/golden
// (ACPHOST_UPDATE_GOLDEN=1 rewrites them; look at the diff before
// committing).
func TestGoldenScreens(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"demo-allow", []string{"--permission", "allow", "-p", "list files"}},
		{"demo-reject", []string{"--permission", "reject", "-p", "list files"}},
		{"demo-plan", []string{"--permission", "plan", "-p", "list files"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra, _, _ := isolated(t)
			p := startPane(t, nil, append(extra, "COLUMNS=120"), tc.args...)
			got := normalizeScreen(p.waitFor("[exited 0]", 1))
			path := filepath.Join("testdata", "golden", tc.name+".txt")
			if os.Getenv("ACPHOST_UPDATE_GOLDEN") == "1" {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (ACPHOST_UPDATE_GOLDEN=1 writes it)", err)
			}
			if got != string(want) {
				t.Errorf("the screen differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
			}
		})
	}
}
