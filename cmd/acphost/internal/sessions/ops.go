package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/exitcode"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
)

// The sessions subcommands beyond the listing: show, history, export,
// import, prune.

// Agents is what the subcommands need of the user's agents.
type Agents struct {
	Demo string                 // the built-in demo agent's name
	Load func() (Config, error) // reads the configuration
}

// Config is the configuration's named agents.
type Config interface {
	// Agent is the command a named agent (built in or configured) runs
	// now, and where that command comes from.
	Agent(name string) (command []string, source string, err error)
	// Path is the configuration file's path.
	Path() string
}

// usageError is a subcommand error that is the command line's fault.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// subcommand runs a sessions subcommand, saying its error once, with the
// exit status of the rest of the CLI.
func subcommand(name string, stdout, stderr io.Writer, fn func() error) int {
	err := fn()
	var ue usageError
	switch {
	case err == nil:
		return exitcode.OK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, sessionsUsage)
		return exitcode.OK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "acphost: sessions %s: %s\n", name, ue.msg)
		fmt.Fprintln(stderr, "Run 'acphost sessions --help' for usage.")
		return exitcode.Usage
	}
	fmt.Fprintf(stderr, "acphost: sessions %s: %s\n", name, acp.SafeText(err.Error()))
	return exitcode.Failed
}

// parseSub parses a subcommand's flags, which may come before or after
// its arguments, and returns the arguments; want is how many it takes.
func parseSub(fl *flag.FlagSet, args []string, want int, what string) ([]string, error) {
	fl.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{usage.FlagError(err).Error()}
		}
		if fl.NArg() == 0 {
			break
		}
		pos = append(pos, fl.Arg(0))
		args = fl.Args()[1:]
	}
	if len(pos) != want {
		return nil, usagef("want %s", what)
	}
	return pos, nil
}

// lookupHere finds the record id names (see state.Find) in the current
// directory.
func lookupHere(s *state.Store, id string) (state.Record, error) {
	cwd, _ := os.Getwd()
	return s.Lookup(id, cwd)
}

// configuredCommand is the command r's agent runs now: the
// configuration's for a named agent, the record's for a command after --,
// none for the built-in demo; source says where it comes from.
func configuredCommand(r state.Record, agents Agents) (command []string, source string) {
	switch r.Agent {
	case agents.Demo:
		return nil, "built-in demo agent"
	case "":
		return r.Command, "the command after -- it was started with"
	}
	file, err := agents.Load()
	if err != nil {
		return nil, "config unreadable: " + err.Error()
	}
	command, source, err = file.Agent(r.Agent)
	if err != nil {
		return nil, "not configured: no agent " + r.Agent
	}
	return command, source
}

// turnCount is how many turns a transcript holds.
func turnCount(es []state.Entry) int {
	n := 0
	for _, e := range es {
		if e.Type == state.EntryPrompt {
			n++
		}
	}
	return n
}

// ShowJSON is acphost sessions show --json.
type ShowJSON struct {
	Record        state.Record `json:"record"`
	Command       []string     `json:"command"`
	CommandSource string       `json:"commandSource"`
	State         string       `json:"state"`
	Transcript    struct {
		Path  string `json:"path"`
		Bytes int64  `json:"bytes"`
		Turns int    `json:"turns"`
	} `json:"transcript"`
}

