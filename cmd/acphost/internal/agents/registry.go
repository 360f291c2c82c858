package agents

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/exitcode"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/registry"
)

const agentsUsage = `Usage: acphost agents [--json] [--registry FILE|URL]
       acphost agents install|update|remove ID... [--registry FILE|URL] [--json]
       acphost agents update
       acphost agents refresh [--registry URL]

Lists the agents --agent NAME can start: the built-in ones and those of
your config file, each with its command, then every agent of the ACP
registry by its id, with its version, its distribution on this platform
and whether it is installed.

An agent of the registry that is a binary (Devin, Cursor, Goose, Junie,
Kimi …) is downloaded, checked and unpacked on first use (acphost --agent
devin says so), into $XDG_CACHE_HOME/acphost/agents/ID/VERSION; npx and uvx
agents are fetched by those tools when they start.

  install ID   install the registry's version of ID now
  update [ID]  fetch the registry, then install the newest version of ID
               (without ID: of every installed agent); older versions stay
               until removed
  remove ID    remove every installed version of ID; one running keeps
               going on what it has open (each acphost using it is
               named), and its next start installs it again
  refresh      fetch the registry now (kept with its ETag)

The registry is the official one (https://cdn.agentclientprotocol.com/...,
as last fetched, else the snapshot built into acphost), or --registry
FILE|URL, or $ACPHOST_REGISTRY, or the config file's defaults.registry.
`

// registryUse is which registry the CLI reads, and what a lookup of one
// of its agents may do. One is shared by the copies of a FileConfig.
type registryUse struct {
	location string    // a file or URL; "": the official registry
	install  bool      // a lookup installs a binary agent on first use (an agent is about to run)
	remote   bool      // the agent runs on another machine (--ssh, --url)
	notes    io.Writer // where "installing …" goes; nil: nowhere
	progress bool      // a progress line on notes (a terminal, and no --json)

	mu     sync.Mutex
	loaded *registry.Registry
}

// newRegistryUse reads $ACPHOST_REGISTRY, else the config file's
// defaults.registry (relative: to the config file's directory).
func newRegistryUse(fromConfig, configPath string) *registryUse {
	loc := os.Getenv(registry.EnvRegistry)
	if loc == "" {
		loc = fromConfig
		if loc != "" && !isURL(loc) && !filepath.IsAbs(loc) && configPath != "" {
			loc = filepath.Join(filepath.Dir(configPath), loc)
		}
	}
	return &registryUse{location: loc}
}

