package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

const loginUsage = `Usage: acphost login [--yes] [METHOD] [flags] [--agent NAME | -- AGENT [ARGS...]]

Logs in to an agent that opens no session until you do. Without METHOD it
lists the agent's login methods (and uses the only one, when there is one).
A terminal method runs the agent's own login program in this terminal (its
command and the arguments and environment the agent asks for, shown first;
it runs once you say y, or at once with --yes); any other is
sent to the agent with authenticate, which does the rest (a browser, a
device code). Then a session is opened to check the login took.
The agent's flags (--agent, --cwd, --ssh …) are those of acphost itself.
`

// loginRun is what acphost login was asked: the method, "" to list them;
// or logout.
type loginRun struct {
	method string
	logout bool
	yes    bool // --yes: run a terminal login without asking
}

// logoutCmd is "acphost logout [flags] [-- AGENT ...]".
func logoutCmd(args []string, stdin, stdout, stderr *os.File) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprintln(stdout, "Usage: acphost logout [flags] [--agent NAME | -- AGENT [ARGS...]]\n\nEnds the agent's login, when the agent offers logout.")
		return exitOK
	}
	cfg, err := parseArgs(args, stderr, tty.IsTerminal(os.Stdin))
	if err != nil {
		fmt.Fprintln(stderr, "acphost logout:", err)
		return exitUsage
	}
	cfg.login, cfg.noStore = &loginRun{logout: true}, true
	return newApp(cfg, stdin, stdout, stderr).run()
}

// logout ends the agent's login.
func (a *app) logout(opts acphost.ACPOptions) int {
	client, err := a.start(opts)
	if ae := (*acphost.AuthError)(nil); errors.As(err, &ae) {
		a.output.note("", "the agent is not logged in")
		return exitOK
	}
	if err != nil {
		a.reportAgentError("could not start the agent", err)
		return exitFailed
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.startTimeout)
	defer cancel()
	if err := client.Logout(ctx); err != nil {
		a.output.diag(tty.StyleRed, "logout: %s", tty.ErrMsg(err))
		return exitFailed
	}
	a.output.note(tty.StyleGreen, "logged out")
	return exitOK
}

// loginCmd is "acphost login [METHOD] [flags] [-- AGENT ...]".
func loginCmd(args []string, stdin, stdout, stderr *os.File) int {
	var method string
	yes := false
	if i := slices.IndexFunc(args, func(s string) bool { return s == "--yes" || s == "-y" }); i >= 0 && !slices.Contains(args[:i], "--") {
		yes, args = true, slices.Delete(slices.Clone(args), i, i+1)
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		method, args = args[0], args[1:]
	}
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(stdout, loginUsage)
		return exitOK
	}
	cfg, err := parseArgs(args, stderr, tty.IsTerminal(os.Stdin))
	if err == nil && (len(cfg.prompts) > 0 || cfg.resume != "" || cfg.noWait) {
		err = errors.New("login takes no -p, --resume or --no-wait")
	}
	if err != nil {
		fmt.Fprintln(stderr, "acphost login:", err)
		fmt.Fprint(stderr, loginUsage)
		return exitUsage
	}
	cfg.login = &loginRun{method: method, yes: yes}
	cfg.noStore = true // the check's session is not a conversation
	return newApp(cfg, stdin, stdout, stderr).run()
}

// login logs in as acphost login was asked (see loginUsage).
func (a *app) login(opts acphost.ACPOptions) int {
	if a.cfg.login.logout {
		return a.logout(opts)
	}
	var methods []acp.AuthMethod
	var command func(id string) (string, []string, []string, error)
	client, err := a.start(opts)
	var ae *acphost.AuthError
	switch {
	case err == nil:
		methods, command = client.AuthMethods(), client.TerminalAuthCommand
		client.Close()
		if a.cfg.login.method != "" {
			break
		}
		refused := a.cfg.authRefusal()
		if refused.IsZero() {
			a.output.note("", "the agent opened a session: it needs no login now")
			a.output.note("", authMethodsText(methods))
			return exitOK
		}
		// Some agents (claude-agent-acp) open sessions and refuse the
		// prompt: the refusal acphost saw is the truth, not the session.
		a.output.note(tty.StyleYellow, "the agent opens a session, but refused a prompt for want of a login ("+refused.Local().Format("2006-01-02 15:04")+")")
		if len(methods) == 0 {
			if hint := a.cfg.loginHint(); hint != "" {
				a.output.note("", hint)
			} else {
				a.output.note("", "it offers no login method through ACP: log in with the agent's own program, then run a prompt again")
			}
			return exitFailed
		}
	case errors.As(err, &ae):
		methods, command = ae.Methods, ae.TerminalCommand
	default:
		a.reportAgentError("could not start the agent", err)
		return exitFailed
	}
	id := a.cfg.login.method
	if id == "" && len(methods) == 1 {
		id = methods[0].ID
	}
	i := slices.IndexFunc(methods, func(m acp.AuthMethod) bool { return m.ID == id })
	if i < 0 {
		if id != "" {
			a.output.diag(tty.StyleRed, "login: the agent has no method %q", acp.SafeText(id))
		} else {
			a.output.diag(tty.StyleYellow, "login: the agent needs a login; name one of its methods")
		}
		a.output.note("", authMethodsText(methods))
		return exitUsage
	}
	m := methods[i]
	if m.Type == "terminal" {
		if code := a.runTerminalLogin(m, command); code != exitOK {
			return code
		}
	} else {
		opts.AuthMethod = m.ID
	}
	client, err = a.start(opts)
	if err != nil {
		a.reportAgentError("still not logged in", err)
		return exitFailed
	}
	client.Close()
	a.cfg.markAuthRefused(false)
	a.output.note(tty.StyleGreen, "logged in with "+methodName(m.ID)+": a session opens")
	return exitOK
}

