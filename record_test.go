package acphost

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/acphost/acphost/fakeagent"
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
	var buf syncBuffer
	c, err := startFake(t, script, ACPOptions{Record: &buf})
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
