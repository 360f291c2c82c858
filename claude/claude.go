// Package claude names the permission option ids the Claude ACP adapter
// (claude-agent-acp 0.71.0 and later) sends to every client.
//
// They are for convenience only, for example to pick an icon: acphost
// never derives behaviour from an option id, and a UI must answer a
// permission request with the id the agent sent, whatever it is. What an
// option does is the agent's decision; its Kind, Name and
// acphost.OptionMeta are hints for the user interface.
package claude

// Option ids of the Claude adapter's permission requests.
const (
	AllowOnce                = "allow-once"                   // allow_once "Yes"
	AllowWithUpdates         = "allow-with-updates"           // allow_always; applies the durable effect named in the label
	AllowSkillExact          = "allow-skill-exact"            // allow_always; always allow this Skill
	AllowSkillPrefix         = "allow-skill-prefix"           // allow_always; always allow "<first-word>:*" Skills
	ExitPlanDefault          = "exit-plan-default"            // ExitPlanMode: leave plan mode, approve edits manually
	ExitPlanAuto             = "exit-plan-auto"               // ExitPlanMode: leave plan mode into auto mode
	ExitPlanBypass           = "exit-plan-bypass"             // ExitPlanMode: leave plan mode, bypass permissions
	ExitPlanAcceptEdits      = "exit-plan-accept-edits"       // ExitPlanMode: leave plan mode, accept edits
	ExitPlanClearAuto        = "exit-plan-clear-auto"         // ExitPlanMode: clear context, then auto mode
	ExitPlanClearBypass      = "exit-plan-clear-bypass"       // ExitPlanMode: clear context, then bypass permissions
	ExitPlanClearAcceptEdits = "exit-plan-clear-accept-edits" // ExitPlanMode: clear context, then accept edits
	Reject                   = "reject"                       // reject_once "No" (a user denial, not a cancellation)
)

// Session modes of the Claude adapter (claude-agent-acp 0.101; offered as
// ACP modes and as the "mode" config option). The adapter starts in ModeAuto,
// in which it runs its tools without asking.
const (
	ModeDefault     = "default"           // "Manual": asks before edits and commands
	ModeAcceptEdits = "acceptEdits"       // edits files without asking
	ModePlan        = "plan"              // plans: no edits, commands asked
	ModeAuto        = "auto"              // a classifier decides instead of the user
	ModeBypass      = "bypassPermissions" // asks nothing
	ModeDontAsk     = "dontAsk"           // denies what it would ask
)

// StateDirs are the directories where Claude Code keeps its own state, for
// confinement: "~/" is the agent's home directory, a leading "$VAR" the
// value of that variable when the agent's environment sets it. Its
// ~/.claude.json is a file in the home directory, which the kernel layer
// cannot grant alone; with CLAUDE_CONFIG_DIR set it is kept in that
// directory.
var StateDirs = []string{"$CLAUDE_CONFIG_DIR", "~/.claude", "~/.cache/claude", "~/.local/state/claude", "~/.local/share/claude"}
