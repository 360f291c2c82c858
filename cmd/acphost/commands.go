package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/configopt"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// hostCommands are the in-chat commands acphost itself answers; any other
// /word goes to the agent as the prompt (its own slash commands). Where
// the agent has a command of the same name (Claude's /config, /help …),
// acphost's wins, so that a command means the same on every agent, and
// //name sends the agent's: /help lists it so, and using acphost's says
// so once.
var hostCommands = []struct{ name, args, help string }{
	{"mode", "[ID]", "list the agent's modes (* current), or switch to one"},
	{"config", "[KEY VALUE]", "list the session's config options (model, effort …), or set one"},
	{"plan", "on|off", "host plan mode: reject every tool that can change something, and file writes"},
	{"sessions", "", "the sessions recorded for this agent"},
	{"new", "", "start a new session on the same agent"},
	{"resume", "ID", "continue a recorded session of this agent"},
	{"cancel", "", "stop the running turn (typed while it runs; Ctrl-C does too)"},
	{"help", "", "this list, and the agent's own commands"},
	{"quit", "", "close the agent and exit"},
}

// commandTimeout bounds an in-chat command's call to the agent.
const commandTimeout = time.Minute

// command runs an in-chat command. It returns the prompt to send when the
// line is for the agent (its own slash command, or "//text" for "/text").
func (a *app) command(client *acphost.ACPClient, line string) (prompt string, send bool) {
	if strings.HasPrefix(line, "//") {
		return line[1:], true
	}
	name, rest, _ := strings.Cut(line[1:], " ")
	args := strings.Fields(rest)
	sess := a.live.session()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	if name != "help" && isHostCommand(name) && agentHas(sess, name) && !a.shadowNoted[name] {
		if a.shadowNoted == nil {
			a.shadowNoted = map[string]bool{}
		}
		a.shadowNoted[name] = true
		defer a.output.note(tty.StyleDim, "this is acphost's /"+name+"; the agent has a /"+name+" of its own: //"+name+" sends it")
	}
	switch name {
	case "help", "?":
		a.help(sess)
	case "quit", "exit":
		a.signals.on(nil, true)
	case "cancel":
		a.output.note(tty.StyleDim, "no turn is running")
	case "mode":
		a.modeCmd(sess, args)
	case "config":
		a.configCmd(ctx, sess, args)
	case "plan":
		switch {
		case len(args) == 1 && (args[0] == "on" || args[0] == "off"):
			client.SetPlanMode(args[0] == "on")
			if args[0] == "on" {
				a.output.note(tty.StyleYellow, "plan mode on: acphost rejects every tool that can change something, and file writes; "+planSwitchNote(sess.Enforcement()))
			} else {
				a.output.note(tty.StyleDim, "plan mode off: permission "+a.permissionLabel(client)+planOffNote(sess.Enforcement()))
			}
		default:
			a.output.note(tty.StyleDim, "plan mode is "+onOff(client.PlanMode())+" (/plan on|off)")
		}
	case "sessions":
		a.sessionsCmd(sess)
	case "new":
		s, err := client.NewSession(ctx, acphost.SessionOptions{})
		if err != nil {
			a.output.diag(tty.StyleRed, "/new: %s", tty.ErrMsg(err))
			break
		}
		a.useSession(s)
		a.output.note(tty.StyleDim, "new session "+acp.SafeText(s.ID()))
	case "resume":
		a.resumeCmd(client, args)
	default:
		if cmds := sess.Details().Commands; cmds != nil && !slices.ContainsFunc(cmds, func(c acp.AvailableCommand) bool { return c.Name == name }) {
			a.output.note(tty.StyleYellow, fmt.Sprintf("/%s is neither an acphost command nor one of the agent's; /help lists them (//%s sends it as text)",
				tty.OneLine(acp.SafeText(name), 40), tty.OneLine(acp.SafeText(name), 40)))
			return "", false
		}
		return line, true // the agent's own command: the prompt text
	}
	return "", false
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// isHostCommand reports whether acphost answers /name itself.
func isHostCommand(name string) bool {
	if name == "exit" || name == "?" {
		return true
	}
	return slices.ContainsFunc(hostCommands, func(c struct{ name, args, help string }) bool { return c.name == name })
}

// agentHas reports whether the agent advertised the command name.
func agentHas(sess *acphost.Session, name string) bool {
	if sess == nil {
		return false
	}
	return slices.ContainsFunc(sess.Details().Commands, func(c acp.AvailableCommand) bool { return c.Name == name })
}

func (a *app) help(sess *acphost.Session) {
	var b strings.Builder
	b.WriteString("acphost commands:\n")
	var rows [][2]string
	for _, c := range hostCommands {
		rows = append(rows, [2]string{"/" + strings.TrimSpace(c.name+" "+c.args), c.help})
	}
	writeColumns(&b, rows)
	cmds := sess.Details().Commands
	if len(cmds) > 0 {
		b.WriteString("the agent's commands (sent to it as the prompt):\n")
		rows = rows[:0]
		for _, c := range cmds {
			n := tty.OneLine(acp.SafeText(c.Name), 30)
			if h := tty.OneLine(acp.SafeText(c.InputHint), 30); h != "" {
				n += " " + h
			}
			slash := "/"
			if isHostCommand(c.Name) {
				slash = "//" // acphost's own /name comes first
			}
			rows = append(rows, [2]string{slash + n, tty.OneLine(acp.SafeText(c.Description), 80)})
		}
		writeColumns(&b, rows)
	} else {
		b.WriteString("the agent has published no commands of its own\n")
	}
	b.WriteString("A prompt typed while a turn runs is queued; Ctrl-C stops the turn, twice quits. //text sends /text (the agent's own command where acphost has one of the same name).")
	a.output.note("", b.String())
}

func (a *app) modeCmd(sess *acphost.Session, args []string) {
	modes, _ := sessionModes(sess)
	if len(args) == 0 {
		if len(modes.AvailableModes) == 0 {
			a.output.note(tty.StyleDim, "the agent offers no modes")
			return
		}
		var b strings.Builder
		var rows [][2]string
		for _, m := range modes.AvailableModes {
			mark := " "
			if m.ID == modes.CurrentModeID {
				mark = "*"
			}
			left := mark + " " + tty.OneLine(acp.SafeText(m.ID), 40)
			var right string
			if n := tty.OneLine(acp.SafeText(m.Name), 40); n != "" && n != m.ID {
				right = n
			}
			if d := tty.OneLine(acp.SafeText(m.Description), 80); d != "" {
				right = strings.TrimSpace(right + " — " + d)
			}
			rows = append(rows, [2]string{left, right})
		}
		writeColumns(&b, rows)
		a.output.note("", strings.TrimRight(b.String(), "\n"))
		return
	}
	if err := a.setMode(sess, args[0]); err != nil {
		a.output.diag(tty.StyleRed, "/mode %s: %s", acp.SafeText(args[0]), tty.ErrMsg(err))
		return
	}
	if note := heldModeNote(sess.Enforcement(), args[0]); note != "" {
		a.output.note(tty.StyleDim, "/mode "+note)
		a.record()
		return
	}
	a.output.note(tty.StyleDim, "mode: "+acp.SafeText(args[0]))
	if a.output.human != nil {
		a.output.human.SetMode(args[0])
	}
	a.record()
}

func (a *app) configCmd(ctx context.Context, sess *acphost.Session, args []string) {
	opts := sess.ConfigOptions()
	switch len(args) {
	case 0:
		if len(opts) == 0 {
			a.output.note(tty.StyleDim, "the agent offers no config options")
			return
		}
		a.output.note("", configopt.List(opts)+"/config KEY VALUE sets one")
		return
	case 2:
	default:
		a.output.note(tty.StyleYellow, "/config KEY VALUE (or /config to list them)")
		return
	}
	now, err := configopt.SetOption(ctx, sess, args[0], args[1])
	if errors.Is(err, configopt.ErrNoOption) {
		a.output.diag(tty.StyleRed, "/config %s: no such option (/config lists them)", acp.SafeText(args[0]))
		return
	}
	if err != nil {
		a.output.diag(tty.StyleRed, "/config %s: %s", acp.SafeText(args[0]), tty.ErrMsg(err))
		return
	}
	a.output.note(tty.StyleDim, acp.SafeText(args[0])+" = "+now)
}

// agentSessions lists this agent's recorded sessions; ok is false (and
// the reason shown) when there are none to list.
func (a *app) agentSessions() (recs []state.Record, ok bool) {
	if a.store == nil {
		a.output.note(tty.StyleDim, "sessions are not recorded (--no-store)")
		return nil, false
	}
	recs, err := a.store.List()
	if err != nil {
		a.output.diag(tty.StyleRed, "%v", err)
		return nil, false
	}
	return thisAgent(a.cfg, recs), true
}

func (a *app) sessionsCmd(sess *acphost.Session) {
	recs, ok := a.agentSessions()
	if !ok {
		return
	}
	if len(recs) == 0 {
		a.output.note(tty.StyleDim, "no sessions recorded for this agent")
		return
	}
	var b strings.Builder
	sessions.Print(&b, recs, sess.ID())
	a.output.note("", strings.TrimRight(b.String(), "\n")+"\n/resume ID continues one")
}

func (a *app) resumeCmd(client *acphost.ACPClient, args []string) {
	if len(args) != 1 {
		a.output.note(tty.StyleYellow, "/resume ID (/sessions lists them)")
		return
	}
	recs, ok := a.agentSessions()
	if !ok {
		return
	}
	i, err := state.Find(recs, args[0], a.cwd)
	if err != nil {
		a.output.diag(tty.StyleRed, "/resume: %v", err)
		return
	}
	if recs[i].ID == a.live.session().ID() {
		a.output.note(tty.StyleDim, "that is the current session")
		return
	}
	if err := openElsewhere(recs[i]); err != nil {
		a.output.diag(tty.StyleRed, "/resume: %v", err)
		return
	}
	s, err := a.openRecorded(client, recs[i])
	if err != nil {
		if errors.Is(err, acphost.ErrUnsupported) {
			err = errors.New("the agent offers neither session/load nor session/resume")
		}
		a.output.diag(tty.StyleRed, "/resume: %s", tty.ErrMsg(err))
		return
	}
	a.useSession(s)
}

// planSwitchNote says what /plan on does beyond the host's rejections,
// before the next prompt: the agent's own plan mode, the kernel layer.
func planSwitchNote(e acphost.Enforcement) string {
	var parts []string
	if e.PlanModeID != "" {
		parts = append(parts, "the agent is put in its mode "+acp.SafeText(e.PlanModeID))
	} else {
		parts = append(parts, "the agent offers no plan mode")
	}
	switch {
	case e.Kernel:
	case strings.Contains(e.KernelReason, "restarted"):
		parts = append(parts, "it is restarted under the kernel layer (Landlock)")
	default:
		parts = append(parts, "not kernel-enforced: "+e.KernelReason)
	}
	return strings.Join(parts, " and ") + " before the next prompt"
}

// heldModeNote says, when plan mode kept the agent in its plan mode
// although mode id was asked for, that id is set once plan mode is off;
// "" when the mode was set.
func heldModeNote(e acphost.Enforcement, id string) string {
	if !e.PlanMode || e.RestoreMode != id || e.Mode == id {
		return ""
	}
	return acp.SafeText(id) + ": plan mode keeps the agent in its mode " + acp.SafeText(e.Mode) + "; " + acp.SafeText(id) + " is set once plan mode is off"
}

// planOffNote says what /plan off does before the next prompt: the mode
// the agent is put back in, the restart out of the kernel layer.
func planOffNote(e acphost.Enforcement) string {
	var parts []string
	if e.RestoreMode != "" && e.RestoreMode != e.Mode {
		parts = append(parts, "the agent is put back in its mode "+acp.SafeText(e.RestoreMode))
	}
	if e.Kernel {
		parts = append(parts, "it is restarted outside the kernel layer")
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, " and ") + " before the next prompt"
}

// maxColumn is the widest first column writeColumns pads to; a longer
// entry has its second column on a line of its own, under the others.
const maxColumn = 28

// writeColumns writes rows as two aligned columns, indented two spaces:
// the first padded to the widest entry (at most maxColumn).
func writeColumns(b *strings.Builder, rows [][2]string) {
	width := 0
	for _, r := range rows {
		if n := utf8.RuneCountInString(r[0]); n <= maxColumn {
			width = max(width, n)
		}
	}
	for _, r := range rows {
		n := utf8.RuneCountInString(r[0])
		switch {
		case r[1] == "":
			b.WriteString("  " + r[0] + "\n")
		case n > width:
			b.WriteString("  " + r[0] + "\n  " + strings.Repeat(" ", width) + "  " + r[1] + "\n")
		default:
			b.WriteString("  " + r[0] + strings.Repeat(" ", width-n) + "  " + r[1] + "\n")
		}
	}
}