func isURL(s string) bool { return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") }

// UseRegistry is parseArgs' word on the registry: --registry (winning
// over the environment and the file), and that an agent found there is
// about to run, so a binary one is installed now, saying so on stderr.
func (c FileConfig) UseRegistry(flagValue string, jsonOut, remote bool, stderr io.Writer) {
	if flagValue != "" {
		c.reg.location = flagValue
	}
	c.reg.install, c.reg.remote, c.reg.notes = true, remote, stderr
	f, ok := stderr.(*os.File)
	c.reg.progress = ok && !jsonOut && tty.IsTerminal(f)
}

func (u *registryUse) source() registry.Source {
	return registry.Source{Location: u.location}
}

// load reads the registry once.
func (u *registryUse) load() (*registry.Registry, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.loaded != nil {
		return u.loaded, nil
	}
	r, err := registry.Load(context.Background(), u.source())
	if err != nil {
		if u.location != "" {
			return nil, err
		}
		return nil, err
	}
	u.loaded = r
	return r, nil
}

func (u *registryUse) cache() *registry.Cache { return &registry.Cache{} }

// note tells the person, on notes, what happens; the registry's strings
// in it (an archive's URL) are made safe for the terminal.
func (u *registryUse) note(format string, args ...any) {
	if u.notes != nil {
		fmt.Fprintln(u.notes, "acphost: "+acp.SafeText(fmt.Sprintf(format, args...)))
	}
}

// safeError is a registry error as a person reads it: its text made safe
// for a terminal (a registry's names, platforms and URLs are anyone's
// bytes), its chain kept for errors.Is and errors.As.
type safeError struct{ err error }

func (e *safeError) Error() string { return acp.SafeText(e.err.Error()) }
func (e *safeError) Unwrap() error { return e.err }

// safeErr is err as a safeError (nil stays nil).
func safeErr(err error) error {
	if err == nil {
		return nil
	}
	return &safeError{err}
}

// regAgentRef is an Def's registry entry.
type regAgentRef struct {
	agent     registry.Agent
	kind      string              // the distribution used here
	installed *registry.Installed // a binary's install, nil when not installed
}

// registryAgent is name as an agent of the registry: found tells whether
// it is one, inRegistry how many the registry has.
func (c FileConfig) registryAgent(name string) (d Def, found bool, inRegistry int, err error) {
	r, err := c.reg.load()
	if err != nil {
		return Def{}, false, 0, safeErr(err)
	}
	a, ok := r.Agent(name)
	if !ok {
		return Def{}, false, len(r.Agents), nil
	}
	d, err = c.registryDef(r, a)
	return d, true, len(r.Agents), safeErr(err)
}

// registryDef is agent a as a named agent: its command (installing a
// binary first, when allowed), environment and profile.
func (c FileConfig) registryDef(r *registry.Registry, a registry.Agent) (Def, error) {
	cache := c.reg.cache()
	ref := &regAgentRef{agent: a, kind: a.Kind(registry.Platform())}
	d := Def{Description: a.Name + ": " + a.Description, source: "registry (" + r.Origin + ")", reg: ref}
	switch ref.kind {
	case "":
		return Def{}, &registry.PlatformError{ID: a.ID, Platform: registry.Platform(), Offered: a.Platforms()}
	case registry.KindNPX, registry.KindUVX:
		cmd, _, err := cache.Command(context.Background(), a, false)
		if err != nil {
			return Def{}, err
		}
		d.Command, d.Env = append([]string{cmd.Path}, cmd.Args...), envMap(cmd.Env)
		return d.withProfile(a.ID), nil
	}
	if c.reg.remote {
		return Def{}, fmt.Errorf("%s is a binary of the registry, installed on this machine: it cannot run over --ssh or --url (install it there, and name its command after --)", a.ID)
	}
	in, err := cache.Lookup(a.ID, a.Version)
	switch {
	case err == nil:
	case !errors.Is(err, registry.ErrNotInstalled):
		return Def{}, err
	case !c.reg.install:
		// Not installed, and nothing is to run now: the command it will have.
		t := a.Distribution.Binary[registry.Platform()]
		dir, err := cache.VersionDir(a.ID, a.Version)
		if err != nil {
			return Def{}, err
		}
		p, err := t.CmdPath()
		if err != nil {
			return Def{}, err
		}
		d.Command, d.Env = append([]string{filepath.Join(dir, filepath.FromSlash(p))}, t.Args...), t.Env
		return d.withProfile(a.ID), nil
	default:
		c.reg.note("%s is not installed: installing it (first use)", a.ID)
		if in, err = c.reg.install1(cache, a); err != nil {
			return Def{}, err
		}
	}
	ref.installed = &in
	cmd := registry.InstalledCommand(in)
	d.Command, d.Env = append([]string{cmd.Path}, cmd.Args...), envMap(cmd.Env)
	return d.withProfile(a.ID), nil
}

// install1 installs a, with a progress line on a terminal; Ctrl-C stops it
// and leaves nothing half-made.
func (u *registryUse) install1(cache *registry.Cache, a registry.Agent) (registry.Installed, error) {
	t := a.Distribution.Binary[registry.Platform()]
	u.note("downloading %s %s for %s from %s", a.ID, a.Version, registry.Platform(), t.Archive)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var bar *progressLine
	if u.progress {
		bar = &progressLine{w: u.notes, what: a.ID + " " + a.Version}
		cache.Progress = bar.update
	}
	in, downloaded, err := cache.Install(ctx, a)
	bar.end()
	if err != nil {
		own := a.ID
		if p, perr := t.CmdPath(); perr == nil {
			own = strings.Join(append([]string{path.Base(p)}, t.Args...), " ")
		}
		next := fmt.Sprintf("nothing was installed: run the same command again once %s can be reached (a proxy is taken from HTTPS_PROXY), "+
			"or install %s yourself and run it as: acphost -- %s", hostOf(t.Archive), a.ID, own)
		return registry.Installed{}, &installFailure{err: fmt.Errorf("installing %s %s: %w", a.ID, a.Version, err), next: next}
	}
	if downloaded {
		u.note("installed %s %s in %s (archive SHA-256 %s)", a.ID, a.Version, in.Dir, in.SHA256)
	}
	return in, nil
}

// installFailure is an install that failed (a download, a refused
// archive): not a usage error, so acphost exits 1 for it. next is what
// the person can do about it.
type installFailure struct {
	err  error
	next string
}

func (e *installFailure) Error() string { return acp.SafeText(e.err.Error()) }
func (e *installFailure) Unwrap() error { return e.err }

// IsInstallFailure tells run to exit 1, not 2, for err.
func IsInstallFailure(err error) bool {
	var f *installFailure
	return errors.As(err, &f)
}

// InstallNextStep is what to do after the failed install err: try again
// when the archive's host can be reached, or install the agent by hand
// and name its command. Empty for another error.
func InstallNextStep(err error) string {
	var f *installFailure
	if !errors.As(err, &f) {
		return ""
	}
	return acp.SafeText(f.next)
}

// hostOf is the host of an archive's URL, or the URL itself.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}

func envMap(env []string) map[string]string {
	if len(env) == 0 {
		return nil
	}
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// progressLine shows a download's bytes and total on one terminal line.
type progressLine struct {
	w     io.Writer
	what  string
	last  time.Time
	shown bool
}

func (p *progressLine) update(done, total int64) {
	if now := time.Now(); done != total && now.Sub(p.last) < 100*time.Millisecond {
		return
	} else {
		p.last = now
	}
	line := fmt.Sprintf("%s: %s", p.what, byteSize(done))
	if total > 0 {
		line += fmt.Sprintf(" of %s (%d%%)", byteSize(total), done*100/total)
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", line)
	p.shown = true
}

// end clears the line.
func (p *progressLine) end() {
	if p != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Command is "acphost agents" and its subcommands (see agentsUsage).
func Command(args []string, stdout, stderr io.Writer) int {
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet("acphost agents", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	jsonOut := fs.Bool("json", false, "JSON on stdout")
	regFlag := fs.String("registry", "", "the registry `file or URL`")
	var ids []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, agentsUsage)
				return exitcode.OK
			}
			fmt.Fprintf(stderr, "acphost agents: %v\n", err)
			return exitcode.Usage
		}
		if fs.NArg() == 0 {
			break
		}
		ids, args = append(ids, fs.Arg(0)), fs.Args()[1:]
	}
	cfg, err := Load()
	if err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitcode.Usage
	}
	if *regFlag != "" {
		cfg.reg.location = *regFlag
	}
	cfg.reg.notes = stderr
	if f, ok := stderr.(*os.File); ok && !*jsonOut {
		cfg.reg.progress = tty.IsTerminal(f)
	}
	a := agentsRun{cfg: cfg, stdout: stdout, stderr: stderr, json: *jsonOut}
	switch {
	case sub == "" && len(ids) == 0:
		return a.list()
	case sub == "install" || sub == "remove":
		if len(ids) == 0 {
			fmt.Fprintf(stderr, "acphost agents %s: name the agent (acphost agents lists them)\n", sub)
			return exitcode.Usage
		}
		return a.each(sub, ids)
	case sub == "update":
		return a.update(ids)
	case sub == "refresh" && len(ids) == 0:
		return a.refresh()
	}
	fmt.Fprintf(stderr, "acphost agents: unexpected %q (acphost agents --help)\n", strings.Join(append([]string{sub}, ids...), " "))
	return exitcode.Usage
}

