// Command acphost is a terminal host for any Agent Client Protocol agent.
//
// Usage:
//
//	acphost [flags] [--agent NAME | -- AGENT [ARGS...]]
//	acphost agents | sessions [--json | show | history | export | import | prune | rm] | cancel [ID] | serve ... | web ... | version
//
// With no agent it runs a built-in fake agent whose every turn shows a
// thought, a tool call, a permission request, a plan and an answer:
//
//	go run ./cmd/acphost -p "list files"
//
// A named agent (acphost agents lists them, with their commands) runs
// through npx; a first run downloads it, which the start shows:
//
//	acphost --agent claude
//
// Any ACP program works after --:
//
//	acphost -- npx -y @agentclientprotocol/claude-agent-acp
//
// Each -p/--prompt is one turn, in order, on the same warm session; without
// one, acphost reads prompts line by line from standard input. There, a
// line starting with / is a command: /mode [ID], /config [KEY VALUE],
// /plan on|off, /sessions, /new, /resume ID, /cancel, /quit, /help; any
// other /word is the agent's own command, sent as the prompt ("//x" sends
// "/x"). On a terminal, a line typed while a turn runs is queued and runs
// after it (/cancel and /quit act at once). There the prompt is a line
// editor (golang.org/x/term's Terminal): Up/Down recall earlier prompts,
// kept per agent in history/AGENT under the state directory (the last 500;
// in memory only with --no-store), and Tab completes the commands, the
// agent's own, mode ids after /mode and session ids after /resume. Output
// goes above the line being typed. Ctrl-D at an empty prompt quits.
//
// acphost sessions shows which sessions an acphost process has open, and
// whether a turn runs there. Each running acphost listens on a control
// socket of its own (a unix-domain socket in run/ under the state
// directory, 0700; its path is in the session's record, removed at exit):
// acphost cancel [ID|last] asks it to cancel its turn, as Ctrl-C would, and
// acphost --resume ID|last -p TEXT --no-wait hands it a prompt, queued as
// one typed during a turn. Nothing is ever signalled by pid.
//
// Every session is recorded in the session store, sessions.json under
// $XDG_STATE_HOME/acphost (~/.local/state/acphost; %LocalAppData% on
// Windows, ~/Library/Application Support on macOS; $ACPHOST_STATE_DIR
// overrides): the agent, its session id, the directory, title, mode and
// last use. acphost --resume ID|last continues one through session/load
// (the replayed history shown dimmed) or session/resume.
//
// The config file, acphost/config.json under os.UserConfigDir
// ($XDG_CONFIG_HOME or ~/.config on Linux; $ACPHOST_CONFIG overrides), adds
// or overrides named agents and sets defaults (agent, permission, elicit,
// timeout, startTimeout, presentation, nonInteractivePermissions,
// permissionPolicy, mcpServers); an agent may list its own mcpServers
// (ACP McpServer objects, or the {"name": {...}} object of --mcp-config;
// sent after the defaults' ones); flags win over it.
//
// Flags:
//
//	-p, --prompt TEXT      a turn's prompt (repeatable)
//	--agent NAME           a named agent (built in, from the config file, or
//	                       an ACP registry id: a binary installed on first use)
//	--registry FILE|URL    the registry --agent looks in ($ACPHOST_REGISTRY;
//	                       default: the official one, else the built-in copy)
//	--resume ID|last       continue a recorded session (last: the latest in
//	                       the current directory); its agent and directory
//	                       unless given
//	--start-timeout D      give up on an agent not started within D (2m)
//	--no-store             do not record the session (nor the prompt history)
//	--no-wait              with --resume and -p: queue the prompts in the
//	                       acphost that has the session open (over its
//	                       control socket) and return at once; with none,
//	                       start one in the background (its own session,
//	                       output in log/ under the state directory) that
//	                       runs them and exits, and return once it has the
//	                       session open. A prompt over 1 MiB is refused.
//	--tool-output N        show the last N lines of each finished tool's
//	                       output (default 3; all; 0 none); a failed tool's
//	                       line says why (its output's last line)
//	--version              print the version
//	--permission POLICY    ask: show each request and read the choice (a number,
//	                       y or n) from standard input, remembering "always"
//	                       answers (acphost.Remember) for the same tool kind
//	                       and title; allow / reject: answer by option
//	                       kind; plan: plan mode (anything that can change
//	                       something is rejected, reads are allowed).
//	                       Default: ask when standard input is a terminal
//	                       (not /dev/null) and --json is not set; else
//	                       nobody can be asked, and
//	                       --non-interactive-permissions says what happens.
//	--non-interactive-permissions deny|fail
//	                       with nobody to ask and no --permission (or for an
//	                       ask rule of the policy file): deny answers with a
//	                       reject-kind option (default); fail cancels the
//	                       turn, names the request on stderr, runs no later
//	                       prompt, and the exit status is 1
//	--permission-policy FILE
//	                       a JSON list of rules, first match wins, each
//	                       matching the tool kind, a title or command glob
//	                       and/or a path glob, answering allow, reject or
//	                       ask; unmatched requests follow --permission (see
//	                       permPolicy); a malformed file stops acphost at
//	                       start, naming its line
//	--mcp-config FILE      MCP servers for the agent in the {"mcpServers":
//	                       {...}} format of Claude Code, Cursor and Zed (see
//	                       mcpList); repeatable, a server of the same name
//	                       replacing the config file's; a malformed file, an
//	                       unknown type or a server the agent cannot take
//	                       stops acphost with exit status 2
//	--quiet                only each turn's final answer text on stdout
//	--elicit POLICY        how to answer the agent's questions (elicitations:
//	                       a form to fill in, or a URL to open). ask: show the
//	                       form and read it one field at a time from standard
//	                       input (enum choices by number, Enter takes the
//	                       default, "!decline" declines, "!cancel" dismisses),
//	                       or for a URL read y (accept: you open it; acphost
//	                       never does), n (decline) or c (cancel); accept: send
//	                       the form's defaults and --elicit-value fields, or
//	                       consent to a URL; decline; cancel. Default: ask when
//	                       standard input is a terminal and --json is not set,
//	                       else decline (with a note on stderr).
//	--elicit-value NAME=VALUE
//	                       with --elicit accept, a form field's answer, typed
//	                       as at the prompt (repeatable; fields a form does not
//	                       have are ignored)
//	--json                 one JSON object per line per stream event on stdout,
//	                       then {"type":"result",...} after each turn; nothing
//	                       else goes to stdout. A question is an "elicitation"
//	                       line (mode, message, title, requestedSchema as sent,
//	                       or url and elicitationId), then "elicitation_answer"
//	                       (action, values sent, reason, error) and, for an
//	                       accepted URL, "elicitation_complete" when the agent
//	                       says it is done. A permission answered without
//	                       asking is followed, after its "permission_answer",
//	                       by a "permission_decision" line: id and name of the
//	                       tool call, optionId, optionKind (or cancelled),
//	                       decidedBy (policy, permission, non_interactive,
//	                       plan_mode or remembered) and rule (the policy
//	                       file's "policy.json:3", "--permission allow",
//	                       "--non-interactive-permissions deny", …)
//	--cwd DIR              the session's working directory (default: current)
//	--mode ID              the session mode set after the session opens
//	--set KEY=VALUE        a config option (model, thought level …) set after
//	                       the session opens (repeatable)
//	--presentation         ask agents for their permission prompt text
//	--fs                   serve file reads and writes inside --cwd
//	--timeout DURATION     cancel a turn that runs longer (e.g. 10m); each
//	                       turn has the limit and later prompts still run
//	--stderr FILE          write the agent's stderr to FILE ("-": acphost's
//	                       stderr); by default it is kept and its last lines
//	                       are shown when the agent fails
//	--ssh [USER@]HOST[:PORT]
//	                       run AGENT on HOST over SSH, under a wrapper that
//	                       ends its process group when acphost stops it or
//	                       the link drops; --cwd is then a directory there
//	                       (default: the login directory); --fs and
//	                       --writable are refused
//	--ssh-identity FILE    a private key (repeatable; default: the ssh-agent)
//	--ssh-known-hosts FILE the known_hosts file (default ~/.ssh/known_hosts);
//	                       an unknown host or a changed key is refused
//	--ssh-insecure         accept any host key
//	--url ws://HOST:PORT/acp
//	                       reach an agent served over WebSocket (the ACP
//	                       remote transport): acphost serve, or a sandbox
//	                       that speaks it; --cwd names the session's directory
//	                       there and is required
//	--token-file FILE      the bearer token for --url, read from FILE (mode
//	                       600: refused if others may read it; "-": a line
//	                       of stdin). Default: the environment variable
//	                       ACPHOST_TOKEN. Both keep it off the command line,
//	                       where every user of the machine can read it: a
//	                       --token T, or a ?token= in the URL, is taken with
//	                       a warning
//	--writable DIR         confine the agent, and everything it runs, to
//	                       changing files beneath DIR (repeatable; Linux with
//	                       Landlock, else acphost fails). Everything else,
//	                       --cwd included unless listed, is read-only to the
//	                       agent's own tools and to the --fs writes acphost
//	                       makes for it. List the agent's state directories
//	                       (e.g. ~/.claude) and a temporary directory.
//
// acphost web [--listen ADDR] [--public] [--cwd DIR] [--fs] [-- AGENT [ARGS...]]
// serves the agent to a browser (package web): a live transcript,
// approval dialogs, write proposals to amend before they land, a stop
// button, plan mode, the agent's modes and options. It prints a URL with a
// one-time token; loopback only unless --public.
//
// acphost serve --listen ADDR [--token-file FILE] [--cwd DIR] -- AGENT [ARGS...]
// serves AGENT over WebSocket at ws://ADDR/acp, starting one AGENT process
// per connection and stopping it when the connection ends. It prints the
// URL on stdout, then the command that connects to it, and serves until
// SIGINT or SIGTERM. It never serves without a token: with none given
// ($ACPHOST_TOKEN, --token-file) it makes one up and writes it to a file
// only you can read, removed when serve ends; the printed command names
// that file (--token-file), never the token. A non-loopback ADDR needs a
// token given.
//
// Ctrl-C during a turn cancels that turn and goes on with the next prompt
// on the same agent; a second Ctrl-C in the same turn, or one between turns,
// closes the agent and exits. SIGTERM closes the agent and exits.
//
// Exit status: 0 when every turn ended (whatever its stop reason, cancelled
// included); 1 when the agent failed (it could not start, crashed, broke the
// protocol, answered a prompt with an error) or a turn hit --timeout;
// 2 on bad usage; 130 after quitting with Ctrl-C and 143 after SIGTERM, as
// a shell reports a process those signals ended.
//
// Colors are used only on a terminal and never when NO_COLOR is set to a
// non-empty value (https://no-color.org). Agent text is printed through
// acphost.SafeText; --json output carries it unfiltered, JSON-escaped.
//
// For tests, the built-in agent plays the fakeagent.Script given as JSON in
// the environment variable ACPHOST_DEMO_SCRIPT instead of fakeagent.Demo.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/policy"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/fakeagent"
)

