package ask

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestInputLine: a permission question shows a command as the command
// (Codex's whole call, ids and parsed commands and all, is not dumped),
// and other input as one line cut short.
func TestInputLine(t *testing.T) {
	codex := `{"call_id":"call_1","command":["bash","-lc","echo hi > out.txt"],"cwd":"/repo","parsed_cmd":[{"type":"unknown","cmd":"echo hi > out.txt"}],` +
		`"reason":"write","sandbox_permissions":"require_escalated","proposed_execpolicy_amendment":["echo"]}`
	for _, tc := range []struct {
		raw, label, want string
	}{
		{codex, "command", "$ echo hi > out.txt (in /repo)"},
		{`{"command":"npm test"}`, "command", "$ npm test"},
		{`{"command":["git","commit","-m","a b"]}`, "command", "$ git commit -m 'a b'"},
		{`{"path":"."}`, "input", `{"path":"."}`},
		{`{}`, "", ""},
	} {
		label, got := inputLine(json.RawMessage(tc.raw))
		if label != tc.label || got != tc.want {
			t.Errorf("inputLine(%s) = %q %q, want %q %q", tc.raw, label, got, tc.label, tc.want)
		}
	}
	long := `{"text":"` + strings.Repeat("x", 1000) + `"}`
	if _, got := inputLine(json.RawMessage(long)); len([]rune(got)) > maxInputSummary+1 {
		t.Errorf("a long input is shown whole (%d runes)", len([]rune(got)))
	}
}