// sessionsShow is "acphost sessions show ID|last [--json]".
func sessionsShow(st *state.Store, args []string, stdout io.Writer, agents Agents) error {
	fl := flag.NewFlagSet("show", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "")
	r, err := lookupOne(st, fl, args)
	if err != nil {
		return err
	}
	es, size, terr := st.ReadTranscript(r)
	command, source := configuredCommand(r, agents)
	if *asJSON {
		var out ShowJSON
		out.Record, out.Command, out.CommandSource, out.State = r, command, source, LiveState(r)
		if out.Command == nil {
			out.Command = []string{}
		}
		out.Transcript.Path, out.Transcript.Bytes, out.Transcript.Turns = st.TranscriptPath(r), size, turnCount(es)
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return errors.Join(enc.Encode(out), terr)
	}
	tw := tabwriter.NewWriter(stdout, 2, 8, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	row("session", acp.SafeText(r.ID))
	if r.Name != "" {
		row("name", tty.OneLine(acp.SafeText(r.Name), state.MaxNameBytes))
	}
	row("agent", acp.SafeText(r.AgentLabel()))
	cmd := acp.SafeText(strings.Join(command, " "))
	if cmd == "" {
		cmd = "-"
	}
	row("command", cmd+" ("+acp.SafeText(source)+")")
	row("directory", acp.SafeText(r.Cwd))
	if w := r.Worktree; w != nil {
		row("worktree", fmt.Sprintf("%s on branch %s, from %s at %.12s", acp.SafeText(w.Path), acp.SafeText(w.Branch), acp.SafeText(w.Repo), acp.SafeText(w.Base)))
	}
	if r.Title != "" {
		row("title", tty.OneLine(acp.SafeText(r.Title), 200))
	}
	if r.Mode != "" {
		row("mode", tty.OneLine(acp.SafeText(r.Mode), 80))
	}
	row("created", fmtTime(r.Created))
	row("last used", fmtTime(r.LastUsed))
	live := LiveState(r)
	if live == "" {
		live = "-"
	}
	row("state", live)
	tr := fmt.Sprintf("%d turn(s), %s (%s)", turnCount(es), fmtBytes(size), st.TranscriptPath(r))
	if size == 0 {
		tr = "none"
	}
	if terr != nil {
		tr = "unreadable"
	}
	row("transcript", tr)
	tw.Flush()
	return terr
}

// fmtTime is a time for a person: local, with how long ago.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	s := t.Local().Format("2006-01-02 15:04:05")
	if time.Since(t) < 24*time.Hour {
		s += " (" + tty.Ago(t) + ")" // Ago gives the date itself beyond a day
	}
	return s
}

// fmtBytes is a size: 512 B, 1.2 KiB, 1.0 MiB.
func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// HistoryTurn is one turn of a transcript, as history shows it.
type HistoryTurn struct {
	Time    time.Time     `json:"time"`
	Prompt  string        `json:"prompt"`
	Tools   []HistoryTool `json:"tools"`
	Answer  string        `json:"answer"`
	Stop    string        `json:"stop,omitempty"`
	Ms      int64         `json:"ms,omitempty"`
	Error   string        `json:"error,omitempty"`
	Omitted int           `json:"omittedTools,omitempty"`
}

type HistoryTool struct {
	Title   string `json:"title"`
	Kind    string `json:"kind,omitempty"`
	Status  string `json:"status,omitempty"`
	Refused string `json:"refused,omitempty"` // its permission was refused: why
}

// turns groups a transcript's entries by turn, oldest first.
func turns(es []state.Entry) []HistoryTurn {
	var ts []HistoryTurn
	for _, e := range es {
		if e.Type == state.EntryPrompt || len(ts) == 0 {
			ts = append(ts, HistoryTurn{Time: e.Time, Tools: []HistoryTool{}})
		}
		t := &ts[len(ts)-1]
		switch e.Type {
		case state.EntryPrompt:
			t.Prompt = e.Text
		case state.EntryTool:
			t.Tools = append(t.Tools, HistoryTool{Title: e.Title, Kind: e.Kind, Status: e.Status, Refused: e.Refused})
		case state.EntryAnswer:
			if t.Answer != "" {
				t.Answer += "\n"
			}
			t.Answer += e.Text
		case state.EntryEnd:
			t.Stop, t.Ms, t.Error, t.Omitted = e.Stop, e.Ms, e.Error, e.Omitted
		}
	}
	return ts
}

