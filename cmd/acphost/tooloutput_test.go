//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// A finished tool shows its output's last lines (--tool-output N, all or
// 0); a failed one says why on its line.
func TestToolOutput(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		{Run: []string{"sh", "-c", "for i in 1 2 3 4 5; do echo line$i; done"}},
		{Run: []string{"sh", "-c", "echo starting; echo 'cp: cannot stat x: No such file' >&2; exit 3"}},
	}}}}
	extra, _, _ := isolated(t)
	for _, tc := range []struct {
		flag      []string
		want, not []string
	}{
		{nil, []string{"┆ 2 more lines above (--tool-output all shows them)", "    │ line3\n    │ line4\n    │ line5\n",
			"(failed: cp: cannot stat x: No such file)", "    │ starting\n    │ cp: cannot stat x: No such file\n"}, []string{"│ line2"}},
		{[]string{"--tool-output", "all"}, []string{"    │ line1\n    │ line2\n"}, []string{"more lines above"}},
		{[]string{"--tool-output", "0"}, []string{"(failed: cp: cannot stat x: No such file)"}, []string{"│"}},
	} {
		r := runIn(t, t.TempDir(), extra, script, "", append(tc.flag, "--permission", "allow", "-p", "go")...)
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tc.flag, w, r.stdout)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(r.stdout, n) {
				t.Errorf("%v: stdout has %q:\n%s", tc.flag, n, r.stdout)
			}
		}
	}
}
