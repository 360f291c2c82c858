package main

import (
	"context"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// sessionModes is the session's modes as /mode, --mode and the header
// offer them: the agent's ACP modes, else the choices of its config
// option of category "mode" (opencode offers modes only so). optionID
// names that option ("" for ACP modes), which setting a mode then sets.
func sessionModes(sess *acphost.Session) (modes acp.SessionModes, optionID string) {
	modes = sess.Modes()
	if len(modes.AvailableModes) > 0 {
		return modes, ""
	}
	for _, o := range sess.ConfigOptions() {
		if o.Category != acp.CategoryMode || len(o.Choices) == 0 {
			continue
		}
		for _, c := range o.Choices {
			modes.AvailableModes = append(modes.AvailableModes, acp.SessionMode{ID: c.Value, Name: c.Name, Description: c.Description})
		}
		if v := o.Current(); v != "" {
			modes.CurrentModeID = v
		}
		return modes, o.ID
	}
	return modes, ""
}

// switchMode sets the session's mode id: with session/set_mode, or by the
// config option the modes come from.
func switchMode(ctx context.Context, sess *acphost.Session, optionID, id string) error {
	if optionID == "" {
		return sess.SetMode(ctx, id)
	}
	_, err := sess.SetConfigOption(ctx, optionID, id)
	return err
}

// modeList is "default (Default), plan (Plan)".
func modeList(modes acp.SessionModes) string {
	var parts []string
	for _, m := range modes.AvailableModes {
		p := acp.SafeText(m.ID)
		if n := tty.OneLine(acp.SafeText(m.Name), 40); n != "" && n != p {
			p += " (" + n + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// currentMode names the session's current mode, with its description: an
// agent's own mode (Claude's "auto", say) may run tools without asking,
// whatever the host's permission policy.
func currentMode(modes acp.SessionModes) string {
	if modes.CurrentModeID == "" {
		return ""
	}
	s := tty.OneLine(acp.SafeText(modes.CurrentModeID), 64) // the agent's word, any length
	for _, m := range modes.AvailableModes {
		if m.ID == modes.CurrentModeID {
			if d := tty.OneLine(acp.SafeText(m.Description), 80); d != "" {
				s += " (" + d + ")"
			} else if n := tty.OneLine(acp.SafeText(m.Name), 40); n != "" && n != m.ID {
				s += " (" + n + ")"
			}
		}
	}
	return s
}
