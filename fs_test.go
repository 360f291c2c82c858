package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serviceCall plays one agent→client request and returns the client's answer.
func serviceCall(t *testing.T, opts ACPOptions, method string, params string) fakeagent.Message {
	t.Helper()
	msgs := serviceCalls(t, opts, fakeagent.Call{Method: method, Params: raw(params)})
	return msgs[0]
}

// serviceCalls plays agent→client requests in order, each waiting for its
// answer, and returns the answers.
func serviceCalls(t *testing.T, opts ACPOptions, calls ...fakeagent.Call) []fakeagent.Message {
	t.Helper()
	var steps []fakeagent.Step
	for i := range calls {
		steps = append(steps, fakeagent.Step{Request: &calls[i]})
	}
	c, fa := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}}, opts)
	_, err := c.Generate(Request{Prompt: "x"})
	require.NoError(t, err)
	res := responses(fa.Agent)
	require.Len(t, res, len(calls))
	return res
}

func errorCode(t *testing.T, m fakeagent.Message) int {
	t.Helper()
	require.NotEmpty(t, m.Error, "want an error, got result %s", m.Result)
	var e struct{ Code int }
	require.NoError(t, json.Unmarshal(m.Error, &e))
	return e.Code
}

func fsOpts(dir string) ACPOptions {
	return ACPOptions{Dir: dir, FS: &FSOptions{Read: true, Write: true}}
}

func TestFSCapabilitiesAdvertisedOnlyWhenServed(t *testing.T) {
	_, fa := connectFake(t, fakeagent.Script{}, ACPOptions{FS: &FSOptions{Read: true}, Terminal: &TerminalOptions{}})
	init := string(received(fa.Agent, "initialize")[0])
	assert.Contains(t, init, `"fs":{"readTextFile":true,"writeTextFile":false}`)
	assert.Contains(t, init, `"terminal":true`)
}

func TestFSReadLinesAndLimit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(path, []byte("one\ntwo\nthree\nfour\n"), 0o644))
	m := serviceCall(t, fsOpts(dir), "fs/read_text_file", `{"path":`+strconv.Quote(path)+`,"line":2,"limit":2}`)
	assert.JSONEq(t, `{"content":"two\nthree\n"}`, string(m.Result))
}

func TestFSMissingFile(t *testing.T) {
	dir := t.TempDir()
	missing := strconv.Quote(filepath.Join(dir, "new.txt"))
	m := serviceCall(t, fsOpts(dir), "fs/read_text_file", `{"path":`+missing+`}`)
	assert.JSONEq(t, `{"content":""}`, string(m.Result), "by default a missing file reads as empty (gemini-cli)")
	opts := fsOpts(dir)
	opts.FS.MissingFileError = true
	m = serviceCall(t, opts, "fs/read_text_file", `{"path":`+missing+`}`)
	assert.Equal(t, acp.CodeResourceNotFound, errorCode(t, m))
}

func TestFSSandboxRefusals(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	cases := map[string]string{
		"dotdot":            filepath.Join(dir, "..", filepath.Base(outside), "secret"),
		"absolute":          filepath.Join(outside, "secret"),
		"sibling prefix":    dir + "-other/x",
		"symlink out":       filepath.Join(dir, "link"),
		"symlinked parent":  filepath.Join(dir, "escape", "secret"),
		"relative":          "secret",
		"write via parent":  filepath.Join(dir, "escape", "new.txt"),
		"write via symlink": filepath.Join(dir, "link"),
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			method, params := "fs/read_text_file", `{"path":`+strconv.Quote(p)+`}`
			if strings.HasPrefix(name, "write") {
				method, params = "fs/write_text_file", `{"path":`+strconv.Quote(p)+`,"content":"pwned"}`
			}
			m := serviceCall(t, fsOpts(dir), method, params)
			assert.Equal(t, acp.CodeInvalidParams, errorCode(t, m))
			assert.NotContains(t, string(m.Error), `"s"`)
		})
	}
	got, err := os.ReadFile(filepath.Join(outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "s", string(got), "nothing outside the roots was written")
	_, err = os.Stat(filepath.Join(outside, "new.txt"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestFSWriteCreatesParentsAndReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "dir", "f.txt")
	m := serviceCall(t, fsOpts(dir), "fs/write_text_file", `{"path":`+strconv.Quote(path)+`,"content":"hello\n"}`)
	require.Empty(t, m.Error)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(got))
}