// Exit statuses.
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2
	exitInterrupt = 130 // 128 + SIGINT
	exitTerm      = 143 // 128 + SIGTERM
)

// envDemoScript holds a fakeagent.Script (JSON) for the built-in agent.
const envDemoScript = "ACPHOST_DEMO_SCRIPT"

// config is the parsed command line.
type config struct {
	prompts      []string
	permission   string
	elicit       string            // the --elicit policy
	elicitAuto   bool              // elicit is the default decline, not asked for
	elicitValues map[string]string // --elicit-value NAME=VALUE
	json         bool
	cwd          string
	mode         string
	presentation bool
	fs           bool
	timeout      time.Duration
	stderrPath   string
	writable     []string // absolute; empty: the agent is not confined
	agent        []string // empty: the built-in fake agent
	remote       remoteFlags
	agentName    string        // --agent, or the config file's default agent
	agentEnv     []string      // the named agent's environment
	modeSoft     bool          // mode is the named agent's default, not asked for
	startTimeout time.Duration // --start-timeout
	resume       string        // --resume ID|last
	noStore      bool          // --no-store
	toolOutput   int           // --tool-output: lines of a tool's output shown (negative: all)
	noWait       bool          // --no-wait: hand the prompts to the acphost that has the session open
	args         []string      // the command line as given (for a detached --no-wait run)
	flagEnd      int           // where the flags end in args

	// The ACP registry (registryagents.go) and the named agent's profile.
	registry string                // --registry FILE|URL: the registry --agent looks in
	profile  *acphost.AgentProfile // nil: the library recognises the agent by its command

	nonInteractive string         // --non-interactive-permissions: deny or fail
	noOneToAsk     bool           // permission defaulted to reject: nobody can be asked
	policyPath     string         // --permission-policy, or the config file's
	policy         *policy.Policy // the parsed policy file, nil without one
	mcpServers     mcpList        // the config file's mcpServers (defaults, then the agent's), then --mcp-config's
	mcpConfigs     []string       // --mcp-config FILE (repeatable)
	quiet          bool           // --quiet: only the agent's final answer on stdout
	sets           []configSet    // --set KEY=VALUE, then the config file's, to set once the session opens
	auth           string         // --auth METHOD, or the named agent's: sent with authenticate after initialize
	continueLast   bool           // --continue: the agent's last session in this directory, else a new one
	recordPath     string         // --record FILE: the wire, as NDJSON
	login          *loginRun      // acphost login: log in instead of chatting
	file           fileConfig     // the config file, read once, by parseArgs
}

