package acp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/acphost/acphost/internal/fastjson"
)

// ChangeType is the kind of a [PermissionChange]. The set is open: unknown
// types are kept as sent.
type ChangeType string

// The change types known to this version.
const (
	// ChangePolicyRule adds, removes or replaces a rule (Operation "add",
	// "remove", "replace"; RuleBehavior "allow", "deny" or "ask").
	ChangePolicyRule ChangeType = "policy_rule"
	// ChangeGrant grants access for a Lifetime (Operation "grant").
	ChangeGrant ChangeType = "grant"
	// ChangePermissionMode sets the agent's permission mode (Operation
	// "set", Provider, Mode); it has no targets.
	ChangePermissionMode ChangeType = "permission_mode"
)

// TargetType is the kind of a [ChangeTarget]. The set is open.
type TargetType string

// The target types known to this version.
const (
	TargetCommand    TargetType = "command"    // shell commands; matcher argv_prefix
	TargetNetwork    TargetType = "network"    // network access; matcher host or any
	TargetFilesystem TargetType = "filesystem" // files; Access, matcher directory, exact_path, glob or special
	TargetTool       TargetType = "tool"       // an agent tool (ToolName); matcher provider_rule or none
)

// MatcherType is the kind of a [ChangeMatcher]. The set is open.
type MatcherType string

// The matcher types known to this version.
const (
	MatcherArgvPrefix   MatcherType = "argv_prefix"   // Argv: commands starting with these words
	MatcherHost         MatcherType = "host"          // Host, optional Protocol
	MatcherAny          MatcherType = "any"           // everything of the target's kind
	MatcherDirectory    MatcherType = "directory"     // Path and everything under it
	MatcherExactPath    MatcherType = "exact_path"    // Path itself
	MatcherGlob         MatcherType = "glob"          // Pattern
	MatcherSpecial      MatcherType = "special"       // Provider and a provider-defined Value, e.g. {"kind":"tmpdir"}
	MatcherProviderRule MatcherType = "provider_rule" // Provider and a rule string in Value, e.g. "npm test:*"
)

// PermissionChange is one change an option would make, from the
// option-level {version: 1, changes: [...]} record. Every field is as sent;
// enums are open and a change whose parts are not all recognised is kept
// with its Raw JSON and Description (so is an item that is not even an
// object). A member of the wrong JSON type is left empty and makes
// [PermissionChange.Known] report false. Show [PermissionChange.Describe];
// the same holds for [ChangeTarget] and [ChangeMatcher].
// The JSON members and their place in a request are shown in the
// example.
type PermissionChange struct {
	Type ChangeType
	// Operation is "add", "remove" or "replace" (policy_rule), "grant"
	// (grant) or "set" (permission_mode); open.
	Operation string
	// RuleBehavior is "allow", "deny" or "ask" (policy_rule only); open.
	RuleBehavior string
	// Description is the agent's own sentence for the change, e.g. "Allow
	// commands starting with npm install". It is agent text: print it with
	// SafeText.
	Description string
	// Provider names the agent-specific vocabulary of Mode ("claudeCode").
	Provider string
	// Mode is the permission mode a permission_mode change sets, e.g.
	// "acceptEdits".
	Mode string
	// Lifetime says how long the change lasts; nil when the agent did not
	// say (Codex policy amendments).
	Lifetime *ChangeLifetime
	// Targets are what the change applies to.
	Targets []ChangeTarget
	// Raw is the change object as received.
	Raw json.RawMessage

	malformed bool // a known member had the wrong JSON type
}

// ChangeLifetime is how long a change lasts. Scope is "turn", "session",
// "process", "persistent" or "unknown" (open); Storage, for persistent and
// process scopes, is "user", "project", "project_local" or "cli_argument"
// (open).
type ChangeLifetime struct {
	Scope   string
	Storage string
	Raw     json.RawMessage
}