func TestFSWriteProposalAmended(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "main.go")
	require.NoError(t, os.WriteFile(path, []byte("package main\n"), 0o644))
	var seen *WriteProposal
	opts := fsOpts(dir)
	opts.FS.OnWriteFile = func(_ context.Context, p *WriteProposal) (string, error) {
		seen = p
		return p.Proposed + "// reviewed\n", nil
	}
	m := serviceCall(t, opts, "fs/write_text_file", `{"path":`+strconv.Quote(path)+`,"content":"package main\n\nfunc main() {}\n"}`)
	require.Empty(t, m.Error)
	got, _ := os.ReadFile(path)
	assert.Equal(t, "package main\n\nfunc main() {}\n// reviewed\n", string(got), "the amendment lands, not the proposal")
	require.NotNil(t, seen)
	assert.True(t, seen.Exists)
	assert.Equal(t, "package main\n", seen.Current)
	assert.Contains(t, acp.UnifiedDiff(seen.FileDiff()), "+func main() {}")
}

func TestFSWriteRefusedByHook(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.txt")
	opts := fsOpts(dir)
	opts.FS.OnWriteFile = func(context.Context, *WriteProposal) (string, error) { return "", errors.New("user said no") }
	m := serviceCall(t, opts, "fs/write_text_file", `{"path":`+strconv.Quote(path)+`,"content":"x"}`)
	assert.Equal(t, acp.CodeInvalidParams, errorCode(t, m))
	assert.Contains(t, string(m.Error), "user said no")
	_, err := os.Stat(path)
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestFSReadFromEditorBuffer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "open.go")
	opts := fsOpts(dir)
	opts.FS.OnReadFile = func(_ context.Context, _, p string) (string, bool, error) { return "unsaved\nbuffer\n", p == path, nil }
	m := serviceCall(t, opts, "fs/read_text_file", `{"path":`+strconv.Quote(path)+`,"line":2}`)
	assert.JSONEq(t, `{"content":"buffer\n"}`, string(m.Result))
}

func TestFSNotServedIsMethodNotFound(t *testing.T) {
	m := serviceCall(t, ACPOptions{}, "fs/write_text_file", `{"path":"/tmp/x","content":"x"}`)
	assert.Equal(t, acp.CodeMethodNotFound, errorCode(t, m))
}

// Plan mode rejects every write, whatever route the agent takes.
func TestPlanModeBlocksEveryWriteRoute(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "plan.txt")
	asked := 0
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf /", "execute", fakeagent.StdOptions...)),
		fakeagent.Say(fakeagent.Text("exec={{answer}} ")),
		fakeagent.Ask(fakeagent.PermissionParams("t2", "Edit main.go", "edit", fakeagent.StdOptions...)),
		fakeagent.Say(fakeagent.Text("edit={{answer}} ")),
		fakeagent.Ask(fakeagent.PermissionParams("t3", "Read main.go", "read", fakeagent.StdOptions...)),
		fakeagent.Say(fakeagent.Text("read={{answer}} ")),
		{Request: &fakeagent.Call{Method: "fs/write_text_file", Params: raw(`{"path":` + strconv.Quote(target) + `,"content":"x"}`)}},
		{Request: &fakeagent.Call{Method: "terminal/create", Params: raw(`{"command":"touch","args":[` + strconv.Quote(target) + `]}`)}},
	}}}}
	opts := fsOpts(dir)
	opts.Terminal = &TerminalOptions{}
	opts.PlanMode = true
	opts.OnPermission = func(context.Context, *acp.PermissionRequest) (string, error) { asked++; return "allow", nil }
	c, fa := connectFake(t, script, opts)
	resp, err := c.Generate(Request{Prompt: "plan it"})
	require.NoError(t, err)
	assert.Equal(t, "exec=reject edit=reject read=allow ", resp.Text)
	assert.Equal(t, 1, asked, "only the read reached OnPermission")
	var errs int
	for _, m := range responses(fa.Agent) {
		if len(m.Error) > 0 {
			errs++
			assert.Contains(t, string(m.Error), "plan mode")
		}
	}
	assert.Equal(t, 2, errs, "fs write and terminal refused")
	_, err = os.Stat(target)
	assert.True(t, errors.Is(err, os.ErrNotExist), "nothing was written")

	c.SetPlanMode(false)
	resp, err = c.Generate(Request{Prompt: "now do it"})
	require.NoError(t, err)
	assert.Equal(t, "exec=allow edit=allow read=allow ", resp.Text)
}
