package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/ask"
	"github.com/acphost/acphost/cmd/acphost/internal/configopt"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
	"github.com/acphost/acphost/cmd/acphost/internal/worktree"
	"github.com/acphost/acphost/internal/confine"
	"github.com/acphost/acphost/web"
)

const webUsage = `Usage: acphost web [flags] [--agent NAME | -- AGENT [ARGS...]]

Serves a browser UI for AGENT (default: the config file's default agent,
else the built-in demo agent): a live transcript, approval dialogs, editable
write proposals (with --fs), a stop button, plan mode, the agent's modes and
config options, and the sessions of the session store this command shares
with the terminal host (new, list, resume; in a git repository, a new
session in a worktree of its own, as --worktree makes, except with --fs).
It prints the URL to open, its
token in the fragment (http://127.0.0.1:PORT/#token=…: no server or log
sees it; the page keeps it for the tab), and serves until SIGINT or
SIGTERM.

Flags:
`

// webFlags is the parsed command line of acphost web: the terminal host's
// config (agent, cwd, mode, timeouts, confinement) and the server's own.
type webFlags struct {
	cfg    config
	listen string
	public bool
	hosts  []string
	// kubeDir is --cwd with --kube-image or --kube-warm-pool: the
	// session's directory in the pod.
	kubeDir string
}

// errFlagParse wraps the flag package's errors, which it has printed.
var errFlagParse = errors.New("bad flags")