// Writes reports whether the change, as the agent describes it, would let
// it write: it sets the agent's permission mode (which decides what the
// agent does unasked), or it grants or allows — any behaviour but deny and
// ask, any operation but remove — a filesystem target with an access
// other than read (write, one this version does not know, or none named:
// unrestricted, as Claude's directory rules are) or a target of a type
// this version does not know. Rules for commands, tools and the network
// decide later requests, each judged when it is made. The record never
// decides what the agent does (it applies its own decision for the option
// id): a change that writes only makes a request a change
// (PermissionRequest.ReadOnly), which fails closed.
func (c PermissionChange) Writes() bool {
	switch {
	case c.Type == ChangePermissionMode:
		return true
	case c.RuleBehavior == "deny", c.RuleBehavior == "ask", c.Operation == "remove":
		return false
	}
	return slices.ContainsFunc(c.Targets, ChangeTarget.writes)
}

func (t ChangeTarget) writes() bool {
	switch t.Type {
	case TargetCommand, TargetNetwork, TargetTool:
		return false
	case TargetFilesystem:
		return len(t.Access) == 0 || slices.ContainsFunc(t.Access, func(a string) bool { return a != "read" })
	}
	return true
}

// ChangeTarget is one thing a change applies to.
type ChangeTarget struct {
	Type TargetType
	// Access is the filesystem access granted ("read", "write"); empty means
	// the agent did not restrict it (deny rules, directory rules).
	Access []string
	// ToolName is the agent tool of a tool target, e.g. "Bash".
	ToolName string
	// Matcher selects within the target; nil for a whole tool.
	Matcher *ChangeMatcher
	// Raw is the target object as received.
	Raw json.RawMessage

	malformed bool
}

// ChangeMatcher selects commands, hosts, paths or rules within a target.
// The fields set depend on Type.
type ChangeMatcher struct {
	Type MatcherType
	// Argv is the command prefix of an argv_prefix matcher, one word each.
	Argv []string
	// Host and Protocol ("http", "https", "socks5Tcp", "socks5Udp"; may be
	// empty) of a host matcher.
	Host     string
	Protocol string
	// Path of a directory or exact_path matcher.
	Path string
	// Pattern of a glob matcher.
	Pattern string
	// Provider of a special or provider_rule matcher ("codex", "claudeCode").
	Provider string
	// Value is the provider-defined value of a special matcher (an object
	// such as {"kind":"tmpdir"}) or provider_rule matcher (a rule string
	// such as "npm test:*"), raw.
	Value json.RawMessage
	// Raw is the matcher object as received.
	Raw json.RawMessage

	malformed bool
}

// Describe returns a one-line description of the change for an approval
// UI, e.g. "Allow commands starting with `npm test` for this session". When
// every part of the change is recognised ([PermissionChange.Known]) the text
// is built from the structured fields; otherwise it is the agent's own
// Description, or a note that the change is not recognised. Agent-supplied
// values are passed through [SafeText] and quoted in backticks, so the
// result is safe to print on a terminal.
func (c PermissionChange) Describe() string {
	if s, ok := c.describe(); ok {
		return s
	}
	if d := oneLine(c.Description); d != "" {
		return d
	}
	if c.Type != "" {
		return "Unrecognised permission change " + codeSpan(string(c.Type))
	}
	return "Unrecognised permission change"
}

// Known reports whether every part of the change (type, operation,
// behaviour, lifetime, targets and matchers) is recognised by this version,
// so that Describe is built from the structure rather than from the agent's
// Description. A UI may flag unknown changes.
func (c PermissionChange) Known() bool {
	_, ok := c.describe()
	return ok
}