// The --non-interactive-permissions policies: what a permission request
// gets when nobody can be asked.
const (
	nonInteractiveDeny = "deny"
	nonInteractiveFail = "fail"
)

// defaultStartTimeout bounds the agent's start: generous, for a first npx
// download.
const defaultStartTimeout = 2 * time.Minute

const usageText = `Usage: acphost [flags] [--agent NAME | -- AGENT [ARGS...]]
       acphost agents | sessions [show|history|export|import|prune|rm] | cancel [ID] | serve ... | web ... | version

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
  --permission POLICY    ask, reads, allow, reject or plan (default: ask when stdin
                         is a terminal and no --json, else what
                         --non-interactive-permissions says); with ask,
                         "always" answers are remembered for the same tool
                         kind and title in the session; reads allows what
                         the agent calls a read or a search and asks the rest
                         (the kind is the agent's word: plan is the
                         host-enforced read-only)
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
  --json                 JSON lines on stdout: one per event, a result per turn;
                         a permission answered without asking adds a
                         permission_decision line (decidedBy, rule)
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
                         dropped link leave nothing running there
  --ssh-identity FILE    a private key to log in with (repeatable; default:
                         the keys of the ssh-agent at SSH_AUTH_SOCK)
  --ssh-known-hosts FILE verify HOST's key with FILE (default:
                         ~/.ssh/known_hosts); an unknown host is refused
  --ssh-insecure         accept any host key
  --url ws://HOST:PORT/acp
                         reach an agent served over WebSocket (acphost serve,
                         a sandbox); needs --cwd, a directory there
  --token-file FILE      the bearer token for --url, from FILE (yours only;
                         "-": stdin; default: $ACPHOST_TOKEN); --token T
                         puts it where every local user sees it (ps)
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
  --token-file gives it; beyond loopback, give it
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
                       "mcpServers": [...]}}}
mcpServers (ACP McpServer objects, or {"NAME": {...}} as --mcp-config) come
from the defaults, then the agent, then --mcp-config; permissionPolicy is
relative to the config file.

Ctrl-C cancels the running turn; a second one, or one between turns, quits.
Exit status: 0 every turn ended, 1 the agent failed or a turn timed out,
2 bad usage, 130 quit by Ctrl-C, 143 by SIGTERM.
`