// sessionsHistory is "acphost sessions history ID|last [--limit N] [--json]".
func sessionsHistory(st *state.Store, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history", flag.ContinueOnError)
	asJSON := fl.Bool("json", false, "")
	limit := fl.Int("limit", 0, "")
	pos, err := parseSub(fl, args, 1, "one session: ID|NAME|last")
	if err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit %d: want a number of turns (0: all)", *limit)
	}
	r, err := lookupHere(st, pos[0])
	if err != nil {
		return err
	}
	es, _, err := st.ReadTranscript(r)
	if err != nil {
		return err
	}
	ts := turns(es)
	first := 1
	if *limit > 0 && len(ts) > *limit {
		first += len(ts) - *limit
		ts = ts[len(ts)-*limit:]
	}
	if *asJSON {
		if ts == nil {
			ts = []HistoryTurn{}
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ts)
	}
	if len(ts) == 0 {
		fmt.Fprintf(stdout, "no turns recorded for session %s (turns are recorded from this version on, and not with --no-store)\n", acp.SafeText(r.ID))
		return nil
	}
	color := false
	if f, ok := stdout.(*os.File); ok {
		color = tty.ColorAllowed(f)
	}
	s := tty.NewScreen(stdout, color, false)
	var b strings.Builder
	for i, t := range ts {
		head := []string{fmt.Sprintf("turn %d", first+i), t.Time.Local().Format("2006-01-02 15:04")}
		if t.Stop != "" {
			head = append(head, tty.OneLine(acp.SafeText(t.Stop), 40))
		}
		if t.Ms > 0 {
			head = append(head, tty.FormatDuration(time.Duration(t.Ms)*time.Millisecond))
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(s.Style(tty.StyleDim, "── "+strings.Join(head, " · ")) + "\n")
		if p := strings.TrimRight(acp.SafeText(t.Prompt), "\n"); p != "" {
			for _, l := range strings.Split(p, "\n") {
				b.WriteString(s.Style(tty.StyleBold, "> "+l) + "\n")
			}
		}
		for _, tc := range t.Tools {
			mark := toolMark(s, tc.Status)
			if tc.Refused != "" { // as the live view showed it
				mark = s.Style(tty.StyleYellow, "✗")
			}
			b.WriteString("  " + mark + " " + s.Style(tty.StyleDim, toolSummary(tc)) + "\n")
		}
		if t.Omitted > 0 {
			b.WriteString(s.Style(tty.StyleDim, fmt.Sprintf("  … %d more tool call(s) not kept", t.Omitted)) + "\n")
		}
		if a := strings.TrimSpace(acp.SafeText(t.Answer)); a != "" {
			b.WriteString(a + "\n")
		}
		if t.Error != "" {
			b.WriteString(s.Style(tty.StyleRed, "✗ "+tty.OneLine(acp.SafeText(t.Error), 200)) + "\n")
		}
	}
	s.Raw(b.String())
	return nil
}

// toolMark is a finished tool's mark, as the live output shows it.
func toolMark(s *tty.Screen, status string) string {
	switch acp.ToolStatus(status) {
	case acp.StatusCompleted:
		return s.Style(tty.StyleGreen, "✓")
	case acp.StatusFailed:
		return s.Style(tty.StyleRed, "✗")
	}
	return s.Style(tty.StyleDim, "·")
}

// toolSummary is one line for a tool call: title (kind), and its status
// unless it completed.
func toolSummary(tc HistoryTool) string {
	title := tty.OneLine(acp.SafeText(tc.Title), 100)
	if title == "" {
		title = "tool"
	}
	var extra []string
	if k := tty.OneLine(acp.SafeText(tc.Kind), 20); k != "" {
		extra = append(extra, k)
	}
	if r := tty.OneLine(acp.SafeText(tc.Refused), 30); r != "" {
		extra = append(extra, r)
	}
	if st := tty.OneLine(acp.SafeText(tc.Status), 20); st != "" && (st != string(acp.StatusCompleted) || tc.Refused != "") {
		extra = append(extra, st)
	}
	if len(extra) > 0 {
		title += " (" + strings.Join(extra, ", ") + ")"
	}
	return title
}

// exportVersion is the version of the export format.
const exportVersion = 1

// ExportDoc is a session as acphost sessions export writes it.
type ExportDoc struct {
	Version    int           `json:"version"`
	Record     *state.Record `json:"record"`
	Transcript []state.Entry `json:"transcript"`
}

