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
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/configopt"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/policy"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
	"github.com/acphost/acphost/fakeagent"
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

	// The ACP registry (package agents) and the named agent's profile.
	registry string                // --registry FILE|URL: the registry --agent looks in
	profile  *acphost.AgentProfile // nil: the library recognises the agent by its command

	nonInteractive string            // --non-interactive-permissions: deny or fail
	noOneToAsk     bool              // permission defaulted to reject: nobody can be asked
	policyPath     string            // --permission-policy, or the config file's
	policy         *policy.Policy    // the parsed policy file, nil without one
	mcpServers     agents.MCPList    // the config file's mcpServers (defaults, then the agent's), then --mcp-config's
	mcpConfigs     []string          // --mcp-config FILE (repeatable)
	quiet          bool              // --quiet: only the agent's final answer on stdout
	sets           []configopt.Set   // --set KEY=VALUE, then the config file's, to set once the session opens
	auth           string            // --auth METHOD, or the named agent's: sent with authenticate after initialize
	continueLast   bool              // --continue: the agent's last session in this directory, else a new one
	sessionName    string            // -s/--session NAME: this agent's session NAME here, started or continued
	worktree       worktreeFlag      // --worktree [NAME]: run the session in a new git worktree
	recordPath     string            // --record FILE: the wire, as NDJSON
	login          *loginRun         // acphost login: log in instead of chatting
	file           agents.FileConfig // the config file, read once, by parseArgs

	systemPrompt     *acp.SystemPrompt // --system-prompt(-file), else the config file's; nil: none
	systemPromptFrom string            // where systemPrompt came from, for messages
}

// defaultStartTimeout bounds the agent's start: generous, for a first npx
// download.
const defaultStartTimeout = 2 * time.Minute

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
			return agents.Command(args[1:], os.Stdout, os.Stderr)
		case "sessions":
			return sessions.Command(args[1:], os.Stdout, os.Stderr, sessionAgents())
		case "cancel":
			return sessions.Cancel(args[1:], os.Stdout, os.Stderr)
		case "login":
			return loginCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
		case "logout":
			return logoutCmd(args[1:], os.Stdin, os.Stdout, os.Stderr)
		}
	}
	cfg, err := parseArgs(args, os.Stderr, tty.IsTerminal(os.Stdin))
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(os.Stdout, usage.Text) // acphost --help | less
		return exitOK
	case errors.Is(err, errVersion):
		printVersion(os.Stdout)
		return exitOK
	case agents.IsInstallFailure(err): // a registry agent's download: no usage error
		fmt.Fprintln(os.Stderr, "acphost:", err)
		if next := agents.InstallNextStep(err); next != "" {
			fmt.Fprintln(os.Stderr, "acphost: "+next)
		}
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

// The package doc (doc.go) is generated from the help text.
//
//go:generate go test -run=^TestDocsUpToDate$ -fixdocs

// errVersion is parseArgs' answer to --version.
var errVersion = errors.New("version asked")

// printVersion prints the command's version (the module version it was
// built from, when Go recorded one), the library's and the protocol's.
func printVersion(w io.Writer) {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	fmt.Fprintf(w, "acphost %s (library %s, ACP protocol version %d, %s)\n", v, acphost.Version, acp.ProtocolVersion, runtime.Version())
}

// flagValues holds what the flags set that goes to config only after
// checks (parseArgs).
type flagValues struct {
	prompts, writable, elicitValues, identities, sets repeated
	version                                           bool
	toolOutput                                        string
	systemPrompt                                      systemPromptFlags
}

