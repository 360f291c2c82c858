package sessions

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// fakeConfig has one configured agent, "mine".
type fakeConfig struct{}

func (fakeConfig) Agent(name string) ([]string, string, error) {
	if name == "mine" {
		return []string{"my-agent", "--acp"}, "/home/me/config.json", nil
	}
	return nil, "", errors.New("no such agent")
}

func (fakeConfig) Path() string { return "/home/me/config.json" }

func agents() Agents {
	return Agents{Demo: "demo", Load: func() (Config, error) { return fakeConfig{}, nil }}
}

// An imported record runs the configuration's command, never its own.
func TestAdmitRecord(t *testing.T) {
	future := time.Now().Add(time.Hour)
	r := state.Record{ID: "s1", Agent: "mine", Command: []string{"rm", "-rf", "/"}, Cwd: "/p/../q", LastUsed: future, PID: 42, Control: "/tmp/sock"}
	if err := admitRecord(&r, fakeConfig{}, "demo"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Command, " ") != "my-agent --acp" || r.Cwd != "/q" || r.LastUsed.After(time.Now()) || r.PID != 0 || r.Control != "" {
		t.Errorf("admitted %+v", r)
	}
	for _, bad := range []state.Record{
		{ID: "", Agent: "mine", Cwd: "/"},
		{ID: "s\x1b", Agent: "mine", Cwd: "/"},
		{ID: "s", Command: []string{"sh"}, Cwd: "/"},
		{ID: "s", Agent: "theirs", Cwd: "/"},
		{ID: "s", Agent: "mine", Cwd: "relative"},
	} {
		if err := admitRecord(&bad, fakeConfig{}, "demo"); err == nil {
			t.Errorf("%+v admitted", bad)
		}
	}
	demo := state.Record{ID: "s", Agent: "demo", Command: []string{"sh"}, Cwd: "/"}
	if err := admitRecord(&demo, fakeConfig{}, "demo"); err != nil || demo.Command != nil {
		t.Errorf("demo: %v %v", err, demo.Command)
	}
}

func TestConfiguredCommand(t *testing.T) {
	for _, c := range []struct {
		r           state.Record
		cmd, source string
	}{
		{state.Record{Agent: "demo"}, "", "built-in demo agent"},
		{state.Record{Command: []string{"x", "y"}}, "x y", "the command after -- it was started with"},
		{state.Record{Agent: "mine"}, "my-agent --acp", "/home/me/config.json"},
		{state.Record{Agent: "gone"}, "", "not configured: no agent gone"},
	} {
		cmd, source := configuredCommand(c.r, agents())
		if strings.Join(cmd, " ") != c.cmd || source != c.source {
			t.Errorf("%+v: %q %q", c.r, cmd, source)
		}
	}
}

func TestDecodeExport(t *testing.T) {
	for doc, want := range map[string]string{
		`{"version":1,"record":{"id":"s"},"transcript":[]}{}`:               "more than one JSON value",
		`{"version":2,"record":{"id":"s"}}`:                                 "export version 2",
		`{"version":1}`:                                                     "no record",
		`{"version":1,"record":{"id":"s"},"extra":1}`:                       "not a session export",
		`{"version":1,"record":{"id":"s"},"transcript":[{"type":"bogus"}]}`: `unknown type "bogus"`,
	} {
		if _, _, err := decodeExport([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}

// The table marks the current session and says which are open.
func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Print(&b, []state.Record{
		{ID: "a1", Agent: "demo", Cwd: "/p", Title: "first\nline", LastUsed: time.Now()},
		{ID: "b2", Agent: "demo", Cwd: "/q", LastUsed: time.Now(), PID: os.Getpid()},
	}, "b2")
	got := b.String()
	for _, want := range []string{"  ID", "  a1", "just now", "first line", "* b2", "open (pid "} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if LiveState(state.Record{}) != "" {
		t.Error("a record without a pid is live")
	}
}