// repeated is a repeatable flag: -p/--prompt, --writable.
type repeated []string

func (p *repeated) String() string { return strings.Join(*p, "\n") }
func (p *repeated) Set(s string) error {
	*p = append(*p, s)
	return nil
}

func main() {
	fakeagent.Main() // the built-in agent is this executable, re-executed
	// A background acphost knows itself by this mark; what it runs must
	// not inherit it (an acphost the agent's tools start is no background one).
	detached = os.Getenv(envDetached) != ""
	os.Unsetenv(envDetached)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "serve":
			return serve(args[1:], os.Stdout, os.Stderr)
		case "web":
			return webMain(args[1:], os.Stdout, os.Stderr)
		case "version":
			printVersion(os.Stdout)
			return exitOK
		case "agents":
			return listAgents(args[1:], os.Stdout, os.Stderr)
		case "sessions":
			return sessionsCmd(args[1:], os.Stdout, os.Stderr)
		case "cancel":
			return cancelCmd(args[1:], os.Stdout, os.Stderr)
		case "login":
			return loginCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
		case "logout":
			return logoutCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
		}
	}
	cfg, err := parseArgs(args, os.Stderr, tty.IsTerminal(os.Stdin))
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(os.Stdout, usageText) // acphost --help | less
		return exitOK
	case errors.Is(err, errVersion):
		printVersion(os.Stdout)
		return exitOK
	case isInstallFailure(err): // a registry agent's download: no usage error
		fmt.Fprintln(os.Stderr, "acphost:", err)
		return exitFailed
	case err != nil:
		fmt.Fprintln(os.Stderr, "acphost:", err)
		fmt.Fprintln(os.Stderr, "Run 'acphost --help' for usage.")
		return exitUsage
	}
	if cfg.noWait {
		return noWait(cfg, os.Stdout, os.Stderr)
	}
	return newApp(cfg, os.Stdin, os.Stdout, os.Stderr).run()
}