func (c PermissionChange) describe() (string, bool) {
	if c.malformed {
		return "", false
	}
	life, ok := c.Lifetime.describe()
	if !ok {
		return "", false
	}
	switch c.Type {
	case ChangePermissionMode:
		if c.Operation != "set" || c.Mode == "" || len(c.Targets) > 0 {
			return "", false
		}
		var who string
		switch c.Provider {
		case "":
			who = "permission mode"
		case "claudeCode":
			who = "Claude Code permission mode"
		default:
			who = codeSpan(c.Provider) + " permission mode"
		}
		return "Set " + who + " to " + codeSpan(c.Mode) + life, true
	case ChangeGrant, ChangePolicyRule:
	default:
		return "", false
	}
	targets, ok := describeTargets(c.Targets)
	if !ok {
		return "", false
	}
	if c.Type == ChangeGrant {
		if c.Operation != "grant" || (c.RuleBehavior != "" && c.RuleBehavior != "allow") {
			return "", false
		}
		return "Allow " + targets + life, true
	}
	var verb string
	switch c.RuleBehavior {
	case "allow":
		verb = "allow"
	case "deny":
		verb = "deny"
	case "ask":
		verb = "ask before"
	default:
		return "", false
	}
	switch c.Operation {
	case "add":
		return strings.ToUpper(verb[:1]) + verb[1:] + " " + targets + life, true
	case "remove":
		return "Remove " + c.RuleBehavior + " rules for " + targets + life, true
	case "replace":
		return "Replace " + c.RuleBehavior + " rules with " + targets + life, true
	}
	return "", false
}

func describeTargets(ts []ChangeTarget) (string, bool) {
	if len(ts) == 0 {
		return "", false
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		s, ok := t.describe()
		if !ok {
			return "", false
		}
		parts[i] = s
	}
	if len(parts) == 1 {
		return parts[0], true
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1], true
}

// describe returns the lifetime's suffix (" for this session"), empty for
// a nil lifetime.
func (l *ChangeLifetime) describe() (string, bool) {
	if l == nil {
		return "", true
	}
	switch l.Scope {
	case "turn", "session":
		if l.Storage == "" {
			return " for this " + l.Scope, true
		}
	case "process":
		switch l.Storage {
		case "", "cli_argument":
			return " until the agent exits", true
		}
	case "persistent":
		switch l.Storage {
		case "":
			return " permanently", true
		case "user":
			return " permanently, in user settings", true
		case "project":
			return " permanently, in project settings", true
		case "project_local":
			return " permanently, in local project settings", true
		}
	case "unknown":
		if l.Storage == "" {
			return " (lifetime unknown)", true
		}
	}
	return "", false
}

// Describe returns a noun phrase for the target, e.g. "commands starting
// with `npm install`" or "write access under `/tmp/out`", safe to print on a
// terminal. An unrecognised target is described as such.
func (t ChangeTarget) Describe() string {
	if s, ok := t.describe(); ok {
		return s
	}
	if t.Type != "" {
		return "unrecognised " + codeSpan(string(t.Type)) + " target"
	}
	return "unrecognised target"
}

// Known reports whether the target, its access list and its matcher are
// all recognised.
func (t ChangeTarget) Known() bool {
	_, ok := t.describe()
	return ok
}

func (t ChangeTarget) describe() (string, bool) {
	if t.malformed || (t.Matcher != nil && !t.Matcher.Known()) {
		return "", false
	}
	if len(t.Access) > 0 && t.Type != TargetFilesystem {
		return "", false
	}
	mt := MatcherType("")
	if t.Matcher != nil {
		mt = t.Matcher.Type
	}
	switch t.Type {
	case TargetCommand:
		switch mt {
		case MatcherArgvPrefix:
			return "commands starting with " + codeSpan(argvText(t.Matcher.Argv)), true
		case MatcherAny:
			return "all commands", true
		}
	case TargetNetwork:
		switch mt {
		case MatcherHost:
			return "network access to " + codeSpan(t.Matcher.Host) + protocolText(t.Matcher.Protocol), true
		case MatcherAny:
			return "network access", true
		}
	case TargetFilesystem:
		access, ok := accessText(t.Access)
		if !ok {
			return "", false
		}
		switch mt {
		case MatcherDirectory:
			return access + " under " + codeSpan(t.Matcher.Path), true
		case MatcherExactPath:
			return access + " to " + codeSpan(t.Matcher.Path), true
		case MatcherGlob:
			return access + " to paths matching " + codeSpan(t.Matcher.Pattern), true
		case MatcherSpecial:
			return access + " to " + t.Matcher.Describe(), true
		case MatcherAny:
			return access + " to all files", true
		}
	case TargetTool:
		if t.ToolName == "" {
			return "", false
		}
		switch mt {
		case "":
			return "all " + codeSpan(t.ToolName) + " calls", true
		case MatcherProviderRule:
			return codeSpan(t.ToolName) + " calls matching " + t.Matcher.ruleText(), true
		}
	}
	return "", false
}

