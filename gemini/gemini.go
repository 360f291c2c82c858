// Package gemini names what the host knows of Gemini CLI's ACP mode
// (gemini --acp): its session modes and where it keeps its state. Like
// the claude and codex packages, constants only.
package gemini

// Session modes of Gemini CLI (0.61). It starts in ModeDefault, which asks.
const (
	ModeDefault  = "default"  // asks before edits and commands
	ModeAutoEdit = "autoEdit" // edits without asking
	ModeYolo     = "yolo"     // asks nothing
	ModePlan     = "plan"     // read-only tools only
)

// StateDirs are where Gemini CLI keeps its own state, for confinement
// (see claude.StateDirs for the notation).
var StateDirs = []string{"~/.gemini", "~/.cache/gemini-cli"}