// errVersion is parseArgs' answer to --version.
var errVersion = errors.New("version asked")

// printVersion prints the command's version (the module version it was
// built from, when Go recorded one), the library's and the protocol's.
func printVersion(w io.Writer) {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(w, "acphost %s (library %s, ACP protocol version %d, %s)\n", v, acphost.Version, acphost.ProtocolVersion, runtime.Version())
}

// flagError rewords the flag package's errors for the long flags people
// type: "-bogus" becomes "--bogus", "provided but not defined" becomes
// "unknown flag".
func flagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag %s", dashes(name))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag %s needs a value", dashes(name))
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		// invalid value "soon" for flag -timeout: parse error
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			value := rest[:i]
			name, why, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			return fmt.Errorf("%s %s: %s", dashes(name), value, why)
		}
	}
	return err
}

// dashes spells a flag as typed: -p, --prompt.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// parseArgs parses and checks the command line. stdinTerminal picks the
// default permission policy.
func parseArgs(args []string, stderr io.Writer, stdinTerminal bool) (config, error) {
	var cfg config
	var prompts, writable, elicitValues, identities, sets repeated
	fs := flag.NewFlagSet("acphost", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports the error, once
	var version bool
	fs.BoolVar(&version, "version", false, "print the version and exit")
	fs.Var(&prompts, "p", "a turn's `prompt` (repeatable; short for --prompt)")
	fs.Var(&prompts, "prompt", "a turn's `prompt` (repeatable); without one, prompts are read from stdin")
	promptFromFile := &promptFile{prompts: &prompts, stdin: os.Stdin}
	fs.Var(promptFromFile, "f", "a `file` whose whole text is one turn's prompt (-: standard input; short for --file)")
	fs.Var(promptFromFile, "file", "a `file` whose whole text is one turn's prompt (-: standard input)")
	fs.StringVar(&cfg.permission, "permission", "", "permission `policy`: ask, allow, reject or plan (default: ask on a terminal, else reject)")
	fs.StringVar(&cfg.nonInteractive, "non-interactive-permissions", "", "with nobody to ask (stdin not a terminal, or --json): `deny` (reject-kind answer) or fail (end the turn, exit 1)")
	mcpConfigFlag(fs, &cfg)
	fs.StringVar(&cfg.policyPath, "permission-policy", "", "a JSON `file` of permission rules (first match wins; unmatched requests follow --permission)")
	fs.BoolVar(&cfg.quiet, "quiet", false, "only the agent's final answer text of each turn on stdout")
	fs.StringVar(&cfg.elicit, "elicit", "", "elicitation `policy`: ask, accept, decline or cancel (default: ask on a terminal without --json, else decline)")
	fs.Var(&elicitValues, "elicit-value", "with --elicit accept, the `name=value` of a form field (repeatable)")
	fs.BoolVar(&cfg.json, "json", false, "one JSON object per line per event on stdout, then a result line per turn")
	fs.StringVar(&cfg.cwd, "cwd", "", "the session's working `directory` (default: the current one)")
	fs.StringVar(&cfg.mode, "mode", "", "session mode `id` to set after the session opens")
	fs.Var(&sets, "set", "a session config option to set once the session opens, as `key=value` (repeatable; /config lists them)")
	fs.StringVar(&cfg.auth, "auth", "", "authenticate with the agent's `method` after initialize (acphost login lists them)")
	fs.BoolVar(&cfg.presentation, "presentation", false, "ask agents to attach their permission prompt text")
	fs.BoolVar(&cfg.fs, "fs", false, "serve file reads and writes inside --cwd")
	fs.DurationVar(&cfg.timeout, "timeout", 0, "cancel a turn that runs longer than this `duration` (0: no limit)")
	fs.StringVar(&cfg.stderrPath, "stderr", "", "write the agent's stderr to `file` (\"-\": to acphost's stderr)")
	fs.StringVar(&cfg.recordPath, "record", "", "record the wire (both directions, stderr) to `file` as NDJSON, for a bug report or a replayed test")
	fs.Var(&writable, "writable", "confine the agent (Linux): it may change files only beneath `dir` (repeatable)")
	fs.StringVar(&cfg.remote.ssh, "ssh", "", "run the agent on `[user@]host[:port]` over SSH")
	fs.Var(&identities, "ssh-identity", "a private key `file` for --ssh (repeatable; default: the ssh-agent)")
	fs.StringVar(&cfg.remote.sshKnownHosts, "ssh-known-hosts", "", "the known_hosts `file` that verifies the --ssh host (default: ~/.ssh/known_hosts)")
	fs.BoolVar(&cfg.remote.sshInsecure, "ssh-insecure", false, "accept any --ssh host key (anyone on the path can pose as the host)")
	fs.StringVar(&cfg.remote.url, "url", "", "reach an agent served over WebSocket at `ws://host:port/acp` (acphost serve)")
	fs.StringVar(&cfg.remote.token, "token", "", "the bearer `token` for --url, on the command line where every local user sees it (default: $ACPHOST_TOKEN)")
	fs.StringVar(&cfg.remote.tokenFile, "token-file", "", "read the bearer token for --url from `file`, which only you may read (\"-\": a line of stdin)")
	fs.StringVar(&cfg.agentName, "agent", "", "the named `agent` to run (acphost agents lists them)")
	fs.StringVar(&cfg.registry, "registry", "", "the ACP registry `file or URL` --agent looks in (default: $ACPHOST_REGISTRY, else the official one)")
	fs.DurationVar(&cfg.startTimeout, "start-timeout", defaultStartTimeout, "give up on an agent that has not started after this `duration`")
	fs.StringVar(&cfg.resume, "resume", "", "continue a recorded session: its `id` (or a unique prefix), or last")
	fs.BoolVar(&cfg.continueLast, "continue", false, "continue this agent's latest session in this directory, or start one when there is none")
	fs.BoolVar(&cfg.noStore, "no-store", false, "do not record the session in the session store")
	fs.BoolVar(&cfg.noWait, "no-wait", false, "with --resume and -p: queue the prompts in the acphost that has the session open (else one started in the background) and return at once")
	toolOutput := fmt.Sprint(defaultToolOutput)
	fs.StringVar(&toolOutput, "tool-output", toolOutput, "how many last `lines` of a tool's output to show (0: none, all: every line)")
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, flagError(err)
	}
	if version {
		return cfg, errVersion
	}
	if toolOutput == "all" {
		cfg.toolOutput = -1
	} else if n, err := strconv.Atoi(toolOutput); err == nil && n >= 0 {
		cfg.toolOutput = n
	} else {
		return cfg, fmt.Errorf("--tool-output %q: want a number of lines, or all", toolOutput)
	}
	cfg.prompts = prompts
	if cfg.noWait { // for the acphost it may start in the background
		cfg.args, cfg.flagEnd = args, len(args)-fs.NArg()
	}
	cfg.remote.sshIdentity = identities
	for _, dir := range writable {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return cfg, fmt.Errorf("--writable: %w", err)
		}
		cfg.writable = append(cfg.writable, abs)
	}
	if fs.NArg() > 0 {
		cfg.agent = fs.Args()
	}

	file, err := loadConfig()
	if err != nil {
		return cfg, err
	}
	file.useRegistry(cfg.registry, cfg.json, cfg.remote.ssh != "" || cfg.remote.url != "", stderr)
	cfg.file = file
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.sets, err = parseSets(sets); err != nil {
		return cfg, err
	}
	if err := applyFileDefaults(&cfg, file, set); err != nil {
		return cfg, err
	}
	if err := resolveAgent(&cfg, file); err != nil {
		return cfg, err
	}
	if err := applyMCPConfigs(&cfg); err != nil {
		return cfg, err
	}
	cfg.sets = addSoftSets(cfg.sets, file.Defaults.Config)

	switch cfg.nonInteractive {
	case "":
		cfg.nonInteractive = nonInteractiveDeny
	case nonInteractiveDeny, nonInteractiveFail:
	default:
		return cfg, fmt.Errorf("--non-interactive-permissions %q: want deny or fail", cfg.nonInteractive)
	}
	if cfg.quiet && cfg.json {
		return cfg, errors.New("--quiet and --json both choose what stdout shows; give one")
	}
	switch cfg.permission {
	case "":
		// Nobody can be asked when stdin is not a terminal, or stdout is
		// JSON for a program.
		cfg.permission, cfg.noOneToAsk = permReject, true
		if stdinTerminal && !cfg.json {
			cfg.permission, cfg.noOneToAsk = permAsk, false
		}
	case permAsk, permAllow, permReject, permPlan, permReads:
	default:
		return cfg, fmt.Errorf("--permission %q: want ask, reads, allow, reject or plan", cfg.permission)
	}
	if cfg.policyPath != "" {
		p, err := policy.Load(cfg.policyPath)
		if err != nil {
			return cfg, err
		}
		cfg.policy = p
	}
	if err := parseElicit(&cfg, elicitValues, stdinTerminal); err != nil {
		return cfg, err
	}
	if cfg.timeout < 0 {
		return cfg, fmt.Errorf("--timeout %v: must not be negative", cfg.timeout)
	}
	if cfg.startTimeout <= 0 {
		return cfg, fmt.Errorf("--start-timeout %v: must be positive", cfg.startTimeout)
	}
	if cfg.continueLast && (cfg.resume != "" || cfg.noStore || cfg.remote.remote()) {
		return cfg, errors.New("--continue finds the agent's latest session in the session store: it cannot be combined with --resume, --no-store, --ssh or --url")
	}
	if cfg.resume != "" && cfg.remote.remote() {
		return cfg, errors.New("--resume continues a session of a local agent; it cannot be combined with --ssh or --url")
	}
	if cfg.noWait && detached {
		cfg.noWait = false // the background acphost a --no-wait started
	}
	if cfg.noWait && (cfg.resume == "" || len(cfg.prompts) == 0) {
		return cfg, errors.New("--no-wait queues prompts in a session: it needs --resume ID|last and -p TEXT")
	}
	if cfg.noWait && cfg.noStore {
		return cfg, errors.New("--no-wait finds the session in the session store: it cannot be combined with --no-store")
	}
	for _, p := range cfg.prompts {
		if cfg.noWait && len(p) > control.MaxQueuedPrompt {
			return cfg, fmt.Errorf("--no-wait: a prompt of %d bytes is over the %d MiB a queued prompt may have", len(p), control.MaxQueuedPrompt>>20)
		}
	}
	if err := checkRemote(&cfg, stderr); err != nil {
		return cfg, err
	}
	if cfg.cwd != "" && cfg.remote.remote() {
		if !strings.HasPrefix(cfg.cwd, "/") {
			return cfg, fmt.Errorf("--cwd %s: with --ssh, an absolute directory on the remote host", cfg.cwd)
		}
	} else if cfg.cwd != "" {
		abs, err := filepath.Abs(cfg.cwd)
		if err != nil {
			return cfg, fmt.Errorf("--cwd: %w", err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return cfg, fmt.Errorf("--cwd: %w", err)
		}
		if !fi.IsDir() {
			return cfg, fmt.Errorf("--cwd %s: not a directory", abs)
		}
		cfg.cwd = abs
	}
	if len(cfg.agent) > 0 && cfg.agent[0] == "" {
		return cfg, errors.New("the agent command is empty")
	}
	return cfg, nil
}