// agentsRun is one acphost agents command.
type agentsRun struct {
	cfg            FileConfig
	stdout, stderr io.Writer
	json           bool
}

func (a agentsRun) fail(err error) int {
	fmt.Fprintln(a.stderr, "acphost agents:", acp.SafeText(err.Error()))
	return exitcode.Failed
}

// agentJSON is one agent of acphost agents --json.
type agentJSON struct {
	Name         string            `json:"name"`
	From         string            `json:"from"` // built-in, config, registry
	Command      []string          `json:"command,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	Mode         string            `json:"mode,omitempty"`
	Description  string            `json:"description,omitempty"`
	Version      string            `json:"version,omitempty"`
	Distribution string            `json:"distribution"` // binary, npx, uvx, command, or none
	Installed    bool              `json:"installed"`    // a binary of this version is in the cache
	Versions     []string          `json:"installedVersions,omitempty"`
	Platforms    []string          `json:"platforms,omitempty"`
	Shadowed     bool              `json:"shadowed,omitempty"` // a built-in or configured agent of that name wins
	Profile      *profileJSON      `json:"profile,omitempty"`
}

type profileJSON struct {
	Name          string   `json:"name"`
	StartMode     string   `json:"startMode,omitempty"`
	PlanModes     []string `json:"planModes,omitempty"`
	AskingModes   []string `json:"askingModes,omitempty"`
	UnaskedModes  []string `json:"unaskedModes,omitempty"`
	StateDirs     []string `json:"stateDirs,omitempty"`
	AuthHint      string   `json:"AuthHint,omitempty"`
	ProvenVersion string   `json:"ProvenVersion,omitempty"`
}

func (p *Profile) json() *profileJSON {
	if p == nil {
		return nil
	}
	j := &profileJSON{Name: p.name, StartMode: p.startMode, AuthHint: p.AuthHint, ProvenVersion: p.ProvenVersion}
	if l := p.lib; l != nil {
		j.PlanModes, j.AskingModes, j.UnaskedModes, j.StateDirs = l.PlanModes, l.AskingModes, l.UnaskedModes, l.StateDirs
	}
	return j
}

// list prints the named agents, then the registry's.
func (a agentsRun) list() int {
	r, regErr := a.cfg.reg.load()
	named := a.cfg.agents()
	if a.json {
		out := struct {
			Agents   []agentJSON `json:"agents"`
			Registry string      `json:"registry,omitempty"`
			Error    string      `json:"registryError,omitempty"`
			Platform string      `json:"platform"`
			Config   string      `json:"config,omitempty"`
		}{Platform: registry.Platform(), Config: a.cfg.path}
		out.Agents = append(out.Agents, agentJSON{Name: Demo, From: "built-in", Distribution: "command", Description: "this program, as the built-in fake agent"})
		names := make([]string, 0, len(named))
		for n := range named {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			d := named[n].withProfile(n)
			from := "config"
			if d.source == "built-in" {
				from = "built-in"
			}
			dist := "command"
			if pkg, _ := commandPackage(d.Command); pkg != "" {
				dist = filepath.Base(d.Command[0])
			}
			out.Agents = append(out.Agents, agentJSON{Name: n, From: from, Command: d.Command, Env: d.Env, Mode: d.Mode,
				Description: d.Description, Distribution: dist, Profile: d.profile.json()})
		}
		if regErr != nil {
			out.Error = regErr.Error()
		} else {
			out.Registry = r.Origin
			for _, ag := range r.Agents {
				out.Agents = append(out.Agents, a.registryJSON(r, ag, named))
			}
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return a.fail(err)
		}
		if regErr != nil {
			return exitcode.Failed
		}
		return exitcode.OK
	}
	printNamedAgents(a.cfg, a.stdout)
	if regErr != nil {
		fmt.Fprintln(a.stdout)
		return a.fail(regErr)
	}
	fmt.Fprintf(a.stdout, "\nregistry: %s (%d agents; acphost agents refresh fetches it)\n", acp.SafeText(r.Origin), len(r.Agents))
	tw := tabwriter.NewWriter(a.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tVERSION\tDISTRIBUTION\tINSTALLED\tNAME")
	shadowed := false
	for _, ag := range r.Agents {
		j := a.registryJSON(r, ag, named)
		id := j.Name
		if j.Shadowed {
			id += " *"
			shadowed = true
		}
		inst := "-"
		switch {
		case j.Distribution == "binary" && j.Installed:
			inst = "yes"
		case j.Distribution == "binary" && len(j.Versions) > 0:
			inst = "older: " + strings.Join(j.Versions, ", ")
		case j.Distribution == "binary":
			inst = "no"
		case j.Distribution == "none":
			j.Distribution = "none for " + registry.Platform()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", id, j.Version, j.Distribution, acp.SafeText(inst), tty.OneLine(acp.SafeText(ag.Name), 60))
	}
	tw.Flush()
	if shadowed {
		fmt.Fprintln(a.stdout, "* a built-in or configured agent of that name wins: --agent runs that one")
	}
	return exitcode.OK
}

// registryJSON describes agent ag of r.
func (a agentsRun) registryJSON(r *registry.Registry, ag registry.Agent, named map[string]Def) agentJSON {
	_, shadowed := named[ag.ID]
	j := agentJSON{Name: ag.ID, From: "registry", Version: ag.Version, Description: ag.Description,
		Distribution: ag.Kind(registry.Platform()), Platforms: ag.Platforms(), Shadowed: shadowed || ag.ID == Demo}
	if j.Distribution == "" {
		j.Distribution = "none"
	}
	cache := a.cfg.reg.cache()
	if list, err := cache.List(ag.ID); err == nil {
		for _, in := range list {
			if in.Version == ag.Version {
				j.Installed = true
			} else {
				j.Versions = append(j.Versions, in.Version)
			}
		}
		if j.Installed {
			j.Versions = append(j.Versions, ag.Version)
		}
	}
	if d, err := a.cfg.registryDef(r, ag); err == nil {
		j.Command, j.Env, j.Mode, j.Profile = d.Command, d.Env, d.Mode, d.profile.json()
	}
	return j
}

// resultJSON is one line of install, update and remove with --json.
type resultJSON struct {
	ID       string   `json:"id"`
	Action   string   `json:"action"` // installed, up-to-date, removed, nothing (npx, uvx), failed
	Version  string   `json:"version,omitempty"`
	Versions []string `json:"versions,omitempty"`
	Dir      string   `json:"dir,omitempty"`
	SHA256   string   `json:"sha256,omitempty"`
	Error    string   `json:"error,omitempty"`
}

func (a agentsRun) say(res resultJSON, human string) {
	if a.json {
		b, _ := json.Marshal(res)
		fmt.Fprintln(a.stdout, string(b))
		return
	}
	fmt.Fprintln(a.stdout, human)
}

// each runs install or remove for each id.
func (a agentsRun) each(sub string, ids []string) int {
	code := exitcode.OK
	for _, id := range ids {
		var err error
		if sub == "remove" {
			err = a.remove(id)
		} else {
			err = a.install(id)
		}
		if err != nil {
			if a.json {
				a.say(resultJSON{ID: id, Action: "failed", Error: err.Error()}, "")
			} else {
				fmt.Fprintf(a.stderr, "acphost agents %s %s: %s\n", sub, acp.SafeText(id), acp.SafeText(err.Error()))
			}
			code = exitcode.Failed
		}
	}
	return code
}

// install installs id's registry version, unless it has it.
func (a agentsRun) install(id string) error {
	r, err := a.cfg.reg.load()
	if err != nil {
		return err
	}
	ag, ok := r.Agent(id)
	if !ok {
		if _, named := a.cfg.agents()[id]; named {
			return fmt.Errorf("%s is a built-in or configured agent, not one of the registry: its command runs as it is, nothing to install", id)
		}
		return fmt.Errorf("no agent %q in the registry (%s)", id, r.Origin)
	}
	switch kind := ag.Kind(registry.Platform()); kind {
	case "":
		return &registry.PlatformError{ID: ag.ID, Platform: registry.Platform(), Offered: ag.Platforms()}
	case registry.KindNPX, registry.KindUVX:
		pkg := ag.Distribution.NPX
		if kind == registry.KindUVX {
			pkg = ag.Distribution.UVX
		}
		a.say(resultJSON{ID: id, Action: "nothing", Version: ag.Version},
			fmt.Sprintf("%s runs through %s (%s), which fetches it when it starts: nothing to install", id, kind, tty.OneLine(acp.SafeText(pkg.Package), 200)))
		return nil
	}
	cache := a.cfg.reg.cache()
	if in, err := cache.Lookup(ag.ID, ag.Version); err == nil {
		a.say(resultJSON{ID: id, Action: "up-to-date", Version: in.Version, Dir: in.Dir, SHA256: in.SHA256},
			fmt.Sprintf("%s %s is installed (%s)", id, in.Version, in.Dir))
		return nil
	}
	in, err := a.cfg.reg.install1(cache, ag)
	if err != nil {
		return err
	}
	a.say(resultJSON{ID: id, Action: "installed", Version: in.Version, Dir: in.Dir, SHA256: in.SHA256},
		fmt.Sprintf("installed %s %s in %s", id, in.Version, in.Dir))
	return nil
}

// remove removes every installed version of id. An agent in use goes
// too: a running agent keeps what it has open (on Unix; Windows refuses
// to remove a running program, and remove fails), the files it opens
// later are gone, and its next start (--agent, a resumed session)
// installs it again. Each acphost whose session record shows it open with
// the agent is named on stderr.
func (a agentsRun) remove(id string) error {
	users := openSessionsOf(id)
	removed, err := a.cfg.reg.cache().Remove(context.Background(), id)
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		a.say(resultJSON{ID: id, Action: "removed"}, id+" is not installed")
		return nil
	}
	a.say(resultJSON{ID: id, Action: "removed", Versions: removed}, fmt.Sprintf("removed %s %s", id, strings.Join(removed, ", ")))
	for _, r := range users {
		fmt.Fprintf(a.stderr, "acphost agents remove %s: in use by acphost pid %d (session %s in %s): the agent running there keeps the files it has open, not those it opens later; its next start installs it again\n",
			id, r.PID, tty.OneLine(acp.SafeText(r.ID), 40), acp.SafeText(r.Cwd))
	}
	return nil
}

// openSessionsOf is the session records of a running acphost whose agent
// is the registry's id: by its name, or by a command in its cache
// directory.
func openSessionsOf(id string) []state.Record {
	st, err := state.Open()
	if err != nil {
		return nil
	}
	recs, err := st.List()
	if err != nil {
		return nil
	}
	var dir string
	if cache, err := registry.DefaultCacheDir(); err == nil {
		dir = filepath.Join(cache, "agents", id) + string(filepath.Separator)
	}
	var out []state.Record
	for _, r := range recs {
		uses := r.Agent == id || (dir != "" && len(r.Command) > 0 && strings.HasPrefix(r.Command[0], dir))
		if uses && sessions.LiveState(r) != "" {
			out = append(out, r)
		}
	}
	return out
}

// refresh fetches the registry.
func (a agentsRun) refresh() int {
	if _, err := a.fetch(); err != nil {
		return a.fail(err)
	}
	return exitcode.OK
}

// fetch refreshes the registry and says what came.
func (a agentsRun) fetch() (*registry.Registry, error) {
	r, changed, err := registry.Refresh(context.Background(), a.cfg.reg.source())
	if err != nil {
		return nil, err
	}
	a.cfg.reg.mu.Lock()
	a.cfg.reg.loaded = r
	a.cfg.reg.mu.Unlock()
	what := "unchanged"
	if changed {
		what = "updated"
	}
	if !a.json {
		fmt.Fprintf(a.stdout, "registry %s: %s, %d agents\n", acp.SafeText(r.Origin), what, len(r.Agents))
	}
	return r, nil
}

// update refreshes the registry, then installs the newest version of ids
// (default: every agent installed).
func (a agentsRun) update(ids []string) int {
	if _, err := a.fetch(); err != nil {
		fmt.Fprintf(a.stderr, "acphost agents update: %s; going on with the registry as it was\n", acp.SafeText(err.Error()))
	}
	if len(ids) == 0 {
		dir, err := registry.DefaultCacheDir()
		if err != nil {
			return a.fail(err)
		}
		ents, _ := os.ReadDir(filepath.Join(dir, "agents"))
		cache := a.cfg.reg.cache()
		for _, e := range ents {
			if list, err := cache.List(e.Name()); err == nil && len(list) > 0 {
				ids = append(ids, e.Name())
			}
		}
		if len(ids) == 0 {
			if !a.json {
				fmt.Fprintln(a.stdout, "no agent of the registry is installed")
			}
			return exitcode.OK
		}
	}
	slices.Sort(ids)
	return a.each("install", ids)
}
