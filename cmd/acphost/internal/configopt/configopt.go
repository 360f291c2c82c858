// Package configopt is a session's config options as the person sets
// them: --set KEY=VALUE and the config file's (Set), and /config, which
// lists them (List) and sets one (SetOption), a value checked against what
// the agent offers first. Every agent string shown goes through
// acp.SafeText.
package configopt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// Set is one session config option to set once the session opens: from
// --set (a failure is a usage error) or from the config file (Soft: a
// failure is a warning, as an agent may not offer the option).
type Set struct {
	Key, Value string
	Soft       bool
}

// ParseSets reads --set KEY=VALUE flags; a key set twice keeps the last.
func ParseSets(flags []string) ([]Set, error) {
	var sets []Set
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want key=value", kv)
		}
		sets = slices.DeleteFunc(sets, func(s Set) bool { return s.Key == k })
		sets = append(sets, Set{Key: k, Value: v})
	}
	return sets, nil
}

// AddSoft adds the config file's options whose keys nothing set yet,
// in key order.
func AddSoft(sets []Set, m map[string]string) []Set {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.ContainsFunc(sets, func(s Set) bool { return s.Key == k }) {
			sets = append(sets, Set{Key: k, Value: m[k], Soft: true})
		}
	}
	return sets
}

// ErrNoOption is a key the agent does not offer.
var ErrNoOption = errors.New("no such option")

// Session is the session whose options are set (an *acphost.Session).
type Session interface {
	ConfigOptions() []acp.ConfigOption
	SetConfigOption(ctx context.Context, configID string, value any) ([]acp.ConfigOption, error)
}

// SetOption sets one of the session's config options after checking the
// value against what the agent offers, and returns the value it now has.
func SetOption(ctx context.Context, sess Session, key, value string) (string, error) {
	opts := sess.ConfigOptions()
	i := slices.IndexFunc(opts, func(o acp.ConfigOption) bool { return o.ID == key })
	if i < 0 {
		if len(opts) == 0 {
			return "", fmt.Errorf("%w: the agent offers no config options", ErrNoOption)
		}
		ids := make([]string, len(opts))
		for j, o := range opts {
			ids[j] = o.ID
		}
		return "", fmt.Errorf("%w; the agent's: %s", ErrNoOption, agentList(ids))
	}
	var v any = value
	if opts[i].Type == "boolean" {
		b, err := parseOnOff(value)
		if err != nil {
			return "", err
		}
		v = b
	} else if vals := configValues(opts[i]); len(vals) > 0 && !slices.Contains(vals, value) {
		return "", fmt.Errorf("%s is not one of %s", acp.SafeText(value), agentList(vals))
	}
	opts, err := sess.SetConfigOption(ctx, key, v)
	if err != nil {
		return "", err
	}
	now := acp.SafeText(value)
	if j := slices.IndexFunc(opts, func(o acp.ConfigOption) bool { return o.ID == key }); j >= 0 && len(opts[j].CurrentValue) > 0 {
		now = configValue(opts[j].CurrentValue)
	}
	return now, nil
}

// maxListed bounds the agent's option ids or values a message names, and
// maxListedRunes each one.
const maxListed, maxListedRunes = 20, 64

// agentList names the agent's ids or values in a message: the first
// maxListed, each on one line and cut short, and how many more there are.
func agentList(items []string) string {
	shown := make([]string, 0, min(len(items), maxListed))
	for _, it := range items[:cap(shown)] {
		shown = append(shown, tty.OneLine(acp.SafeText(state.Clip(it, 4*maxListedRunes)), maxListedRunes))
	}
	s := strings.Join(shown, ", ")
	if more := len(items) - len(shown); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// configValues lists a select option's values, from its raw JSON (flat
// options, or grouped).
func configValues(o acp.ConfigOption) []string {
	var raw struct {
		Options []struct {
			Value   string `json:"value"`
			Group   string `json:"group"`
			Options []struct {
				Value string `json:"value"`
			} `json:"options"`
		} `json:"options"`
	}
	if json.Unmarshal(o.Raw, &raw) != nil {
		return nil
	}
	var vals []string
	for _, v := range raw.Options {
		if v.Value != "" {
			vals = append(vals, v.Value)
		}
		for _, g := range v.Options {
			vals = append(vals, g.Value)
		}
	}
	return vals
}

// configValue shows a current value (a string id or a boolean) on one
// line, cut at 200 runes.
func configValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	return tty.OneLine(acp.SafeText(s), 200)
}

func parseOnOff(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "on", "yes", "y":
		return true, nil
	case "off", "no", "n":
		return false, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("%q: want on or off", s)
	}
	return b, nil
}

// List is the lines /config shows: each option with its current value,
// its name and the values it takes.
func List(opts []acp.ConfigOption) string {
	var b strings.Builder
	for _, o := range opts {
		line := fmt.Sprintf("  %s = %s", tty.OneLine(acp.SafeText(o.ID), 80), configValue(o.CurrentValue))
		if n := tty.OneLine(acp.SafeText(o.Name), 40); n != "" && n != o.ID {
			line += "  (" + n + ")"
		}
		if vals := configValues(o); len(vals) > 0 {
			line += "  values: " + tty.OneLine(acp.SafeText(strings.Join(vals, ", ")), 120)
		} else if o.Type == "boolean" {
			line += "  values: on, off"
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}
