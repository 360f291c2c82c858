package main

import (
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// lineEditor is the chat's line editor at a terminal: the tty.Editor,
// Tab's completions and the prompt history. Its completions run on the
// editor's goroutine; interrupt on the signal's.
type lineEditor struct {
	ed       *tty.Editor
	output   *output      // the screen it edits on, where candidates are listed
	chatting atomic.Bool  // the chat reads prompts (a Ctrl-C between turns goes to the editor)
	cfg      *config      // the agent: its sessions, its history (read once the run has resolved it)
	store    *state.Store // nil: sessions are not recorded
	live     *liveSession // the session whose commands, modes and options complete
}

// newLineEditor sets up the line editor: standard input and output are a
// terminal (o.out's). interrupt is a Ctrl-C the editor reads, quit one at
// an empty line (run off the editor's goroutine: quitting closes the
// agent). A stderr on the same terminal writes above the edited line.
func newLineEditor(stdin, stdout, stderr *os.File, in *tty.Inbox, o *output, cfg *config, store *state.Store, live *liveSession, interrupt, quit func()) *lineEditor {
	e := &lineEditor{output: o, cfg: cfg, store: store, live: live}
	ed := tty.NewEditor(stdin, stdout, nil, interrupt)
	ed.SetComplete(func(line string, pos int, key rune) (string, int, bool) {
		if key != tty.KeyInterrupt {
			return e.complete(line, pos, key)
		}
		// Ctrl-C between turns, as a shell does: a line with text is
		// cleared, an empty one quits (off the Terminal's goroutine:
		// quitting closes the agent).
		if line != "" {
			return "", 0, true
		}
		go quit()
		return "", 0, true
	})
	e.ed = ed
	o.out.UseEditor(ed, func() string {
		if in.Busy() {
			return o.out.Style(tty.StyleDim, "queue>") + " "
		}
		return o.out.Style(tty.StyleBold, ">") + " "
	})
	in.Source = func(in *tty.Inbox) {
		ed.SetHistory(e.openHistory())
		ed.Run(in, o.out)
	}
	if tty.IsTerminal(stderr) && sameFile(stdout, stderr) {
		o.errs = tty.NewScreen(o.out.Above(stderr), o.errs.HasColor(), false)
	}
	return e
}

func sameFile(f, g *os.File) bool {
	fi, err1 := f.Stat()
	gi, err2 := g.Stat()
	if err1 != nil || err2 != nil {
		return true // both terminals: most likely the same one
	}
	return os.SameFile(fi, gi)
}

// openHistory opens the history of the agent that runs: in the state
// directory, or in memory only with --no-store.
func (e *lineEditor) openHistory() *state.History {
	dir := ""
	if e.store != nil {
		dir = e.store.Dir
	}
	h, err := state.OpenHistory(dir, agentHistoryKey(e.cfg.agentName, e.cfg.agent))
	if err != nil {
		e.output.diag(tty.StyleYellow, "history: %v; prompts are remembered in this run only", err)
		h = &state.History{}
	}
	return h
}

// interrupt hands a Ctrl-C between turns to the editor: it clears the
// line, or quits at an empty one (false while a turn runs).
func (e *lineEditor) interrupt() bool { return e.chatting.Load() && e.ed.InterruptLine() }

func (e *lineEditor) close() {
	e.output.out.CloseEditor()
	e.ed.Close()
}

// complete is the editor's Tab: it completes the in-chat commands, the
// agent's own commands, mode ids after /mode, session ids after /resume,
// option ids after /config and on|off after /plan. Several candidates
// extend the word to what they share, or are listed.
func (e *lineEditor) complete(line string, pos int, key rune) (string, int, bool) {
	if key != '\t' {
		return "", 0, false
	}
	head, tail := line[:pos], line[pos:]
	if !strings.HasPrefix(head, "/") || strings.HasPrefix(head, "//") {
		return "", 0, false
	}
	var word, before string
	var cands []string
	cmd, arg, spaced := strings.Cut(head[1:], " ")
	if !spaced {
		word, before = cmd, "/"
		for _, c := range hostCommands {
			cands = append(cands, c.name)
		}
		for _, c := range e.agentCommands() {
			if !slices.Contains(cands, c) {
				cands = append(cands, c)
			}
		}
	} else {
		if strings.Contains(arg, " ") {
			return "", 0, false
		}
		word, before = arg, "/"+cmd+" "
		cands = e.argCandidates(cmd)
	}
	var hits []string
	for _, c := range cands {
		if strings.HasPrefix(c, word) {
			hits = append(hits, c)
		}
	}
	switch len(hits) {
	case 0:
		return "", 0, false
	case 1:
		done := before + hits[0]
		if !spaced && takesArgs(hits[0]) && !strings.HasPrefix(tail, " ") {
			done += " "
		}
		return done + tail, len(done), true
	}
	if p := commonPrefix(hits); len(p) > len(word) {
		return before + p + tail, len(before + p), true
	}
	slices.Sort(hits)
	list := make([]string, len(hits))
	for i, h := range hits {
		if !spaced {
			h = "/" + h
		}
		list[i] = h
	}
	e.output.out.Line(tty.StyleDim, strings.Join(list, "  "))
	return line, pos, true
}

// takesArgs reports whether a command is completed with a space after it.
func takesArgs(name string) bool {
	for _, c := range hostCommands {
		if c.name == name {
			return c.args != ""
		}
	}
	return true // the agent's own: its input follows
}

// agentCommands are the agent's own commands that can be typed back as
// they are.
func (e *lineEditor) agentCommands() []string {
	sess := e.live.session()
	if sess == nil {
		return nil
	}
	var names []string
	for _, c := range sess.Details().Commands {
		if typable(c.Name) {
			names = append(names, c.Name)
		}
	}
	return names
}

// typable: a word the editor may put on the line (no control or
// formatting characters, no spaces).
func typable(s string) bool {
	return s != "" && acp.SafeText(s) == s && !strings.ContainsAny(s, " \t")
}

func (e *lineEditor) argCandidates(cmd string) []string {
	sess := e.live.session()
	var out []string
	add := func(s string) {
		if typable(s) {
			out = append(out, s)
		}
	}
	switch cmd {
	case "mode":
		if sess != nil {
			modes, _ := sessionModes(sess)
			for _, m := range modes.AvailableModes {
				add(m.ID)
			}
		}
	case "config":
		if sess != nil {
			for _, o := range sess.ConfigOptions() {
				add(o.ID)
			}
		}
	case "plan":
		out = []string{"on", "off"}
	case "resume":
		if e.store != nil {
			if recs, err := e.store.List(); err == nil {
				for _, r := range thisAgent(*e.cfg, recs) {
					add(r.ID)
				}
			}
			add("last")
		}
	}
	return out
}

func commonPrefix(ss []string) string {
	p := ss[0]
	for _, s := range ss[1:] {
		for !strings.HasPrefix(s, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}

// agentHistoryKey names the agent's history file (see historyKey): the
// built-in agent's is "demo".
func agentHistoryKey(agentName string, command []string) string {
	if agentName == "" && len(command) == 0 {
		agentName = agents.Demo
	}
	return state.HistoryKey(agentName, command)
}
