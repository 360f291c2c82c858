// Package usage is acphost's help: the help text (Text), which is the one
// flag reference (FlagHelp reads each flag's description from it), the
// package doc's prose (DocIntro), and the flags spelled as people type
// them, --name, not -name (PrintFlags, FlagError).
package usage

import (
	"maps"
	"strings"
	"sync"
)

// The flag reference is Text, what acphost --help prints: the flag set
// takes each flag's usage from it (FlagHelp), and the command's package doc
// (cmd/acphost/doc.go) is generated from it and DocIntro. The command's
// TestHelpNamesEveryFlag and TestDocsUpToDate fail when they disagree.
//
// Text is the help, what acphost --help prints.
const Text = `Usage: acphost [flags] [--agent NAME | -- AGENT [ARGS...]]
       acphost agents | sessions [show|history|export|import|prune|rm] | cancel [ID] | login | logout | serve ... | web ... | version

Hosts an Agent Client Protocol agent in the terminal. --agent NAME runs a
named agent (acphost agents lists them: claude, codex, gemini, opencode …);
with no agent at all, a built-in demo agent runs. Without -p, prompts are
read line by line from standard input, with in-chat commands (/help).

Flags:
  -p, --prompt TEXT      a turn's prompt (repeatable; turns run in order)
  -f, --file PATH        a file whose whole text is one turn's prompt (-:
                         standard input; repeatable, in order with -p)
  --agent NAME           a named agent (built in, from the config file, or
                         an ACP registry id: a binary installed on first use)
  --registry FILE|URL    the registry --agent looks in ($ACPHOST_REGISTRY;
                         default: the official one, else the built-in copy)
  --resume ID|last       continue a recorded session (acphost sessions lists
                         them; last: the latest in this directory)
  --continue             continue this agent's latest session in this
                         directory, or start one when there is none
  -s, --session NAME     this agent's session NAME in this directory: the
                         first run starts it, later runs continue it (by
                         session/load or session/resume; an agent with
                         neither is an error, never a new session);
                         acphost sessions and --resume take the name too
  --worktree [NAME]      run the session in a new git worktree of this
                         repository on branch acphost/NAME (default NAME:
                         the -s name, else a short id), in REPO.worktrees/
                         beside it (git config acphost.worktreeDir: elsewhere);
                         acphost sessions rm removes it when it is clean
  --permission POLICY    ask, reads, allow, reject or plan (default: ask when stdin
                         is a terminal and no --json, else what
                         --non-interactive-permissions says); with ask,
                         "always" answers are remembered for the same tool
                         kind and title in the session; reads allows what
                         the agent calls a read or a search and carries no
                         diff or change that writes, and asks the rest
                         (plan is the host-enforced read-only)
  --non-interactive-permissions deny|fail
                         with nobody to ask (stdin not a terminal, or --json)
                         and no --permission: deny answers with a reject-kind
                         option (default); fail cancels the turn, names the
                         request, runs no later prompt and exits 1
  --permission-policy FILE
                         JSON rules, first match wins: {"rules": [{"kind":
                         "execute", "command": "go test *", "answer":
                         "allow"}, {"path": "src/**", "answer": "ask"}]};
                         kind, title/command globs, path glob; answer
                         allow, reject or ask; unmatched: --permission
  --mcp-config FILE      MCP servers for the agent, {"mcpServers": {"NAME":
                         {"command", "args", "env"} or {"type": "http"|"sse",
                         "url", "headers"}}} as Claude Code, Cursor and Zed
                         read it (repeatable; wins by name over the config
                         file's); a server the agent cannot take exits 2
  --elicit POLICY        the agent's questions (forms, URLs): ask, accept,
                         decline or cancel (default: ask when stdin is a
                         terminal and no --json, else decline). ask: one field
                         at a time, choices by number, Enter takes the default,
                         !decline declines, !cancel dismisses; a URL is shown,
                         never opened: y accept, n decline, c cancel
  --elicit-value N=V     with --elicit accept: field N's answer (repeatable);
                         other fields get their defaults
  --json                 JSON lines on stdout: one per event, a result per turn,
                         each with the sessionId (and the -s name as
                         "session"); a permission answered without asking
                         adds a permission_decision line (decidedBy, rule)
  --no-wait              with --resume and -p: queue the prompts in the acphost
                         that has the session open, or one started in the
                         background, and return at once (a prompt: 1 MiB at most)
  --quiet                only each turn's final answer text on stdout
  --cwd DIR              the session's working directory
  --mode ID              the session mode to set after the session opens
                         (/mode lists them)
  --set KEY=VALUE        a config option (model, thought level …) to set
                         after the session opens (repeatable; /config lists
                         them, with their values)
  --auth METHOD          authenticate with the agent's METHOD after
                         initialize (acphost login lists its methods)
  --system-prompt TEXT   system-level instructions for every session, for
                         agents that take them (refused for one that does not)
  --system-prompt-file FILE
                         the --system-prompt text, read from FILE
  --system-prompt-mode M append (the agent's instructions, then yours;
                         default) or override (yours replace its defaults)
  --presentation         ask agents to attach their permission prompt text
  --fs                   serve file reads and writes inside --cwd
  --timeout DURATION     cancel a turn that runs longer (e.g. 10m); each turn
                         has its own limit, and later prompts still run
  --start-timeout D      give up on an agent not started after D (default 2m:
                         a first npx download takes a while)
  --stderr FILE          the agent's stderr ("-": this stderr; default: kept,
                         shown when the agent fails)
  --record FILE          record the wire as NDJSON (both directions, stderr,
                         timestamps; mode 0600): for a bug report, or replayed
                         as the agent by fakeagent.ReplayCommand in a Go test
  --writable DIR         confine the agent and all it runs (Linux, Landlock) to
                         changing files beneath DIR (repeatable); the rest,
                         --cwd included unless listed, is read-only to it
  --no-store             do not record the session in the session store (nor
                         the prompt history)
  --tool-output N        the last N lines of a finished tool's output (default
                         3; all; 0: none); a failed tool's line says why
  --ssh [USER@]HOST[:PORT]
                         run AGENT on HOST over SSH (--cwd is then a remote
                         directory, by default the login one); Close and a
                         dropped link leave nothing running there; --fs and
                         --writable are refused
  --ssh-identity FILE    a private key to log in with (repeatable; default:
                         the keys of the ssh-agent at SSH_AUTH_SOCK)
  --ssh-known-hosts FILE verify HOST's key with FILE (default:
                         ~/.ssh/known_hosts); an unknown host is refused
  --ssh-insecure         accept any host key
  --url ws://HOST:PORT/acp
                         reach an agent served over WebSocket (acphost serve,
                         a sandbox); needs --cwd, a directory there
  --token-file FILE      the bearer token for --url, from FILE (yours only;
                         "-": stdin; default: $ACPHOST_TOKEN)
  --token T              the bearer token for --url on the command line,
                         where every local user sees it (ps): taken with a
                         warning; give --token-file instead
  --kube-image IMAGE     run AGENT in a Kubernetes pod of its own from IMAGE
                         ($KUBECONFIG, else ~/.kube/config); --cwd is a
                         directory in the pod (default /); the pod is
                         deleted when acphost exits; --fs and --writable are
                         refused
  --kube-warm-pool NAME  run AGENT in a pod claimed from the agent-sandbox
                         SandboxWarmPool NAME; the claim is deleted at exit
  --kube-namespace NS    the namespace of the pod or pool (default: the
                         context's, else default)
  --kube-context NAME    the kubeconfig context (default: the current one)
  --kube-pull POLICY     the image pull policy: never, always or
                         if-not-present (default: the cluster's)
  --version              print the version

In the chat: /mode [ID], /config [KEY VALUE], /plan on|off, /sessions, /new,
/resume ID, /cancel, /quit, /help, and the agent's own /commands. A prompt
typed while a turn runs is queued and runs after it. On a terminal, Up/Down
recall earlier prompts (kept per agent) and Tab completes commands, modes and
session ids; Ctrl-D at an empty prompt quits.

acphost agents           the named agents and the command each runs, then
                         the ACP registry's by id (install|update|remove ID)
acphost sessions [--json] | show | history | export | import | prune | rm
                         the recorded sessions ($XDG_STATE_HOME/acphost), and
                         which an acphost has open with a turn running
acphost login [METHOD] [--agent NAME | -- AGENT [ARGS...]]
                         log in to the agent: a terminal method runs the
                         agent's own login in this terminal, another is sent
                         with authenticate; without METHOD, lists them
acphost logout [--agent NAME | -- AGENT [ARGS...]]
                         end the agent's login (when it offers logout)
acphost cancel [ID|last] stop the turn running in that session, from another
                         shell (asked over that acphost's control socket; no
                         signal is sent)
acphost --resume ID|last -p TEXT --no-wait
                         queue TEXT in the acphost that has the session open
                         and return at once; with none, start one in the
                         background to run it (its pid and log are printed)
acphost serve --listen ADDR [--token-file FILE] [--cwd DIR] -- AGENT [ARGS...]
  serves AGENT over WebSocket, one process per connection, on ADDR (default
  127.0.0.1:0); never without a token: one is made up and kept in a file
  only you can read (the printed command names it) unless ACPHOST_TOKEN or
  --token-file gives it; beyond loopback, give it; with --kube-image IMAGE
  or --kube-warm-pool NAME, one pod per connection
acphost web [--listen ADDR] [--public] [--cwd DIR] [--fs] [-- AGENT [ARGS...]]
  the agent in the browser: live transcript, approvals, editable proposals
  (--fs), a stop button; prints a URL with a one-time token

The config file ($XDG_CONFIG_HOME/acphost/config.json, or $ACPHOST_CONFIG)
adds or overrides agents and sets defaults; flags win over it:
  {"defaults": {"agent": "claude", "permission": "ask", "startTimeout": "5m",
                "permissionPolicy": "policy.json", "nonInteractivePermissions": "fail",
                "mcpServers": [{"name": "git", "command": "git-mcp", "args": [], "env": []}]},
   "agents": {"mine": {"command": ["my-agent", "--acp"], "env": {"K": "v"},
                       "mode": "default", "config": {"model": "fast"},
                       "systemPrompt": "Answer briefly.", "systemPromptMode": "append",
                       "mcpServers": [...]}}}
mcpServers (ACP McpServer objects, or {"NAME": {...}} as --mcp-config) come
from the defaults, then the agent, then --mcp-config; permissionPolicy is
relative to the config file. systemPrompt and systemPromptMode may also sit
in defaults; --system-prompt wins over the agent's, which wins over them.

Ctrl-C cancels the running turn; a second one, or one between turns, quits.
Exit status: 0 every turn ended, 1 the agent failed or a turn timed out,
2 bad usage, 130 quit by Ctrl-C, 143 by SIGTERM.
`

