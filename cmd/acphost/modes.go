package main

import (
	"context"

	"github.com/acphost/acphost"
)

// sessionModes is the session's modes as /mode, --mode and the header
// offer them: the agent's ACP modes, else the choices of its config
// option of category "mode" (opencode offers modes only so). optionID
// names that option ("" for ACP modes), which setting a mode then sets.
func sessionModes(sess *acphost.Session) (modes acphost.SessionModes, optionID string) {
	modes = sess.Modes()
	if len(modes.AvailableModes) > 0 {
		return modes, ""
	}
	for _, o := range sess.ConfigOptions() {
		if o.Category != acphost.CategoryMode || len(o.Choices) == 0 {
			continue
		}
		for _, c := range o.Choices {
			modes.AvailableModes = append(modes.AvailableModes, acphost.SessionMode{ID: c.Value, Name: c.Name, Description: c.Description})
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
