package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// TestModeFromAConfigOption: an agent that offers its modes only as a
// config option of category "mode" (opencode) has them in /mode's list,
// /mode NAME sets that option, and --mode too.
func TestModeFromAConfigOption(t *testing.T) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	script := &fakeagent.Script{RecordFile: record, NewSessionResult: json.RawMessage(`{"configOptions":[
		{"id":"mode","name":"Mode","category":"mode","type":"select","currentValue":"build",
		 "options":[{"value":"build","name":"Build"},{"value":"plan","name":"Plan","description":"reads only"}]}]}`)}
	r := runWith(t, script, "/mode\n/mode plan\n/mode\n")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "offers no modes") {
		t.Fatalf("the mode option's choices are not modes:\n%s\n%s", r.stdout, r.stderr)
	}
	first, rest, _ := strings.Cut(r.stdout, "mode: plan")
	if !strings.Contains(first, "* build  Build") || !strings.Contains(first, "  plan   Plan — reads only") {
		t.Errorf("the first /mode does not list the option's choices, build current:\n%s", first)
	}
	if !strings.Contains(rest, "* plan") {
		t.Errorf("after /mode plan, plan is not current:\n%s", rest)
	}
	msgs, _ := fakeagent.ReadRecord(record)
	if i := indexOf(msgs, "session/set_config_option"); i < 0 || !strings.Contains(string(msgs[i].Params), `"configId":"mode"`) ||
		!strings.Contains(string(msgs[i].Params), `"value":"plan"`) {
		t.Errorf("/mode plan did not set the mode option: %v", msgs)
	}
	if indexOf(msgs, "session/set_mode") >= 0 {
		t.Error("session/set_mode was sent to an agent without ACP modes")
	}

	if r := runWith(t, script, "", "--mode", "plan", "-p", "hi"); r.code != 0 {
		t.Errorf("--mode plan: exit %d; stderr:\n%s", r.code, r.stderr)
	}
}

// TestColumnsAlign: /mode's and /help's second column starts at one
// place whatever the names' lengths; a name too long for it has its
// text on the next line, still aligned.
func TestColumnsAlign(t *testing.T) {
	var b strings.Builder
	writeColumns(&b, [][2]string{{"* default", "Default"}, {"  acceptEdits", "Accept edits"}, {"  a-mode-with-a-name-far-too-long", "Long"}})
	want := "  * default      Default\n" +
		"    acceptEdits  Accept edits\n" +
		"    a-mode-with-a-name-far-too-long\n" +
		"                 Long\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
