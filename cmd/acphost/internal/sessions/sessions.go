// Package sessions is acphost's recorded sessions as the person handles
// them: the sessions subcommands (list, show, history, export, import,
// prune, rm), acphost cancel, the table of sessions (Print), whether an
// acphost process has one open (LiveState), and a turn's transcript
// entries (TurnEntries).
package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/control"
	"github.com/acphost/acphost/cmd/acphost/internal/exitcode"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

const sessionsUsage = `Usage: acphost sessions [--json]     list the recorded sessions, most recent first
       acphost sessions show ID|NAME|last [--json]
                                     one session: its agent and the command that
                                     runs it now, directory, title, mode, times,
                                     state, transcript
       acphost sessions history ID|NAME|last [--limit N] [--json]
                                     its turns, oldest first: each prompt, tool
                                     call and answer (--limit: the last N)
       acphost sessions export ID|NAME|last [-o FILE]
                                     one JSON document of the record and its
                                     transcript (to stdout by default)
       acphost sessions import FILE|- [--force]
                                     add an exported session; its agent must be
                                     a named one you have (built in or in your
                                     config), whose command is then yours; an id
                                     already recorded needs --force
       acphost sessions prune [--older-than AGE] [--agent NAME] [--dry-run]
                                     forget sessions last used before AGE ago
                                     (default 30d; 12h, 90m too), never one an
                                     acphost process has open
       acphost sessions rm ID|NAME|last
                                     forget one (the agent keeps its own copy);
                                     its --worktree is removed when clean (and
                                     its branch, when it has no commit of its
                                     own), kept with a warning when not
       acphost cancel [ID|last]      stop the turn running in a session (default:
                                     last), as Ctrl-C in its acphost would

STATE says whether an acphost process has the session open, and whether a
turn runs in it. Each turn's prompt, tool calls and answer are kept in the
session's transcript (at most 1 MiB; the oldest turns go first), which rm
and prune remove with the record; --no-store records nothing.

acphost --resume ID|NAME|last continues one; "last" is the most recent in
the current directory, NAME a session's -s name there, and an id may be
shortened to a unique prefix.
`

// Command is "acphost sessions".
func Command(args []string, stdout, stderr io.Writer, agents Agents) int {
	st, err := state.Open()
	if err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitcode.Failed
	}
	switch {
	case len(args) == 0 || (len(args) == 1 && args[0] == "--json"):
		recs, err := st.List()
		if err != nil {
			fmt.Fprintln(stderr, "acphost:", err)
			return exitcode.Failed
		}
		if len(args) == 1 {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if recs == nil {
				recs = []state.Record{}
			}
			_ = enc.Encode(recs)
			return exitcode.OK
		}
		if len(recs) == 0 {
			fmt.Fprintf(stdout, "no sessions recorded yet (%s)\n", st.Path())
			return exitcode.OK
		}
		Print(stdout, recs, "")
		return exitcode.OK
	case args[0] == "-h" || args[0] == "--help":
		fmt.Fprint(stdout, sessionsUsage)
		return exitcode.OK
	case args[0] == "show":
		return subcommand("show", stdout, stderr, func() error { return sessionsShow(st, args[1:], stdout, agents) })
	case args[0] == "history":
		return subcommand("history", stdout, stderr, func() error { return sessionsHistory(st, args[1:], stdout) })
	case args[0] == "export":
		return subcommand("export", stdout, stderr, func() error { return sessionsExport(st, args[1:], stdout) })
	case args[0] == "import":
		return subcommand("import", stdout, stderr, func() error { return sessionsImport(st, args[1:], os.Stdin, stdout, stderr, agents) })
	case args[0] == "prune":
		return subcommand("prune", stdout, stderr, func() error { return sessionsPrune(st, args[1:], stdout) })
	case args[0] == "rm" && len(args) == 2:
		return sessionsRm(st, args[1], stdout, stderr)
	}
	fmt.Fprint(stderr, sessionsUsage)
	return exitcode.Usage
}