// parseWebArgs parses acphost web's command line, with the config file's
// defaults and named agents, as parseArgs does for the terminal host.
func parseWebArgs(args []string, stderr io.Writer) (webFlags, error) {
	var wf webFlags
	cfg := &wf.cfg
	var writable repeated
	fl := flag.NewFlagSet("acphost web", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.StringVar(&wf.listen, "listen", "127.0.0.1:0", "the `address` to listen on (loopback unless --public)")
	fl.BoolVar(&wf.public, "public", false, "allow a --listen address beyond loopback (the token is still required: serve it behind TLS)")
	fl.Func("host", "a host `name` the page is reached by beyond loopback (repeatable; IP addresses and localhost are always accepted)", func(s string) error {
		wf.hosts = append(wf.hosts, s)
		return nil
	})
	fl.StringVar(&cfg.agentName, "agent", "", "the named `agent` to run (acphost agents lists them)")
	fl.StringVar(&cfg.cwd, "cwd", "", "the session's working `directory` (default: the current one)")
	fl.BoolVar(&cfg.fs, "fs", false, "serve file reads and writes inside --cwd; each write is a proposal to apply, amend or deny in the page")
	fl.BoolVar(&cfg.presentation, "presentation", false, "ask agents to attach their permission prompt text")
	fl.StringVar(&cfg.permission, "permission", "", "permission `policy`: ask (a dialog in the page; \"always\" answers remembered), reads (what the agent calls a read or search allowed, the rest asked), allow, reject or plan (default: ask)")
	fl.StringVar(&cfg.mode, "mode", "", "session mode `id` to ask for on each session opened")
	mcpConfigFlag(fl, cfg)
	var sets repeated
	fl.Var(&sets, "set", "a session config option to set on each session opened, as `key=value` (repeatable)")
	fl.StringVar(&cfg.auth, "auth", "", "authenticate with the agent's `method` after initialize (acphost login lists them)")
	var sp systemPromptFlags
	sp.register(fl, webSystemPromptHelp)
	fl.DurationVar(&cfg.timeout, "timeout", 0, "cancel a turn that runs longer than this `duration` (0: no limit)")
	fl.DurationVar(&cfg.startTimeout, "start-timeout", defaultStartTimeout, "give up on an agent that has not started after this `duration`")
	fl.StringVar(&cfg.stderrPath, "stderr", "", "write the agent's stderr to `file` (\"-\": to acphost's stderr)")
	fl.Var(&writable, "writable", "confine the agent (Linux): it may change files only beneath `dir` (repeatable)")
	fl.StringVar(&cfg.resume, "resume", "", "open a recorded session at start: its `id` (or a unique prefix), or last (the page lists the others)")
	fl.BoolVar(&cfg.noStore, "no-store", false, "do not record sessions in the session store, nor list them")
	kubeFlags(fl, &cfg.remote.kube)
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), webUsage)
		usage.PrintFlags(fl.Output(), fl)
	}
	if err := fl.Parse(args); err != nil {
		return wf, fmt.Errorf("%w: %w", errFlagParse, err)
	}
	if fl.NArg() > 0 {
		cfg.agent = fl.Args()
		if cfg.agent[0] == "" {
			return wf, errors.New("the agent command is empty")
		}
	}
	for _, dir := range writable {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return wf, fmt.Errorf("--writable: %w", err)
		}
		cfg.writable = append(cfg.writable, abs)
	}
	if cfg.remote.kube.Set() {
		// --cwd names a directory in the pod; the session store's records
		// are still this directory's.
		wf.kubeDir, cfg.cwd = cfg.cwd, ""
	}
	dir := cfg.cwd
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(dir); err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s: not a directory", dir)
		}
	}
	if err != nil {
		return wf, fmt.Errorf("--cwd: %w", err)
	}
	cfg.cwd = dir

	if cfg.sets, err = configopt.ParseSets(sets); err != nil {
		return wf, err
	}
	file, err := agents.Load()
	if err != nil {
		return wf, err
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := applyFileDefaults(cfg, file, set); err != nil {
		return wf, err
	}
	if cfg.resume != "" && cfg.agentName == "" && len(cfg.agent) == 0 {
		if err := resumeAgent(cfg, file); err != nil {
			return wf, err
		}
	}
	if err := resolveAgent(cfg, file); err != nil {
		return wf, err
	}
	if cfg.remote.kube.Set() {
		inPod := *cfg
		inPod.cwd = wf.kubeDir
		if err := checkKube(&inPod); err != nil {
			return wf, err
		}
	}
	if err := applyMCPConfigs(cfg); err != nil {
		return wf, err
	}
	if err := resolveSystemPrompt(cfg, sp, file); err != nil {
		return wf, err
	}
	cfg.sets = configopt.AddSoft(cfg.sets, file.Defaults.Config)
	switch cfg.permission {
	case "":
		cfg.permission = ask.PermAsk
	case ask.PermAsk, ask.PermAllow, ask.PermReject, ask.PermPlan, ask.PermReads:
	default:
		return wf, fmt.Errorf("--permission %q: want ask, reads, allow, reject or plan", cfg.permission)
	}
	if cfg.timeout < 0 {
		return wf, fmt.Errorf("--timeout %v: must not be negative", cfg.timeout)
	}
	if cfg.startTimeout <= 0 {
		return wf, fmt.Errorf("--start-timeout %v: must be positive", cfg.startTimeout)
	}
	if cfg.resume != "" && cfg.noStore {
		return wf, errors.New("--resume needs the session store, which --no-store turns off")
	}
	return wf, nil
}

// resumeAgent takes the agent of the session --resume names, as the
// terminal host does, when no agent was given.
func resumeAgent(cfg *config, file agents.FileConfig) error {
	st, err := state.Open()
	if err != nil {
		return err
	}
	r, err := st.Lookup(cfg.resume, cfg.cwd)
	if err != nil {
		return fmt.Errorf("--resume %s: %w", cfg.resume, err)
	}
	switch r.Agent {
	case "":
		cfg.agent = r.Command
	case agents.Demo:
	default:
		if _, err := file.Lookup(r.Agent); err != nil {
			return fmt.Errorf("--resume %s: %w", cfg.resume, err)
		}
		cfg.agentName = r.Agent
	}
	cfg.resume = r.ID
	return nil
}

// webStore is the session store as package web sees it: the records of
// this agent started in this directory (in it, or in a worktree made
// from it), written as the terminal host writes them.
type webStore struct {
	st      *state.Store
	agent   string   // as state.Record.Agent
	command []string // as state.Record.Command
	cwd     string
	made    *madeWorktrees // the worktrees the page's sessions were given
}

// madeWorktrees are the worktrees this server made, by directory, for
// the records of their sessions.
type madeWorktrees struct {
	mu sync.Mutex
	m  map[string]worktree.Worktree
}

