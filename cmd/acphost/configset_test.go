package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
)

// modelScript offers one select option, "model" (a or b).
func modelScript(t *testing.T) (*fakeagent.Script, string) {
	record := filepath.Join(t.TempDir(), "record.jsonl")
	return &fakeagent.Script{
		RecordFile: record,
		NewSessionResult: json.RawMessage(`{"configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"a",
			"options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]},{"id":"fast","name":"Fast","type":"boolean","currentValue":false}]}`),
	}, record
}

// TestSetSetsConfigOptionsBeforeTheFirstPrompt: --set KEY=VALUE is sent as
// session/set_config_option once the session opens, before any prompt; a
// value or key the agent does not offer is a usage error naming what it
// offers, and nothing is prompted.
func TestSetSetsConfigOptionsBeforeTheFirstPrompt(t *testing.T) {
	extra, _, _ := isolated(t)
	script, record := modelScript(t)
	r := runIn(t, t.TempDir(), extra, script, "", "--set", "fast=on", "--set", "model=b", "-p", "hi")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	msgs, err := fakeagent.ReadRecord(record)
	if err != nil {
		t.Fatal(err)
	}
	var sets []string // in the order given, all before the prompt
	for _, m := range msgs {
		switch m.Method {
		case "session/set_config_option":
			sets = append(sets, string(m.Params))
		case "session/prompt":
			if len(sets) != 2 {
				t.Fatalf("%d set_config_option before the prompt, want 2", len(sets))
			}
		}
	}
	if len(sets) != 2 || !strings.Contains(sets[0], `"configId":"fast"`) || !strings.Contains(sets[0], `"value":true`) ||
		!strings.Contains(sets[1], `"configId":"model"`) || !strings.Contains(sets[1], `"value":"b"`) {
		t.Errorf("set_config_option params %q", sets)
	}
	if !strings.Contains(r.stdout, "model = b") || !strings.Contains(r.stdout, "fast = true") {
		t.Errorf("stdout does not say the option was set:\n%s", r.stdout)
	}

	for args, want := range map[string]string{
		"model=zzz": "zzz is not one of a, b",
		"nope=1":    "no such option; the agent's: model, fast",
		"model":     `want key=value`,
	} {
		script, record := modelScript(t)
		r := runIn(t, t.TempDir(), extra, script, "", "--set", args, "-p", "hi")
		if r.code != exitUsage || !strings.Contains(r.stderr, want) {
			t.Errorf("--set %s: exit %d, stderr %q; want %d and %q", args, r.code, r.stderr, exitUsage, want)
		}
		if msgs, _ := fakeagent.ReadRecord(record); indexOf(msgs, "session/prompt") >= 0 {
			t.Errorf("--set %s: a prompt was sent", args)
		}
	}
}