// Print writes a table of records, marking the current one.
func Print(w io.Writer, recs []state.Record, current string) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	names := slices.ContainsFunc(recs, func(r state.Record) bool { return r.Name != "" })
	head := "  ID\tAGENT\tLAST USED\tSTATE\tDIRECTORY\tTITLE"
	if names { // the column only when a session has a name
		head = "  ID\tNAME\tAGENT\tLAST USED\tSTATE\tDIRECTORY\tTITLE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range recs {
		mark := " "
		if r.ID == current {
			mark = "*"
		}
		st := LiveState(r)
		if st == "" {
			st = "-"
		}
		id := tty.OneLine(acp.SafeText(r.ID), 40)
		if names {
			name := tty.OneLine(acp.SafeText(r.Name), 30)
			if name == "" {
				name = "-"
			}
			id += "\t" + name
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\t%s\t%s\n", mark, id, acp.SafeText(r.AgentLabel()),
			tty.Ago(r.LastUsed), st, acp.SafeText(r.Cwd), tty.OneLine(acp.SafeText(r.Title), 50))
	}
	tw.Flush()
}

const cancelUsage = `Usage: acphost cancel [ID|last]

Stops the turn running in a recorded session, from another shell: it asks
the acphost process that has the session open, over that process's control
socket (its path is in the session store), to cancel the turn as Ctrl-C in
it would: the turn is cancelled, the agent stays, and that acphost goes on
with its next prompt. No signal is sent to anything. ID defaults to last,
the most recently used session in the current directory.
`

// Cancel is "acphost cancel [ID|last]".
func Cancel(args []string, stdout, stderr io.Writer) int {
	id := "last"
	switch {
	case len(args) == 1 && (args[0] == "-h" || args[0] == "--help"):
		fmt.Fprint(stdout, cancelUsage)
		return exitcode.OK
	case len(args) == 1:
		id = args[0]
	case len(args) > 1:
		fmt.Fprint(stderr, cancelUsage)
		return exitcode.Usage
	}
	st, err := state.Open()
	if err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitcode.Failed
	}
	r, err := lookupHere(st, id)
	if err != nil {
		fmt.Fprintln(stderr, "acphost: cancel:", err)
		return exitcode.Failed
	}
	sid := acp.SafeText(r.ID)
	rep, err := control.Ask(r.Control, control.Request{Op: control.OpCancel, Session: r.ID})
	switch {
	case errors.Is(err, control.ErrNoController):
		fmt.Fprintf(stderr, "acphost: cancel: no acphost process has session %s open (no control socket answers; nothing was signalled)\n", sid)
		return exitcode.Failed
	case err != nil:
		fmt.Fprintf(stderr, "acphost: cancel: session %s: %s\n", sid, tty.ErrMsg(err))
		return exitcode.Failed
	case !rep.Running:
		fmt.Fprintf(stderr, "acphost: cancel: no turn is running in session %s (acphost pid %d has it open)\n", sid, rep.PID)
		return exitcode.Failed
	}
	fmt.Fprintf(stdout, "cancelling the turn of session %s (acphost pid %d)\n", sid, rep.PID)
	return exitcode.OK
}

// LiveState says whether a live acphost process holds r's session and
// runs a turn in it ("" for neither).
func LiveState(r state.Record) string {
	if r.PID == 0 || !state.ProcessAlive(r.PID) {
		return ""
	}
	if _, err := os.Lstat(r.Control); r.Control != "" && err != nil {
		return "" // its control socket is gone: the pid is someone else's now
	}
	if !r.TurnSince.IsZero() {
		return fmt.Sprintf("turn running %s (pid %d)", tty.FormatDuration(time.Since(r.TurnSince)), r.PID)
	}
	return fmt.Sprintf("open (pid %d)", r.PID)
}

// TurnEntries is the transcript of one turn.
func TurnEntries(prompt string, since time.Time, r render.TurnResult, refused map[string]string) []state.Entry {
	now := time.Now()
	es := []state.Entry{{Time: since, Type: state.EntryPrompt, Text: prompt}}
	tools := r.Resp.ToolCalls
	omitted := 0
	if len(tools) > state.MaxTranscriptTools {
		omitted = len(tools) - state.MaxTranscriptTools
		tools = tools[:state.MaxTranscriptTools]
	}
	for _, tc := range tools {
		es = append(es, state.Entry{Time: now, Type: state.EntryTool, Title: tc.Title, Kind: string(tc.Kind), Status: string(tc.Status), Refused: refused[tc.ID]})
	}
	if text := strings.TrimSpace(r.Resp.Text); text != "" {
		es = append(es, state.Entry{Time: now, Type: state.EntryAnswer, Text: text})
	}
	end := state.Entry{Time: now, Type: state.EntryEnd, Stop: string(r.Stop), Ms: r.Elapsed.Milliseconds(), Omitted: omitted}
	if r.Err != nil && !r.UserCancel {
		end.Error = tty.Dedupe(r.Err.Error())
	}
	return append(es, end)
}
