package configopt

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
)

func TestParseSetsAndAddSoft(t *testing.T) {
	sets, err := ParseSets([]string{"model=a", "fast=on", "model=b=c"})
	if err != nil || len(sets) != 2 || sets[0] != (Set{Key: "fast", Value: "on"}) || sets[1] != (Set{Key: "model", Value: "b=c"}) {
		t.Errorf("%+v %v", sets, err)
	}
	for _, bad := range []string{"model", "=x"} {
		if _, err := ParseSets([]string{bad}); err == nil || !strings.Contains(err.Error(), "want key=value") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	sets = AddSoft(sets, map[string]string{"model": "z", "thought": "high", "effort": "low"})
	if len(sets) != 4 || sets[2] != (Set{Key: "effort", Value: "low", Soft: true}) || sets[3].Key != "thought" || sets[1].Value != "b=c" {
		t.Errorf("soft: %+v", sets)
	}
}

// fakeSession offers a select option "model" (grouped values) and a
// boolean "fast", and records what is set.
type fakeSession struct {
	opts []acp.ConfigOption
	set  map[string]any
}

func (f *fakeSession) ConfigOptions() []acp.ConfigOption { return f.opts }

func (f *fakeSession) SetConfigOption(_ context.Context, id string, v any) ([]acp.ConfigOption, error) {
	f.set[id] = v
	b, _ := json.Marshal(v)
	out := append([]acp.ConfigOption(nil), f.opts...)
	for i := range out {
		if out[i].ID == id {
			out[i].CurrentValue = b
		}
	}
	return out, nil
}

func newFake() *fakeSession {
	return &fakeSession{set: map[string]any{}, opts: []acp.ConfigOption{
		{ID: "model", Name: "Model", Type: "select", CurrentValue: json.RawMessage(`"a"`),
			Raw: json.RawMessage(`{"options":[{"value":"a"},{"group":"more","options":[{"value":"b"}]}]}`)},
		{ID: "fast", Name: "fast", Type: "boolean", CurrentValue: json.RawMessage(`false`)},
	}}
}

func TestSetOption(t *testing.T) {
	f := newFake()
	if now, err := SetOption(context.Background(), f, "model", "b"); err != nil || now != "b" || f.set["model"] != "b" {
		t.Errorf("model=b: %q %v %v", now, err, f.set)
	}
	if now, err := SetOption(context.Background(), f, "fast", "yes"); err != nil || now != "true" || f.set["fast"] != true {
		t.Errorf("fast=yes: %q %v %v", now, err, f.set)
	}
	if _, err := SetOption(context.Background(), f, "model", "zzz"); err == nil || err.Error() != "zzz is not one of a, b" {
		t.Errorf("model=zzz: %v", err)
	}
	if _, err := SetOption(context.Background(), f, "fast", "maybe"); err == nil || !strings.Contains(err.Error(), "want on or off") {
		t.Errorf("fast=maybe: %v", err)
	}
	if _, err := SetOption(context.Background(), f, "nope", "1"); !errors.Is(err, ErrNoOption) || !strings.Contains(err.Error(), "the agent's: model, fast") {
		t.Errorf("nope: %v", err)
	}
	if _, err := SetOption(context.Background(), &fakeSession{}, "x", "1"); !errors.Is(err, ErrNoOption) || !strings.Contains(err.Error(), "offers no config options") {
		t.Errorf("no options: %v", err)
	}
}

func TestList(t *testing.T) {
	got := List(newFake().opts)
	want := "  model = a  (Model)  values: a, b\n  fast = false  values: on, off\n"
	if got != want {
		t.Errorf("List:\n%q\nwant\n%q", got, want)
	}
}

// A message names at most maxListed of the agent's ids, each on one line.
func TestAgentList(t *testing.T) {
	items := make([]string, 25)
	for i := range items {
		items[i] = "v\n" + strings.Repeat("x", 100)
	}
	got := agentList(items)
	if strings.Contains(got, "\n") || !strings.HasSuffix(got, " and 5 more") || strings.Count(got, ", ") != maxListed-1 {
		t.Errorf("agentList: %q", got)
	}
}