// DocIntro is the command's package doc's prose before the help text: what
// --help leaves out. It names no flag's meaning that Text does not give.
const DocIntro = `With no agent it runs a built-in fake agent whose every turn shows a
thought, a tool call, a permission request, a plan and an answer:

	go run ./cmd/acphost -p "list files"

A named agent (acphost agents lists them, with their commands) runs
through npx; a first run downloads it, which the start shows:

	acphost --agent claude

Any ACP program works after --:

	acphost -- npx -y @agentclientprotocol/claude-agent-acp

Each -p/--prompt is one turn, in order, on the same warm session; without
one, acphost reads prompts line by line from standard input. There, a
line starting with / is a command: /mode [ID], /config [KEY VALUE],
/plan on|off, /sessions, /new, /resume ID, /cancel, /quit, /help; any
other /word is the agent's own command, sent as the prompt ("//x" sends
"/x"). On a terminal, a line typed while a turn runs is queued and runs
after it (/cancel and /quit act at once). There the prompt is a line
editor (golang.org/x/term's Terminal): Up/Down recall earlier prompts,
kept per agent in history/AGENT under the state directory (the last 500;
in memory only with --no-store), and Tab completes the commands, the
agent's own, mode ids after /mode and session ids after /resume. Output
goes above the line being typed. Ctrl-D at an empty prompt quits.

acphost sessions shows which sessions an acphost process has open, and
whether a turn runs there. Each running acphost listens on a control
socket of its own (a unix-domain socket in run/ under the state
directory, 0700; its path is in the session's record, removed at exit):
acphost cancel [ID|last] asks it to cancel its turn, as Ctrl-C would, and
acphost --resume ID|last -p TEXT --no-wait hands it a prompt, queued as
one typed during a turn. With no acphost holding the session, --no-wait
starts one in the background (its own session, output in log/ under the
state directory) that runs the prompts and exits. Nothing is ever
signalled by pid.

Every session is recorded in the session store, sessions.json under
$XDG_STATE_HOME/acphost (~/.local/state/acphost; %LocalAppData% on
Windows, ~/Library/Application Support on macOS; $ACPHOST_STATE_DIR
overrides): the agent, its session id, the directory, title, mode and
last use. acphost --resume ID|last continues one through session/load
(the replayed history shown dimmed) or session/resume.

The config file, acphost/config.json under os.UserConfigDir
($XDG_CONFIG_HOME or ~/.config on Linux; $ACPHOST_CONFIG overrides), adds
or overrides named agents and sets defaults (agent, permission, elicit,
timeout, startTimeout, presentation, nonInteractivePermissions,
permissionPolicy, mcpServers); an agent may list its own mcpServers
(ACP McpServer objects, or the {"name": {...}} object of --mcp-config;
sent after the defaults' ones); flags win over it.

With --json, stdout holds one JSON object per line per stream event, then
{"type":"result",...} after each turn, and nothing else. A question is an
"elicitation" line (mode, message, title, requestedSchema as sent, or url
and elicitationId), then "elicitation_answer" (action, values sent,
reason, error) and, for an accepted URL, "elicitation_complete" when the
agent says it is done. A permission answered without asking is followed,
after its "permission_answer", by a "permission_decision" line: id and
name of the tool call, optionId, optionKind (or cancelled), decidedBy
(policy, permission, non_interactive, plan_mode or remembered) and rule
(the policy file's "policy.json:3", "--permission allow",
"--non-interactive-permissions deny", …).

acphost web serves the agent to a browser (package web): a live
transcript, approval dialogs, write proposals to amend before they land, a
stop button, plan mode, the agent's modes and options. It prints a URL
with a one-time token; loopback only unless --public.

acphost serve serves AGENT over WebSocket at ws://ADDR/acp, starting one
AGENT process per connection and stopping it when the connection ends
(with --kube-image or --kube-warm-pool, AGENT runs in a pod of its own per
connection, --cwd is its directory there, and every pod is deleted when
serve ends). It
prints the URL on stdout, then the command that connects to it, and serves
until SIGINT or SIGTERM. It never serves without a token: with none given
($ACPHOST_TOKEN, --token-file) it makes one up and writes it to a file
only you can read, removed when serve ends; the printed command names that
file (--token-file), never the token. A non-loopback ADDR needs a token
given.

Ctrl-C during a turn cancels that turn and goes on with the next prompt
on the same agent; a second Ctrl-C in the same turn, or one between turns,
closes the agent and exits. SIGTERM closes the agent and exits.

Exit status: 0 when every turn ended (whatever its stop reason, cancelled
included); 1 when the agent failed (it could not start, crashed, broke the
protocol, answered a prompt with an error) or a turn hit --timeout;
2 on bad usage; 130 after quitting with Ctrl-C and 143 after SIGTERM, as
a shell reports a process those signals ended.

Colors are used only on a terminal and never when NO_COLOR is set to a
non-empty value (https://no-color.org). Agent text is printed through
acphost.SafeText; --json output carries it unfiltered, JSON-escaped.

For tests, the built-in agent plays the fakeagent.Script given as JSON in
the environment variable ACPHOST_DEMO_SCRIPT instead of fakeagent.Demo.
`