// applyFileDefaults fills what no flag set from the config file's defaults.
func applyFileDefaults(cfg *config, file fileConfig, set map[string]bool) error {
	d := file.Defaults
	if cfg.permission == "" {
		cfg.permission = d.Permission
	}
	if cfg.elicit == "" {
		cfg.elicit = d.Elicit
	}
	if cfg.nonInteractive == "" {
		cfg.nonInteractive = d.NonInteractivePermissions
	}
	if cfg.policyPath == "" && d.PermissionPolicy != "" {
		cfg.policyPath = d.PermissionPolicy
		if !filepath.IsAbs(cfg.policyPath) && file.path != "" {
			cfg.policyPath = filepath.Join(filepath.Dir(file.path), cfg.policyPath)
		}
	}
	cfg.mcpServers = append(cfg.mcpServers, d.MCPServers...)
	if !set["timeout"] && d.Timeout != "" {
		cfg.timeout, _ = time.ParseDuration(d.Timeout) // checked by loadConfig
	}
	if !set["start-timeout"] && d.StartTimeout != "" {
		cfg.startTimeout, _ = time.ParseDuration(d.StartTimeout)
	}
	if !set["presentation"] && d.Presentation != nil {
		cfg.presentation = *d.Presentation
	}
	return nil
}

// resolveAgent turns --agent NAME (or the config file's default agent,
// when no agent is given) into a command.
func resolveAgent(cfg *config, file fileConfig) error {
	if cfg.agentName != "" && len(cfg.agent) > 0 {
		return errors.New("--agent and a command after -- both name the agent; give one")
	}
	if cfg.agentName == "" && len(cfg.agent) == 0 && cfg.resume == "" && cfg.remote.url == "" {
		cfg.agentName = file.Defaults.Agent
	}
	if cfg.agentName == "" || cfg.agentName == demoAgent {
		return nil
	}
	def, err := file.lookupAgent(cfg.agentName)
	if err != nil {
		return err
	}
	cfg.agent, cfg.agentEnv = def.Command, def.envList()
	cfg.profile = def.libProfile()
	cfg.mcpServers = mergeMCP(cfg.mcpServers, def.MCPServers)
	if cfg.mode == "" && def.Mode != "" {
		cfg.mode, cfg.modeSoft = def.Mode, true
	}
	cfg.sets = addSoftSets(cfg.sets, def.Config)
	if cfg.auth == "" {
		cfg.auth = def.Auth
	}
	return nil
}