func (m *madeWorktrees) add(w worktree.Worktree) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]worktree.Worktree{}
	}
	m.m[w.Path] = w
}

func (m *madeWorktrees) get(path string) (worktree.Worktree, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.m[path]
	return w, ok
}

func newWebStore(st *state.Store, cfg config) webStore {
	w := webStore{st: st, cwd: cfg.cwd, made: &madeWorktrees{}}
	w.agent, w.command = recordAgent(cfg)
	return w
}

func (w webStore) mine(r state.Record) bool {
	return r.StartedIn(w.cwd) && r.Same(state.Record{ID: r.ID, Agent: w.agent, Command: w.command})
}

func (w webStore) List() ([]web.SessionRecord, error) {
	recs, err := w.st.List()
	var out []web.SessionRecord
	for _, r := range recs {
		if w.mine(r) {
			wr := web.SessionRecord{ID: r.ID, Cwd: r.Cwd, Title: r.Title, Mode: r.Mode, LastUsed: r.LastUsed}
			if r.Worktree != nil {
				wr.Worktree = &web.Worktree{Dir: r.Cwd, Path: r.Worktree.Path, Branch: r.Worktree.Branch}
			}
			out = append(out, wr)
		}
	}
	return out, err
}

// Put records a session the page used: in --cwd, or in a worktree (its
// record names the worktree as the terminal's --worktree does, so that
// acphost sessions rm removes it).
func (w webStore) Put(r web.SessionRecord) error {
	rec := state.Record{ID: r.ID, Agent: w.agent, Command: w.command, Cwd: w.cwd, Title: r.Title, Mode: r.Mode,
		Created: r.LastUsed, LastUsed: r.LastUsed}
	if r.Worktree != nil {
		rec.Cwd = r.Worktree.Dir
		if m, ok := w.made.get(r.Worktree.Path); ok { // else recorded already: Put keeps it
			rec.Worktree = &state.Worktree{Path: m.Path, Branch: m.Branch, Base: m.Base, Repo: m.Repo, From: w.cwd}
		}
	}
	return w.st.Put(rec)
}

// webWorktrees offers the page a worktree per session (web.Config.Worktree)
// when --cwd is in a git work tree, the sessions are recorded (the record
// is what acphost sessions rm removes a worktree by) and the agent runs on
// this machine. It says on stderr why a repository's worktrees are not
// offered: with --fs (the host's file service serves the files beneath
// --cwd, opened once for every session: a worktree beside the repository
// is outside it), and with --writable dirs that do not hold the
// worktrees' directory (the agent could not write in its worktree).
func webWorktrees(ctx context.Context, cfg config, store webStore, stderr io.Writer) *web.WorktreeHooks {
	if cfg.remote.kube.Set() {
		return nil
	}
	repo, err := worktree.Repo(ctx, cfg.cwd)
	if err != nil {
		return nil // not a repository: nothing to offer, nothing to say
	}
	if cfg.fs {
		fmt.Fprintln(stderr, "acphost web: the page offers no worktrees with --fs (the host serves files beneath --cwd only; acphost --worktree in a terminal does)")
		return nil
	}
	place, err := worktree.Place(ctx, repo)
	if err != nil {
		fmt.Fprintln(stderr, "acphost web: the page offers no worktrees:", err)
		return nil
	}
	if len(cfg.writable) > 0 && !slices.ContainsFunc(cfg.writable, func(dir string) bool { return confine.Within(confine.Resolve(dir), confine.Resolve(place)) }) {
		fmt.Fprintf(stderr, "acphost web: the page offers no worktrees: --writable does not hold %s, where they go\n", place)
		return nil
	}
	return &web.WorktreeHooks{
		Make: func(ctx context.Context, name string) (web.Worktree, error) {
			if name == "" {
				name = worktree.DefaultName("")
			}
			w, err := worktree.Create(ctx, cfg.cwd, name)
			if err != nil {
				return web.Worktree{}, err
			}
			store.made.add(w)
			return web.Worktree{Dir: w.Dir, Path: w.Path, Branch: w.Branch}, nil
		},
		Discard: func(ctx context.Context, ww web.Worktree) {
			w, ok := store.made.get(ww.Path)
			if !ok {
				return
			}
			if _, err := worktree.Remove(ctx, w.Repo, w.Path, w.Branch, w.Base); err != nil {
				fmt.Fprintf(stderr, "acphost web: the worktree %s was left: %v\n", acp.SafeText(w.Path), err)
			}
		},
	}
}

