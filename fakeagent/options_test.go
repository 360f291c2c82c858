package fakeagent_test

import (
	"encoding/json"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// TestOptionMetaIsTyped: an option's _meta written with the typed
// OptionMeta reaches the host's decoder as the records the adapters send
// (under _meta.permission, or _meta.jetbrains.air.permission), and RawMeta
// is sent byte for byte, winning over Meta.
func TestOptionMetaIsTyped(t *testing.T) {
	t.Parallel()
	always := &fakeagent.OptionMeta{Description: "Remember for this session", Changes: []fakeagent.Change{{
		Type: "policy_rule", Operation: "add", RuleBehavior: "allow", Lifetime: &fakeagent.ChangeLifetime{Scope: "session"},
		Targets: []fakeagent.ChangeTarget{{Type: "command", Matcher: &fakeagent.ChangeMatcher{Type: "argv_prefix", Argv: []string{"npm", "test"}}}},
	}}}
	air := &fakeagent.OptionMeta{AIR: true, Changes: []fakeagent.Change{{
		Type: "grant", Operation: "grant", Lifetime: &fakeagent.ChangeLifetime{Scope: "turn"},
		Targets: []fakeagent.ChangeTarget{{Type: "filesystem", Access: []string{"write"}, Matcher: &fakeagent.ChangeMatcher{Type: "directory", Path: "/tmp/out"}}},
	}}}
	params := fakeagent.PermissionParams("t1", "npm test", "execute",
		fakeagent.Option{ID: "always", Name: "Always", Kind: "allow_always", Meta: always},
		fakeagent.Option{ID: "air", Name: "Grant", Kind: "allow_once", Meta: air},
		fakeagent.Option{ID: "raw", Name: "Raw", Kind: "allow_once", Meta: always, RawMeta: json.RawMessage(`{"permission":{"version":2}}`)},
		fakeagent.Option{ID: "no", Name: "No", Kind: "reject_once"})
	req, err := acp.ParsePermissionRequest(params)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Options) != 4 {
		t.Fatalf("options = %d, want 4", len(req.Options))
	}
	m := req.Options[0].Meta
	if !m.Present() || m.Description != "Remember for this session" || len(m.Changes) != 1 || !m.Changes[0].Known() {
		t.Fatalf("typed meta decoded as %+v", m)
	}
	if got, want := m.Changes[0].Describe(), "Allow commands starting with `npm test` for this session"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
	m = req.Options[1].Meta
	if len(m.Changes) != 1 || m.Changes[0].Describe() != "Allow write access under `/tmp/out` for this turn" {
		t.Errorf("AIR meta decoded as %+v", m)
	}
	if m := req.Options[2].Meta; !m.Unknown || m.Present() || string(m.Raw) != `{"permission":{"version":2}}` {
		t.Errorf("raw meta decoded as %+v", m)
	}
	if m := req.Options[3].Meta; m.Raw != nil {
		t.Errorf("an option without meta carries _meta %s", m.Raw)
	}
}