// mainFlags is acphost's flag set, setting cfg and v. Each flag's usage
// is the help text's description of it (usage.FlagHelp): usage.Text is the one
// flag reference.
func mainFlags(cfg *config) (*flag.FlagSet, *flagValues) {
	v := &flagValues{}
	fs := flag.NewFlagSet("acphost", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports the error, once
	fs.BoolVar(&v.version, "version", false, usage.FlagHelp("version"))
	fs.Var(&v.prompts, "p", usage.FlagHelp("p"))
	fs.Var(&v.prompts, "prompt", usage.FlagHelp("prompt"))
	promptFromFile := &promptFile{prompts: &v.prompts, stdin: os.Stdin}
	fs.Var(promptFromFile, "f", usage.FlagHelp("f"))
	fs.Var(promptFromFile, "file", usage.FlagHelp("file"))
	fs.StringVar(&cfg.permission, "permission", "", usage.FlagHelp("permission"))
	fs.StringVar(&cfg.nonInteractive, "non-interactive-permissions", "", usage.FlagHelp("non-interactive-permissions"))
	mcpConfigFlag(fs, cfg)
	fs.StringVar(&cfg.policyPath, "permission-policy", "", usage.FlagHelp("permission-policy"))
	fs.BoolVar(&cfg.quiet, "quiet", false, usage.FlagHelp("quiet"))
	fs.StringVar(&cfg.elicit, "elicit", "", usage.FlagHelp("elicit"))
	fs.Var(&v.elicitValues, "elicit-value", usage.FlagHelp("elicit-value"))
	fs.BoolVar(&cfg.json, "json", false, usage.FlagHelp("json"))
	fs.StringVar(&cfg.cwd, "cwd", "", usage.FlagHelp("cwd"))
	fs.StringVar(&cfg.mode, "mode", "", usage.FlagHelp("mode"))
	fs.Var(&v.sets, "set", usage.FlagHelp("set"))
	fs.StringVar(&cfg.auth, "auth", "", usage.FlagHelp("auth"))
	v.systemPrompt.register(fs, usage.FlagHelp)
	fs.BoolVar(&cfg.presentation, "presentation", false, usage.FlagHelp("presentation"))
	fs.BoolVar(&cfg.fs, "fs", false, usage.FlagHelp("fs"))
	fs.DurationVar(&cfg.timeout, "timeout", 0, usage.FlagHelp("timeout"))
	fs.StringVar(&cfg.stderrPath, "stderr", "", usage.FlagHelp("stderr"))
	fs.StringVar(&cfg.recordPath, "record", "", usage.FlagHelp("record"))
	fs.Var(&v.writable, "writable", usage.FlagHelp("writable"))
	fs.StringVar(&cfg.remote.ssh, "ssh", "", usage.FlagHelp("ssh"))
	fs.Var(&v.identities, "ssh-identity", usage.FlagHelp("ssh-identity"))
	fs.StringVar(&cfg.remote.sshKnownHosts, "ssh-known-hosts", "", usage.FlagHelp("ssh-known-hosts"))
	fs.BoolVar(&cfg.remote.sshInsecure, "ssh-insecure", false, usage.FlagHelp("ssh-insecure"))
	fs.StringVar(&cfg.remote.url, "url", "", usage.FlagHelp("url"))
	fs.StringVar(&cfg.remote.token, "token", "", usage.FlagHelp("token"))
	fs.StringVar(&cfg.remote.tokenFile, "token-file", "", usage.FlagHelp("token-file"))
	kubeFlags(fs, &cfg.remote.kube)
	fs.StringVar(&cfg.agentName, "agent", "", usage.FlagHelp("agent"))
	fs.StringVar(&cfg.registry, "registry", "", usage.FlagHelp("registry"))
	fs.DurationVar(&cfg.startTimeout, "start-timeout", defaultStartTimeout, usage.FlagHelp("start-timeout"))
	fs.StringVar(&cfg.resume, "resume", "", usage.FlagHelp("resume"))
	fs.BoolVar(&cfg.continueLast, "continue", false, usage.FlagHelp("continue"))
	fs.StringVar(&cfg.sessionName, "s", "", usage.FlagHelp("s"))
	fs.StringVar(&cfg.sessionName, "session", "", usage.FlagHelp("session"))
	fs.Var(&cfg.worktree, "worktree", usage.FlagHelp("worktree"))
	fs.BoolVar(&cfg.noStore, "no-store", false, usage.FlagHelp("no-store"))
	fs.BoolVar(&cfg.noWait, "no-wait", false, usage.FlagHelp("no-wait"))
	v.toolOutput = fmt.Sprint(render.DefaultToolOutput)
	fs.StringVar(&v.toolOutput, "tool-output", v.toolOutput, usage.FlagHelp("tool-output"))
	return fs, v
}

// parseArgs parses and checks the command line. stdinTerminal picks the
// default permission policy.
func parseArgs(args []string, stderr io.Writer, stdinTerminal bool) (config, error) {
	var cfg config
	fs, v := mainFlags(&cfg)
	fs.Usage = func() {}
	args = worktreeValue(args)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, usage.FlagError(err)
	}
	if v.version {
		return cfg, errVersion
	}
	if v.toolOutput == "all" {
		cfg.toolOutput = -1
	} else if n, err := strconv.Atoi(v.toolOutput); err == nil && n >= 0 {
		cfg.toolOutput = n
	} else {
		return cfg, fmt.Errorf("--tool-output %q: want a number of lines, or all", v.toolOutput)
	}
	cfg.prompts = v.prompts
	if cfg.noWait { // for the acphost it may start in the background
		cfg.args, cfg.flagEnd = args, len(args)-fs.NArg()
	}
	cfg.remote.sshIdentity = v.identities
	for _, dir := range v.writable {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return cfg, fmt.Errorf("--writable: %w", err)
		}
		cfg.writable = append(cfg.writable, abs)
	}
	if fs.NArg() > 0 {
		cfg.agent = fs.Args()
	}

	file, err := agents.Load()
	if err != nil {
		return cfg, err
	}
	file.UseRegistry(cfg.registry, cfg.json, cfg.remote.remote(), stderr)
	cfg.file = file
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if cfg.sets, err = configopt.ParseSets(v.sets); err != nil {
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
	if err := resolveSystemPrompt(&cfg, v.systemPrompt, file); err != nil {
		return cfg, err
	}
	cfg.sets = configopt.AddSoft(cfg.sets, file.Defaults.Config)

	switch cfg.nonInteractive {
	case "":
		cfg.nonInteractive = ask.NonInteractiveDeny
	case ask.NonInteractiveDeny, ask.NonInteractiveFail:
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
		cfg.permission, cfg.noOneToAsk = ask.PermReject, true
		if stdinTerminal && !cfg.json {
			cfg.permission, cfg.noOneToAsk = ask.PermAsk, false
		}
	case ask.PermAsk, ask.PermAllow, ask.PermReject, ask.PermPlan, ask.PermReads:
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
	if err := parseElicit(&cfg, v.elicitValues, stdinTerminal); err != nil {
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
	if err := checkNamed(&cfg); err != nil {
		return cfg, err
	}
	if cfg.resume != "" && cfg.remote.remote() {
		return cfg, errors.New("--resume continues a session of a local agent; it cannot be combined with --ssh or --url")
	}
	if cfg.noWait && detached {
		cfg.noWait = false // the background acphost a --no-wait started
	}
	if cfg.noWait && (cfg.resume == "" && cfg.sessionName == "" || len(cfg.prompts) == 0) {
		return cfg, errors.New("--no-wait queues prompts in a session: it needs --resume ID|last (or -s NAME) and -p TEXT")
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
func applyFileDefaults(cfg *config, file agents.FileConfig, set map[string]bool) error {
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
		if !filepath.IsAbs(cfg.policyPath) && file.Path() != "" {
			cfg.policyPath = filepath.Join(filepath.Dir(file.Path()), cfg.policyPath)
		}
	}
	cfg.mcpServers = append(cfg.mcpServers, d.MCPServers...)
	if !set["timeout"] && d.Timeout != "" {
		cfg.timeout, _ = time.ParseDuration(d.Timeout) // checked by agents.Load
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
func resolveAgent(cfg *config, file agents.FileConfig) error {
	if cfg.agentName != "" && len(cfg.agent) > 0 {
		return errors.New("--agent and a command after -- both name the agent; give one")
	}
	if cfg.agentName == "" && len(cfg.agent) == 0 && cfg.resume == "" && cfg.remote.url == "" {
		cfg.agentName = file.Defaults.Agent
	}
	if cfg.agentName == "" || cfg.agentName == agents.Demo {
		return nil
	}
	def, err := file.Lookup(cfg.agentName)
	if err != nil {
		return err
	}
	cfg.agent, cfg.agentEnv = def.Command, def.EnvList()
	if def.Kube != nil && !cfg.remote.remote() {
		cfg.remote.kube = state.KubePlace(*def.Kube)
	}
	cfg.profile = def.LibProfile()
	cfg.mcpServers = agents.MergeMCP(cfg.mcpServers, def.MCPServers)
	if cfg.mode == "" && def.Mode != "" {
		cfg.mode, cfg.modeSoft = def.Mode, true
	}
	cfg.sets = configopt.AddSoft(cfg.sets, def.Config)
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
	demoRemembers(&script, cfg.noStore)
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
		cfg.elicit, cfg.elicitAuto = ask.ElicitDecline, true
		if stdinTerminal && !cfg.json {
			cfg.elicit, cfg.elicitAuto = ask.ElicitAsk, false
		}
	case ask.ElicitAsk, ask.ElicitAccept, ask.ElicitDecline, ask.ElicitCancel:
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
	if cfg.elicitValues != nil && cfg.elicit != ask.ElicitAccept {
		return errors.New("--elicit-value needs --elicit accept")
	}
	return nil
}