// webMain is "acphost web": one agent served to a browser until SIGINT or
// SIGTERM. Exit status: 0 after a signal, 1 when the agent or the listener
// failed, 2 on bad usage.
func webMain(args []string, stdout, stderr io.Writer) int {
	const ok, failed, usage = 0, 1, 2
	wf, err := parseWebArgs(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return ok
	case err != nil:
		if !errors.Is(err, errFlagParse) { // the flag package printed its own
			fmt.Fprintln(stderr, "acphost web:", err)
		}
		return usage
	}
	cfg := wf.cfg
	path, agentArgs, env, err := agentCommand(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "acphost web:", err)
		return usage
	}
	opts := acphost.ACPOptions{Command: path, Args: agentArgs, Dir: cfg.cwd,
		AuthMethod: cfg.auth, MCPServers: cfg.mcpServers, SystemPrompt: cfg.systemPrompt, Unstable: true,
		Process:   acphost.ProcessOptions{Env: env},
		Advertise: acphost.AdvertiseOptions{PermissionPresentation: cfg.presentation, Notices: true},
		Timeouts:  acphost.Timeouts{TurnTimeout: cfg.timeout},
	}
	if cfg.fs {
		opts.FS = &acphost.FSOptions{Read: true, Write: true}
	}
	opts.Process.Confine = confinement(cfg, cfg.cwd)
	if cfg.remote.kube.Set() {
		// The agent runs in a pod: the page's sessions are in its
		// directory there (--cwd, else the container's own).
		kt := kubeTransport(cfg)
		defer kt.Close() // after the server and its client, below
		opts.Transport, opts.Command, opts.Args, opts.Process.Env = kt, "", nil, nil
		opts.Dir = kubeDir(wf.kubeDir)
	}
	opts.RequireAsking = cfg.permission != ask.PermAllow
	switch cfg.stderrPath {
	case "":
	case "-":
		opts.Process.Stderr = stderr
	default:
		f, err := state.OpenOutput(cfg.stderrPath, true)
		if err != nil {
			fmt.Fprintln(stderr, "acphost web: --stderr:", err)
			return usage
		}
		defer f.Close()
		opts.Process.Stderr = f
	}
	wcfg := web.Config{Hosts: wf.hosts, Mode: cfg.mode, PermissionLabel: cfg.permission}
	for _, set := range cfg.sets {
		if wcfg.ConfigOptions == nil {
			wcfg.ConfigOptions = map[string]string{}
		}
		wcfg.ConfigOptions[set.Key] = set.Value
	}
	switch cfg.permission {
	case ask.PermAsk:
		// As in the terminal: an "always" answer holds for the same tool
		// kind and title for the rest of the session.
		wcfg.Permission = func(page acphost.PermissionFunc) acphost.PermissionFunc { return acphost.Remember(page) }
		wcfg.PermissionLabel = ""
	case ask.PermAllow:
		wcfg.Permission = func(acphost.PermissionFunc) acphost.PermissionFunc { return acphost.AllowAll() }
	case ask.PermReject:
		wcfg.Permission = func(acphost.PermissionFunc) acphost.PermissionFunc { return acphost.RejectAll() }
	case ask.PermReads:
		wcfg.Permission = func(page acphost.PermissionFunc) acphost.PermissionFunc {
			return ask.AllowingReads(acphost.Remember(page))
		}
	case ask.PermPlan:
		opts.PlanMode = true // reads are still asked in the page
	}
	if !cfg.noStore {
		if st, err := state.Open(); err == nil {
			ws := newWebStore(st, cfg)
			wcfg.Sessions = ws
			wctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
			wcfg.Worktree = webWorktrees(wctx, cfg, ws, stderr)
			cancel()
		} else {
			fmt.Fprintf(stderr, "acphost web: %v; sessions are not recorded\n", err)
		}
	}

	ln, err := net.Listen("tcp", wf.listen)
	if err != nil {
		fmt.Fprintln(stderr, "acphost web:", err)
		return failed
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp == nil || (!tcp.IP.IsLoopback() && !wf.public) {
		ln.Close()
		fmt.Fprintf(stderr, "acphost web: %s is beyond loopback: add --public to serve it there (the token is still required)\n", wf.listen)
		return usage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.Debug.Logger = logger
	tel := startTelemetry(warnTo(stderr, "acphost web"), nil)
	defer tel.shutdown()
	tel.instrument(&opts)
	wcfg.Agent, wcfg.Logger = opts, logger
	if len(cfg.agent) > 0 && filepath.Base(cfg.agent[0]) == "npx" {
		fmt.Fprintf(stderr, "acphost web: starting agent %s (npx %s; the first run downloads it)…\n", agentName(cfg), strings.Join(cfg.agent[1:], " "))
	}
	startCtx, cancelStart := context.WithTimeout(ctx, cfg.startTimeout)
	srv, err := web.New(startCtx, wcfg)
	if err == nil && cfg.mode != "" && !cfg.modeSoft {
		if modes := srv.Client().Session().Modes(); !slices.ContainsFunc(modes.AvailableModes, func(m acp.SessionMode) bool { return m.ID == cfg.mode }) {
			err = fmt.Errorf("--mode %s: the agent has no such mode; its modes: %s", acp.SafeText(cfg.mode), modeList(modes))
			srv.Close()
			srv = nil
		}
	}
	if err == nil && cfg.resume != "" {
		if err = srv.ResumeSession(startCtx, cfg.resume); err != nil {
			err = fmt.Errorf("--resume %s: %w", acp.SafeText(cfg.resume), err)
			srv.Close()
			srv = nil
		}
	}
	cancelStart()
	if err != nil {
		ln.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(stderr, "acphost web: the agent did not start within %v (--start-timeout)\n", cfg.startTimeout)
		} else {
			fmt.Fprintln(stderr, "acphost web:", tty.ErrMsg(err))
		}
		if ae := (*acphost.AuthError)(nil); errors.As(err, &ae) {
			fmt.Fprintln(stderr, "acphost web: the agent needs a login first: acphost login, with the same agent flags, lists its methods")
		}
		if me := (*acphost.MCPServerError)(nil); errors.As(err, &me) {
			return usage // the configuration asks what the agent cannot do
		}
		if hint := systemPromptHint(cfg, err); hint != "" {
			fmt.Fprintln(stderr, "acphost web:", hint)
			return usage // likewise
		}
		return failed
	}
	defer tel.observe(srv.Client())()
	// Timeouts, and a cap on connections without the token (web.Serve).
	served := make(chan error, 1)
	go func() { served <- web.Serve(ctx, ln, srv) }()

	host := tcp.String()
	if tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	fmt.Fprintln(stdout, srv.URL("http://"+host+"/"))
	if tcp.IP.IsUnspecified() {
		fmt.Fprintf(stderr, "acphost web: listening on every interface (%s): from elsewhere use this machine's address; anyone with the URL drives the agent\n", tcp)
	}

	// web.Serve returns once ctx ends (the server closed first: the
	// running turn cancelled, the event streams ended; then the listener
	// and idle connections), or when serving failed.
	if err := <-served; err != nil {
		if ctx.Err() == nil {
			fmt.Fprintln(stderr, "acphost web:", err)
			return failed
		}
		fmt.Fprintln(stderr, "acphost web: agent:", err)
	}
	return ok
}

// RecordTurn keeps a page's finished turn in the session's transcript, as
// the terminal does (acphost sessions history shows it).
func (w webStore) RecordTurn(sessionID string, t web.TurnRecord) error {
	r := render.TurnResult{Resp: t.Response, Err: t.Err, Elapsed: t.Duration, Stop: t.Response.StopReason}
	if errors.Is(t.Err, context.Canceled) { // the page's stop button
		r.Stop, r.UserCancel = acp.StopCancelled, true
	}
	rec := state.Record{ID: sessionID, Agent: w.agent, Command: w.command, Cwd: w.cwd}
	return w.st.AppendTranscript(rec, sessions.TurnEntries(t.Prompt, t.Started, r, nil))
}