// agentCommand returns the command line and extra environment of the
// agent: the one given, or this executable as the built-in fake agent.
func agentCommand(cfg config) (path string, args, env []string, err error) {
	if len(cfg.agent) > 0 {
		return cfg.agent[0], cfg.agent[1:], cfg.agentEnv, nil
	}
	script := fakeagent.Demo()
	// An id of each run's own: the store keys conversations by agent and
	// id, and every demo run would otherwise be session s1, one record.
	var id [4]byte
	rand.Read(id[:])
	script.SessionID = "demo-" + hex.EncodeToString(id[:])
	if s := os.Getenv(envDemoScript); s != "" {
		script = fakeagent.Script{}
		if err := json.Unmarshal([]byte(s), &script); err != nil {
			return "", nil, nil, fmt.Errorf("%s: %w", envDemoScript, err)
		}
	}
	return fakeagent.Command(script)
}

// parseElicit checks --elicit and --elicit-value; the default is ask on a
// terminal without --json, else decline.
func parseElicit(cfg *config, values []string, stdinTerminal bool) error {
	switch cfg.elicit {
	case "":
		cfg.elicit, cfg.elicitAuto = elicitDecline, true
		if stdinTerminal && !cfg.json {
			cfg.elicit, cfg.elicitAuto = elicitAsk, false
		}
	case elicitAsk, elicitAccept, elicitDecline, elicitCancel:
	default:
		return fmt.Errorf("--elicit %q: want ask, accept, decline or cancel", cfg.elicit)
	}
	for _, kv := range values {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return fmt.Errorf("--elicit-value %q: want name=value", kv)
		}
		if cfg.elicitValues == nil {
			cfg.elicitValues = map[string]string{}
		}
		cfg.elicitValues[name] = value
	}
	if cfg.elicitValues != nil && cfg.elicit != elicitAccept {
		return errors.New("--elicit-value needs --elicit accept")
	}
	return nil
}
