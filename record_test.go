package acphost

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type recordLine struct {
	T    string          `json:"t"`
	Gen  int             `json:"gen"`
	Dir  string          `json:"dir"`
	Msg  json.RawMessage `json:"msg"`
	Line string          `json:"line"`
}

func readRecordLines(t *testing.T, s string) []recordLine {
	t.Helper()
	var out []recordLine
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l recordLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %q", sc.Text())
		out = append(out, l)
	}
	return out
}

func TestRecordWire(t *testing.T) {
	script := fakeagent.Demo()
	script.StderrLines = []string{"agent starting"}
	script.Turns[0].Steps = append([]fakeagent.Step{{Raw: "a banner"}}, script.Turns[0].Steps...)
	var buf testutil.SyncBuffer
	c, err := startFake(t, script, ACPOptions{Debug: DebugOptions{Record: &buf}})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "list files"})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	lines := readRecordLines(t, buf.String())
	dirs := map[string]int{}
	var methods []string
	for _, l := range lines {
		assert.Equal(t, 1, l.Gen)
		assert.NotEmpty(t, l.T)
		dirs[l.Dir]++
		if l.Dir == "send" {
			var m struct{ Method string }
			require.NoError(t, json.Unmarshal(l.Msg, &m))
			if m.Method != "" {
				methods = append(methods, m.Method)
			}
		}
	}
	assert.Equal(t, []string{"initialize", "session/new", "session/prompt"}, methods)
	assert.Equal(t, 1, dirs["stderr"])
	assert.Equal(t, 1, dirs["skip"])
	assert.Greater(t, dirs["recv"], 5)
	assert.Equal(t, "send", lines[0].Dir)
}

// A recorded session replayed by fakeagent drives the same hooks in the
// same order: a real session becomes a regression test.
func TestRecordThenReplay(t *testing.T) {
	run := func(opts ACPOptions) ([]string, []string) {
		rec := &recorder{}
		var asked []string
		opts.OnUpdate = rec.onUpdate
		opts.OnPermission = func(_ context.Context, req *acp.PermissionRequest) (string, error) {
			asked = append(asked, req.ToolCall.Title)
			return "allow-always", nil
		}
		opts.Dir = "/"
		c, err := Start(context.Background(), opts)
		require.NoError(t, err)
		defer c.Close()
		var texts []string
		for _, p := range []string{"one", "two"} {
			resp, err := c.Generate(Request{Prompt: p})
			require.NoError(t, err)
			texts = append(texts, resp.Text)
		}
		return append(rec.kinds(), asked...), texts
	}
	path, args, env, err := fakeagent.Command(fakeagent.Demo())
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "session.ndjson")
	f, err := os.Create(file)
	require.NoError(t, err)
	liveHooks, liveTexts := run(ACPOptions{Command: path, Args: args, Process: ProcessOptions{Env: env}, Debug: DebugOptions{Record: f}})
	require.NoError(t, f.Close())

	path, args, env, err = fakeagent.ReplayCommand(file)
	require.NoError(t, err)
	replayHooks, replayTexts := run(ACPOptions{Command: path, Args: args, Process: ProcessOptions{Env: env}})
	assert.Equal(t, liveHooks, replayHooks)
	assert.Equal(t, liveTexts, replayTexts)
	assert.Equal(t, []string{"picked allow-always", "picked allow-always"}, replayTexts)
}