// sessionsExport is "acphost sessions export ID|last [-o FILE]".
func sessionsExport(st *state.Store, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("export", flag.ContinueOnError)
	outPath := fl.String("o", "", "")
	r, err := lookupOne(st, fl, args)
	if err != nil {
		return err
	}
	es, _, err := st.ReadTranscript(r)
	if err != nil {
		return err
	}
	// Which process has it open, its control socket and its worktree are
	// of this machine only.
	r.PID, r.TurnSince, r.Control, r.Worktree = 0, time.Time{}, "", nil
	if es == nil {
		es = []state.Entry{}
	}
	b, err := json.MarshalIndent(ExportDoc{Version: exportVersion, Record: &r, Transcript: es}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if *outPath == "" || *outPath == "-" {
		_, err = stdout.Write(b)
		return err
	}
	if err := os.WriteFile(*outPath, b, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "exported session %s (%d turn(s)) to %s\n", acp.SafeText(r.ID), turnCount(es), *outPath)
	return nil
}

// Bounds of an imported session.
const (
	MaxImportBytes = 16 << 20
	maxIDBytes     = 1024
	maxPathBytes   = 4096
)

// sessionsImport is "acphost sessions import FILE|- [--force]".
func sessionsImport(st *state.Store, args []string, stdin io.Reader, stdout, stderr io.Writer, agents Agents) error {
	fl := flag.NewFlagSet("import", flag.ContinueOnError)
	force := fl.Bool("force", false, "")
	pos, err := parseSub(fl, args, 1, "one file (or - for standard input)")
	if err != nil {
		return err
	}
	in, name := stdin, "standard input"
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return err
		}
		defer f.Close()
		in, name = f, pos[0]
	}
	b, err := io.ReadAll(io.LimitReader(in, MaxImportBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > MaxImportBytes {
		return fmt.Errorf("%s is over %d MiB: not imported", name, MaxImportBytes>>20)
	}
	r, es, err := decodeExport(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	file, err := agents.Load()
	if err != nil {
		return err
	}
	if err := admitRecord(&r, file, agents.Demo); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	err = st.ImportRecord(r, es, func(o state.Record) error {
		if !*force {
			return fmt.Errorf("session %s of agent %s is already recorded; --force replaces it (and its history)", acp.SafeText(r.ID), acp.SafeText(r.Agent))
		}
		if st := LiveState(o); st != "" {
			return fmt.Errorf("session %s is %s: not replaced", acp.SafeText(r.ID), st)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "imported session %s (%s, %s, %d turn(s)); acphost --resume %s continues it\n",
		acp.SafeText(r.ID), acp.SafeText(r.Agent), acp.SafeText(r.Cwd), turnCount(es), acp.SafeText(r.ID))
	if _, err := os.Stat(r.Cwd); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "acphost: note: its directory %s does not exist here; acphost --resume %s --cwd DIR continues it elsewhere\n",
			acp.SafeText(r.Cwd), acp.SafeText(r.ID))
	}
	return nil
}

// decodeExport decodes an export document strictly: one JSON object of
// known fields, of a version this acphost reads.
func decodeExport(b []byte) (state.Record, []state.Entry, error) {
	var doc ExportDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return state.Record{}, nil, fmt.Errorf("not a session export: %w", err)
	}
	if dec.More() {
		return state.Record{}, nil, errors.New("not a session export: more than one JSON value")
	}
	if doc.Version != exportVersion {
		return state.Record{}, nil, fmt.Errorf("export version %d: this acphost reads version %d", doc.Version, exportVersion)
	}
	if doc.Record == nil {
		return state.Record{}, nil, errors.New("no record")
	}
	for i, e := range doc.Transcript {
		if !state.ValidEntryType(e.Type) {
			return state.Record{}, nil, fmt.Errorf("transcript entry %d: unknown type %q", i+1, tty.OneLine(acp.SafeText(e.Type), 40))
		}
		doc.Transcript[i] = e.Bounded()
	}
	return *doc.Record, doc.Transcript, nil
}

// admitRecord checks an imported record and makes it one acphost could
// have written: it names an agent the user has (built in or configured),
// whose command is then the configuration's — a record never brings a
// command of its own, since --resume would run it.
func admitRecord(r *state.Record, file Config, demo string) error {
	switch {
	case r.ID == "":
		return errors.New("the record has no session id")
	case len(r.ID) > maxIDBytes:
		return fmt.Errorf("the session id is over %d bytes", maxIDBytes)
	case !plainText(r.ID):
		return errors.New("the session id holds control characters")
	}
	switch {
	case r.Agent == "" && len(r.Command) > 0:
		return fmt.Errorf("the session is of a command (%s), not of a named agent: only sessions of named agents are imported, since --resume runs the record's command; add the agent to your config and import a record naming it",
			tty.OneLine(acp.SafeText(strings.Join(r.Command, " ")), 80))
	case r.Agent == "":
		return errors.New("the record names no agent")
	case len(r.Agent) > state.MaxEntryField || !plainText(r.Agent):
		return errors.New("the record's agent name is not one acphost could have written")
	case r.Agent == demo:
		r.Command = nil
	default:
		command, _, err := file.Agent(r.Agent)
		if err != nil {
			return fmt.Errorf("the session's agent %q is neither built in nor in your config (%s): not imported; add it to the config file to import the session",
				tty.OneLine(acp.SafeText(r.Agent), 60), file.Path())
		}
		r.Command = command // the configuration's, whatever the record said
	}
	switch {
	case len(r.Cwd) > maxPathBytes || !plainText(r.Cwd):
		return errors.New("the session's directory is not a plain path")
	case !filepath.IsAbs(r.Cwd):
		return fmt.Errorf("the session's directory %q is not absolute", tty.OneLine(acp.SafeText(r.Cwd), 80))
	}
	r.Cwd = filepath.Clean(r.Cwd)
	r.Title = state.Clip(r.Title, state.MaxTitleBytes)
	if len(r.Mode) > state.MaxEntryField || !plainText(r.Mode) {
		return errors.New("the session's mode is not a mode id")
	}
	if r.Name != "" {
		if err := state.ValidName(r.Name); err != nil {
			return fmt.Errorf("the session's name: %w", err)
		}
	}
	// A worktree is of the machine that made it: a record never brings
	// one, since sessions rm would remove what it names.
	r.Worktree = nil
	now := time.Now()
	if r.Created.IsZero() || r.Created.After(now) {
		r.Created = now
	}
	if r.LastUsed.IsZero() || r.LastUsed.After(now) {
		r.LastUsed = now
	}
	if r.LastUsed.Before(r.Created) {
		r.LastUsed = r.Created
	}
	// No process here has it open: nor does the record name a socket that
	// acphost cancel and --no-wait would connect and write to.
	r.PID, r.TurnSince, r.Control = 0, time.Time{}, ""
	return nil
}

// plainText reports whether s is valid UTF-8 without control characters.
func plainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if unicode.IsControl(c) {
			return false
		}
	}
	return true
}

