package main

import (
	"os"
	"slices"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// useEditor sets up the line editor: standard input and output are a
// terminal. A stderr on the same terminal writes above the edited line.
func (a *app) useEditor(stdin, stdout, stderr *os.File) {
	ed := tty.NewEditor(stdin, stdout, nil, func() { a.onSignal(os.Interrupt, false) })
	ed.SetComplete(func(line string, pos int, key rune) (string, int, bool) {
		if key != tty.KeyInterrupt {
			return a.complete(line, pos, key)
		}
		// Ctrl-C between turns, as a shell does: a line with text is
		// cleared, an empty one quits (off the Terminal's goroutine:
		// quitting closes the agent).
		if line != "" {
			return "", 0, true
		}
		go a.quitOnInterrupt()
		return "", 0, true
	})
	a.ed = ed
	a.output.out.UseEditor(ed, func() string {
		if a.in.Busy() {
			return a.output.out.Style(tty.StyleDim, "queue>") + " "
		}
		return a.output.out.Style(tty.StyleBold, ">") + " "
	})
	a.in.Source = func(in *tty.Inbox) {
		ed.SetHistory(a.openHistory())
		ed.Run(in, a.output.out)
	}
	if tty.IsTerminal(stderr) && sameFile(stdout, stderr) {
		a.output.errs = tty.NewScreen(a.output.out.Above(stderr), a.output.errs.HasColor(), false)
		a.elicitor.errs = a.output.errs
	}
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
func (a *app) openHistory() *state.History {
	dir := ""
	if a.store != nil {
		dir = a.store.Dir
	}
	h, err := state.OpenHistory(dir, agentHistoryKey(a.cfg.agentName, a.cfg.agent))
	if err != nil {
		a.output.diag(tty.StyleYellow, "history: %v; prompts are remembered in this run only", err)
		h = &state.History{}
	}
	return h
}

func (a *app) closeEditor() {
	if a.ed == nil {
		return
	}
	a.output.out.CloseEditor()
	a.ed.Close()
}

// complete is the editor's Tab: it completes the in-chat commands, the
// agent's own commands, mode ids after /mode, session ids after /resume,
// option ids after /config and on|off after /plan. Several candidates
// extend the word to what they share, or are listed.
func (a *app) complete(line string, pos int, key rune) (string, int, bool) {
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
		for _, c := range a.agentCommands() {
			if !slices.Contains(cands, c) {
				cands = append(cands, c)
			}
		}
	} else {
		if strings.Contains(arg, " ") {
			return "", 0, false
		}
		word, before = arg, "/"+cmd+" "
		cands = a.argCandidates(cmd)
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
	a.output.out.Line(tty.StyleDim, strings.Join(list, "  "))
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
func (a *app) agentCommands() []string {
	sess := a.live.session()
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
	return s != "" && acphost.SafeText(s) == s && !strings.ContainsAny(s, " \t")
}

func (a *app) argCandidates(cmd string) []string {
	sess := a.live.session()
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
		if a.store != nil {
			if recs, err := a.store.List(); err == nil {
				for _, r := range a.thisAgent(recs) {
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
		agentName = demoAgent
	}
	return state.HistoryKey(agentName, command)
}
