package main

import (
	"strings"
	"testing"

	"github.com/acphost/acphost/cmd/acphost/internal/policy"
)

// With --json, a permission answered without asking is followed by a
// permission_decision line: the tool call, the option chosen, who decided
// (a policy rule, --permission, nobody to ask, plan mode) and by which
// rule. The permission_answer line before it keeps its shape.
func TestJSONPermissionDecision(t *testing.T) {
	dir := t.TempDir()
	policyFile := writePolicy(t, dir, "{\"rules\": [\n  {\"kind\": \"read\", \"answer\": \"reject\"},\n  {\"kind\": \"execute\", \"command\": \"ls\", \"answer\": \"allow\"}\n]}")
	for _, c := range []struct {
		name           string
		args           []string
		by, rule, kind string
	}{
		{"policy", []string{"--permission-policy", policyFile, "--permission", "reject"}, policy.DecidedPolicy, "policy.json:3", "allow_once"},
		{"permission", []string{"--permission", "allow"}, policy.DecidedPermission, "--permission allow", "allow_once"},
		{"nobody", nil, policy.DecidedNonInteractive, "--non-interactive-permissions deny", "reject_once"},
		{"plan", []string{"--permission", "plan"}, policy.DecidedPlan, "plan mode rejects what can change anything", "reject_once"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, nil, "", append(c.args, "--json", "-p", "list files")...)
			if r.code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
			}
			evs := events(t, r.stdout)
			ds := ofType(evs, "permission_decision")
			if len(ds) != 1 {
				t.Fatalf("%d permission_decision lines, want 1:\n%s", len(ds), r.stdout)
			}
			d := ds[0]
			if d.DecidedBy != c.by || d.Rule != c.rule || d.OptionKind != c.kind || d.ID == "" || d.Name == "" || d.OptionID == "" {
				t.Errorf("decision %+v, want by %q rule %q kind %q", d, c.by, c.rule, c.kind)
			}
			for i, ev := range evs {
				if ev.Type == "permission_decision" {
					if i == 0 || evs[i-1].Type != "permission_answer" || evs[i-1].ID != d.ID {
						t.Errorf("the decision does not follow its permission_answer:\n%s", r.stdout)
					}
				}
			}
			if strings.Count(r.stdout, `"decidedBy"`) != 1 {
				t.Errorf("decidedBy outside the decision line:\n%s", r.stdout)
			}
		})
	}
	// The person's own answer is no decision.
	r := runWith(t, nil, "1\n", "--permission", "ask", "--json", "-p", "list files")
	if r.code != 0 || len(ofType(events(t, r.stdout), "permission_decision")) != 0 {
		t.Errorf("asked: exit %d:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}