// protocolText describes a host matcher's protocol (" over HTTPS").
func protocolText(p string) string {
	switch p {
	case "":
		return ""
	case "http":
		return " over HTTP"
	case "https":
		return " over HTTPS"
	case "socks5Tcp":
		return " over SOCKS5 (TCP)"
	case "socks5Udp":
		return " over SOCKS5 (UDP)"
	}
	return " over " + codeSpan(p)
}

// accessText describes a filesystem access list.
func accessText(access []string) (string, bool) {
	var read, write bool
	for _, a := range access {
		switch a {
		case "read":
			read = true
		case "write":
			write = true
		default:
			return "", false
		}
	}
	switch {
	case read && write:
		return "read and write access", true
	case read:
		return "read access", true
	case write:
		return "write access", true
	}
	return "filesystem access", true
}

// Describe returns a noun phrase for the matcher on its own, e.g. "argv
// prefix `npm install`" or "host `example.com`", safe to print on a
// terminal.
func (m ChangeMatcher) Describe() string {
	if s, ok := m.describe(); ok {
		return s
	}
	if m.Type != "" {
		return "unrecognised " + codeSpan(string(m.Type)) + " matcher"
	}
	return "unrecognised matcher"
}

// Known reports whether the matcher's type is recognised and it carries the
// fields that type needs.
func (m ChangeMatcher) Known() bool {
	_, ok := m.describe()
	return ok
}

func (m ChangeMatcher) describe() (string, bool) {
	if m.malformed {
		return "", false
	}
	switch m.Type {
	case MatcherArgvPrefix:
		if len(m.Argv) > 0 {
			return "argv prefix " + codeSpan(argvText(m.Argv)), true
		}
	case MatcherHost:
		if m.Host != "" {
			return "host " + codeSpan(m.Host) + protocolText(m.Protocol), true
		}
	case MatcherAny:
		return "anything", true
	case MatcherDirectory:
		if m.Path != "" {
			return "directory " + codeSpan(m.Path), true
		}
	case MatcherExactPath:
		if m.Path != "" {
			return "path " + codeSpan(m.Path), true
		}
	case MatcherGlob:
		if m.Pattern != "" {
			return "glob " + codeSpan(m.Pattern), true
		}
	case MatcherSpecial:
		if present(m.Value) {
			return "special path " + codeSpan(specialValue(m.Value)), true
		}
	case MatcherProviderRule:
		if s, ok := fastjson.ParseString(m.Value); ok && s != "" {
			return "rule " + m.ruleText(), true
		}
	}
	return "", false
}

func (m ChangeMatcher) ruleText() string {
	s, _ := fastjson.ParseString(m.Value)
	return codeSpan(s)
}

// specialValue renders a special-path value: its kind when it is
// {"kind": "..."}, the string when it is one, else compact JSON.
func specialValue(v json.RawMessage) string {
	if s, ok := fastjson.ParseString(v); ok {
		return s
	}
	if obj, ok := fastjson.ParseObject(v); ok && obj.Only("kind") {
		if k, ok := fastjson.ParseString(obj.Get("kind")); ok {
			return k
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// argvText joins argv words with spaces, single-quoting words that are empty
// or contain spaces or quotes.
func argvText(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\") {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

// codeSpan quotes an agent-supplied value for a one-line description:
// sanitised, newlines and tabs shown as \n and \t, in backticks.
func codeSpan(s string) string {
	s = SafeText(s)
	s = strings.ReplaceAll(s, "\n", `\n`)
	s = strings.ReplaceAll(s, "\t", `\t`)
	if strings.Contains(s, "`") {
		return "`` " + s + " ``"
	}
	return "`" + s + "`"
}

// oneLine sanitises agent text and collapses its whitespace to single
// spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(SafeText(s)), " ")
}