// parseAge parses a prune age: 30d, 12h, or any Go duration.
func parseAge(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || days <= 0 || days > 100*365 {
			return 0, usagef("--older-than %s: want a number of days (30d), hours (12h) or a Go duration", s)
		}
		d = time.Duration(days * float64(24*time.Hour))
	} else {
		var err error
		d, err = time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, usagef("--older-than %s: want a number of days (30d), hours (12h) or a Go duration", s)
		}
	}
	return d, nil
}

// defaultPruneAge is how long unused sessions are kept by prune.
const defaultPruneAge = "30d"

// sessionsPrune is "acphost sessions prune [--older-than D] [--agent NAME]
// [--dry-run]".
func sessionsPrune(st *state.Store, args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("prune", flag.ContinueOnError)
	olderThan := fl.String("older-than", defaultPruneAge, "")
	agent := fl.String("agent", "", "")
	dryRun := fl.Bool("dry-run", false, "")
	if _, err := parseSub(fl, args, 0, "no arguments besides the flags"); err != nil {
		return err
	}
	age, err := parseAge(*olderThan)
	if err != nil {
		return err
	}
	cutoff := time.Now().Add(-age)
	var open, trees []state.Record
	gone, err := st.Prune(func(r state.Record) bool {
		switch {
		case !r.LastUsed.Before(cutoff) || *agent != "" && r.AgentLabel() != *agent:
			return true
		case LiveState(r) != "":
			open = append(open, r) // an acphost process has it: never removed
			return true
		case r.Worktree != nil && exists(r.Worktree.Path):
			trees = append(trees, r) // sessions rm removes it with its worktree
			return true
		}
		return false
	}, *dryRun)
	if err != nil {
		return err
	}
	verb := "removed"
	if *dryRun {
		verb = "would remove"
	}
	for _, r := range gone {
		fmt.Fprintf(stdout, "%s %s (%s, %s, last used %s)\n", verb, tty.OneLine(acp.SafeText(r.ID), 60), acp.SafeText(r.AgentLabel()),
			acp.SafeText(r.Cwd), r.LastUsed.Local().Format("2006-01-02 15:04"))
	}
	for _, r := range open {
		fmt.Fprintf(stdout, "kept %s (%s): %s\n", tty.OneLine(acp.SafeText(r.ID), 60), acp.SafeText(r.AgentLabel()), LiveState(r))
	}
	for _, r := range trees {
		fmt.Fprintf(stdout, "kept %s (%s): it runs in the worktree %s; acphost sessions rm %s removes both\n", tty.OneLine(acp.SafeText(r.ID), 60),
			acp.SafeText(r.AgentLabel()), acp.SafeText(r.Worktree.Path), tty.OneLine(acp.SafeText(r.ID), 60))
	}
	if len(gone) == 0 {
		fmt.Fprintf(stdout, "no session to remove: none last used before %s\n", cutoff.Local().Format("2006-01-02 15:04"))
	}
	return nil
}

// lookupOne parses a subcommand's flags and its one argument, ID|last, and
// finds that record.
func lookupOne(st *state.Store, fl *flag.FlagSet, args []string) (state.Record, error) {
	pos, err := parseSub(fl, args, 1, "one session: ID|NAME|last")
	if err != nil {
		return state.Record{}, err
	}
	return lookupHere(st, pos[0])
}
