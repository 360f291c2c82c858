// Package opencode names what the host knows of opencode's ACP mode
// (opencode acp): its modes, offered as a config option of category
// "mode", and where it keeps its state. Constants only.
package opencode

// Modes of opencode (1.18). Whether ModeBuild asks depends on the user's
// opencode config ("permission"); its default is to allow, without asking.
const (
	ModeBuild = "build" // edits and runs commands as its config allows
	ModePlan  = "plan"  // edits denied
)

// StateDirs are where opencode keeps its own state, for confinement (see
// claude.StateDirs for the notation).
var StateDirs = []string{"$XDG_DATA_HOME/opencode", "$XDG_CONFIG_HOME/opencode", "$XDG_CACHE_HOME/opencode", "$XDG_STATE_HOME/opencode",
	"~/.local/share/opencode", "~/.config/opencode", "~/.cache/opencode", "~/.local/state/opencode"}
