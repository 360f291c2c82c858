package ask

import (
	"encoding/json"
	"strings"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/internal/remote"
)

// maxInputSummary bounds the raw input a permission question shows when
// it is not a command: the question is about the call, not its JSON.
const maxInputSummary = 160

// inputLine is a tool call's raw input as a permission question shows
// it: a command the agent would run as the command ("$ ls -la", in its
// directory), else the input's JSON on one line, cut short. Codex sends
// its whole call (ids, parsed commands, the sandbox) as rawInput.
func inputLine(raw json.RawMessage) (label, text string) {
	var in struct {
		Command json.RawMessage `json:"command"`
		Cwd     string          `json:"cwd"`
	}
	if json.Unmarshal(raw, &in) == nil && len(in.Command) > 0 {
		if cmd := commandText(in.Command); cmd != "" {
			text = "$ " + cmd
			if in.Cwd != "" {
				text += " (in " + acp.SafeText(in.Cwd) + ")"
			}
			return "command", tty.OneLine(text, maxInputRunes)
		}
	}
	in2 := tty.CompactJSON(raw)
	if in2 == "" || in2 == "{}" {
		return "", ""
	}
	return "input", tty.OneLine(in2, maxInputSummary)
}

// commandText is a command given as a string, or as argv (["bash", "-lc",
// SCRIPT] shows SCRIPT), "" for anything else.
func commandText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return acp.SafeText(s)
	}
	var argv []string
	if json.Unmarshal(raw, &argv) != nil || len(argv) == 0 {
		return ""
	}
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") && strings.HasSuffix(argv[0], "sh") {
		return acp.SafeText(argv[2])
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = remote.Quote(a)
	}
	return acp.SafeText(strings.Join(words, " "))
}