// FlagHelp is the help text's description of the flag name (see
// flagHelps); "" for a flag it does not describe.
func FlagHelp(name string) string { return flagHelps()[name] }

// FlagHelps is every flag the help text describes (without dashes), with
// its description.
func FlagHelps() map[string]string { return maps.Clone(flagHelps()) }

// flagHelps reads the Flags section of Text: each entry is a line
// "  -n, --name VALUE" with the description from column 25 on (or on the
// next lines, when the names run past it), continued on lines indented to
// column 25; it maps each name (without dashes) to the description, its
// lines joined.
var flagHelps = sync.OnceValue(func() map[string]string {
	const col = 25
	helps := map[string]string{}
	_, section, _ := strings.Cut(Text, "\nFlags:\n")
	section, _, _ = strings.Cut(section, "\n\n")
	var names []string
	var desc []string
	flush := func() {
		for _, n := range names {
			helps[n] = strings.Join(desc, " ")
		}
		names, desc = nil, nil
	}
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "  -") {
			flush()
			head, text := line, ""
			if len(line) > col && line[col-1] == ' ' {
				head, text = line[:col], line[col:]
			}
			for _, f := range strings.Fields(head) {
				if n := strings.TrimLeft(strings.TrimSuffix(f, ","), "-"); strings.HasPrefix(f, "-") && n != "" {
					names = append(names, n)
				}
			}
			if text = strings.TrimSpace(text); text != "" {
				desc = append(desc, text)
			}
			continue
		}
		desc = append(desc, strings.TrimSpace(line))
	}
	flush()
	return helps
})