// TestConfigFileSetsAreSoft: the config file's "config" (defaults, then
// the agent's, then --set win) is applied the same way, and an option the
// agent does not offer only warns.
func TestConfigFileSetsAreSoft(t *testing.T) {
	extra, configFile, _ := isolated(t)
	writeJSON(t, configFile, map[string]any{"defaults": map[string]any{"config": map[string]string{"model": "a", "effort": "high"}}})
	script, record := modelScript(t)
	r := runIn(t, t.TempDir(), extra, script, "", "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "config effort: no such option") {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	msgs, _ := fakeagent.ReadRecord(record)
	if i := indexOf(msgs, "session/set_config_option"); i < 0 || !strings.Contains(string(msgs[i].Params), `"value":"a"`) {
		t.Errorf("the file's model was not set: %v", msgs)
	}
	script, record = modelScript(t)
	if r := runIn(t, t.TempDir(), extra, script, "", "--set", "model=b", "-p", "hi"); r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	msgs, _ = fakeagent.ReadRecord(record)
	n := 0
	for _, m := range msgs {
		if m.Method == "session/set_config_option" {
			n++
			if !strings.Contains(string(m.Params), `"value":"b"`) {
				t.Errorf("--set did not win over the file: %s", m.Params)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d set_config_option, want 1", n)
	}
}

// TestPermissionReadsAllowsReadsAndAsksTheRest: --permission reads allows
// a request the agent calls a read (or a search) without asking, says so,
// and asks the person for anything else.
func TestPermissionReadsAllowsReadsAndAsksTheRest(t *testing.T) {
	script := &fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("r1", "cat go.mod", "read")),
		fakeagent.Ask(fakeagent.PermissionParams("r1", "cat go.mod", "read")),
		fakeagent.Say(fakeagent.Text("read: {{answer}}; ")),
		fakeagent.Say(fakeagent.ToolCall("e1", "edit main.go", "edit")),
		fakeagent.Ask(fakeagent.PermissionParams("e1", "edit main.go", "edit")),
		fakeagent.Say(fakeagent.Text("edit: {{answer}}")),
	}}}}
	r := runWith(t, script, "n\n", "--permission", "reads", "-p", "go")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "read: allow") || !strings.Contains(r.stdout, "edit: reject") {
		t.Errorf("answers:\n%s", r.stdout)
	}
	if n := strings.Count(r.stdout, "choose 1-"); n != 1 {
		t.Errorf("asked %d times, want once (the edit):\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "--permission reads: the agent calls it a read") {
		t.Errorf("the allowed read does not say why:\n%s", r.stdout)
	}
	// With --json and nothing on stdin, the rest is rejected (no more input).
	r = runWith(t, script, "", "--permission", "reads", "--json", "-p", "go")
	res := ofType(events(t, r.stdout), "result")
	if r.code != 0 || len(res) != 1 || !strings.Contains(resultText(res[0]), "read: allow") || !strings.Contains(resultText(res[0]), "edit: reject") {
		t.Errorf("--json: exit %d, %+v; stderr:\n%s", r.code, res, r.stderr)
	}
}

// TestSetErrorsBoundTheAgentsList: a --set the agent refuses names the
// options (or values) the agent offers, but a hostile list — thousands of
// ids, long ones, one carrying a line break and a forged line — is named
// in a bounded, one-line message.
func TestSetErrorsBoundTheAgentsList(t *testing.T) {
	extra, _, _ := isolated(t)
	long := strings.Repeat("x", 40)
	var opts, vals []map[string]any
	opts = append(opts, map[string]any{"id": "evil\nacphost: logged in", "type": "select", "currentValue": "a"})
	for i := range 1000 {
		opts = append(opts, map[string]any{"id": fmt.Sprintf("%s%d", long, i), "type": "boolean", "currentValue": false})
	}
	vals = append(vals, map[string]any{"value": "v\nacphost: forged", "name": "V"})
	for i := range 1000 {
		vals = append(vals, map[string]any{"value": fmt.Sprintf("%s%d", long, i), "name": "N"})
	}
	for args, offered := range map[string][]map[string]any{
		"nope=1":    opts,
		"model=zzz": {{"id": "model", "type": "select", "currentValue": "a", "options": vals}},
	} {
		b, _ := json.Marshal(map[string]any{"configOptions": offered})
		script := &fakeagent.Script{NewSessionResult: b}
		r := runIn(t, t.TempDir(), extra, script, "", "--set", args, "-p", "hi")
		if r.code != exitUsage {
			t.Errorf("--set %s: exit %d; stderr %.300q", args, r.code, r.stderr)
		}
		if len(r.stderr) > 4096 || strings.Contains(r.stderr, "\nacphost: logged in") || strings.Contains(r.stderr, "\nacphost: forged") {
			t.Errorf("--set %s: %d bytes of stderr naming the agent's list: %.300q", args, len(r.stderr), r.stderr)
		}
		if !strings.Contains(r.stderr, "more") {
			t.Errorf("--set %s: the message does not say more were left out: %.300q", args, r.stderr)
		}
	}
}

// TestConfigValuesStayOnTheirLine: /config shows each option as "id =
// value" on one line: an agent's id or current value with a line break
// forges no acphost line.
func TestConfigValuesStayOnTheirLine(t *testing.T) {
	script := &fakeagent.Script{NewSessionResult: json.RawMessage(`{"configOptions":[{"id":"m\nacphost: forged id","type":"select","currentValue":"a\nacphost: forged value",
		"options":[{"value":"a","name":"A"}]}]}`)}
	r := runWith(t, script, "/config\n")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "\nacphost: forged") || !strings.Contains(r.stdout, "m acphost: forged id = a acphost: forged value") {
		t.Errorf("/config:\n%s", r.stdout)
	}
}