// runTerminalLogin runs the agent's login program for terminal method m
// in this terminal: the agent's own command with the arguments and
// environment the method names, run without a shell.
func (a *app) runTerminalLogin(m acp.AuthMethod, command func(string) (string, []string, []string, error)) int {
	if len(a.cfg.writable) > 0 {
		// The login runs as a program of its own, outside the agent's
		// confinement, with arguments and environment the agent chose.
		a.output.diag(tty.StyleRed, "login %s: a terminal login runs the agent's program outside --writable's confinement; run acphost login without --writable if you trust the agent that far", methodName(m.ID))
		return exitUsage
	}
	path, args, env, err := command(m.ID)
	if err != nil {
		a.output.diag(tty.StyleRed, "login %s: %s", methodName(m.ID), tty.ErrMsg(err))
		return exitFailed
	}
	words := []string{shownWord(path)}
	for _, arg := range args {
		words = append(words, shownWord(arg))
	}
	shown := strings.Join(words, " ")
	if len(m.Env) > 0 { // what the agent's method adds to the environment, shown
		var added []string
		for _, k := range slices.Sorted(maps.Keys(m.Env)) {
			added = append(added, shownWord(k)+"="+shownWord(m.Env[k]))
		}
		shown = "env " + strings.Join(added, " ") + " " + shown
	}
	if !a.cfg.login.yes && !a.confirm("the agent's login ("+methodName(m.ID)+") would run: "+shown) {
		return exitUsage
	}
	a.output.note(tty.StyleDim, "running the agent's login ("+methodName(m.ID)+"): "+shown)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if a.cfg.cwd != "" {
		cmd.Dir = a.cfg.cwd
	}
	if err := cmd.Run(); err != nil {
		a.output.diag(tty.StyleRed, "the agent's login did not succeed: %v", err)
		return exitFailed
	}
	return exitOK
}

// confirm shows what would run and asks the person at the terminal, y or
// n, reading their line straight from stdin (the login program needs the
// terminal next, so no reader may be left behind). Without a terminal it
// refuses, unless --yes.
func (a *app) confirm(what string) bool {
	if !a.stdinTTY {
		a.output.diag(tty.StyleRed, "%s; nobody is at a terminal to say yes: pass --yes to run it without asking", what)
		return false
	}
	a.output.note("", what)
	a.output.errs.Line(tty.StyleAsk, "run it? [y/N]")
	var line []byte
	b := make([]byte, 1)
	for len(line) < 64 {
		if n, err := os.Stdin.Read(b); n == 0 || err != nil || b[0] == '\n' {
			break
		}
		line = append(line, b[0])
	}
	switch strings.ToLower(strings.TrimSpace(string(line))) {
	case "y", "yes":
		return true
	}
	a.output.note(tty.StyleYellow, "not run")
	return false
}

// authMethodsText is the agent's login methods and how to use each.
func authMethodsText(methods []acp.AuthMethod) string {
	if len(methods) == 0 {
		return "the agent offers no login methods"
	}
	var b strings.Builder
	b.WriteString("the agent's login methods:\n")
	for _, m := range methods {
		line := "  " + methodName(m.ID)
		if n := tty.OneLine(acp.SafeText(m.Name), 60); n != "" && n != m.ID {
			line += " (" + n + ")"
		}
		if m.Type == "terminal" {
			line += " — runs the agent's login in this terminal"
		} else {
			line += " — the agent logs you in itself"
		}
		if d := tty.OneLine(acp.SafeText(m.Description), 100); d != "" {
			line += ": " + d
		}
		b.WriteString(line + "\n")
	}
	b.WriteString("acphost login METHOD, with the agent's flags, logs in with one")
	return b.String()
}

// shownWord is one of the agent's words (an argument, an environment
// variable, a method id) as the terminal shows it: as it is when plain,
// else quoted, so that it stays on its line and what is shown is what runs.
func shownWord(s string) string {
	if s != "" && acp.SafeText(s) == s && !strings.ContainsAny(s, " \t\n\"'\\") {
		return s
	}
	return strconv.Quote(s)
}

// methodName is the agent's method id as a line shows it: cut at 64
// bytes, and quoted unless plain.
func methodName(id string) string {
	if len(id) > 64 {
		return shownWord(state.Clip(id, 64)) + "…"
	}
	return shownWord(id)
}
