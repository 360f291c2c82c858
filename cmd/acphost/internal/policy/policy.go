// Package policy is how acphost answers the agent's permission requests:
// the policy file (--permission-policy), rules read from JSON, matched
// against a request, answering allow, reject or ask in front of the
// --permission policy; and Permissions, the run's whole policy
// (--permission, --non-interactive-permissions, the file, plan mode) as
// the library's permission hooks, which keeps who decided each request
// for the output.
package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// The answers of a permission policy rule.
const (
	ruleAllow  = "allow"
	ruleReject = "reject"
	ruleAsk    = "ask"
)

// Policy is a --permission-policy file: rules tried in order, the first
// that matches a request answers it; a request no rule matches goes to the
// --permission policy.
//
//	{"rules": [
//	  {"kind": "read", "answer": "allow"},
//	  {"kind": "execute", "command": "git status*", "answer": "allow"},
//	  {"path": "/etc/**", "answer": "reject"},
//	  {"kind": "edit", "path": "src/**", "answer": "ask"}
//	]}
//
// (a bare array of rules works too). A rule matches when every matcher it
// has matches: kind is the tool kind (read, edit, delete, move, search,
// execute, think, fetch, switch_mode, other); title a glob over the tool
// call's title; command a glob over the command line (execute requests);
// path a glob over the files the request names (its locations and diffs;
// a relative glob is matched against the path relative to the session's
// directory). In globs * matches any run of characters (in a path, none of
// them /), ** any run in a path, ? one character. An allow rule with a path
// needs every file to match, a reject or ask rule any. An allow rule's
// command never matches a command line holding shell control characters
// (; & | ` $ ( ) < > newline) that the glob does not spell out itself.
type Policy struct {
	// Source is the file the policy was read from, as given; answers
	// name their rule by its base name and line.
	Source string
	rules  []permRule
}

type permRule struct {
	Kind    string `json:"kind,omitempty"`
	Title   string `json:"title,omitempty"`
	Command string `json:"command,omitempty"`
	Path    string `json:"path,omitempty"`
	Answer  string `json:"answer"`

	line                  int
	title, command, paths *regexp.Regexp
}

// knownKinds are the tool kinds of ACP v1.
var knownKinds = []acp.ToolKind{acp.ToolRead, acp.ToolEdit, acp.ToolDelete, acp.ToolMove,
	acp.ToolSearch, acp.ToolExecute, acp.ToolThink, acp.ToolFetch, acp.ToolSwitchMode, acp.ToolOther}

// Load reads and checks a policy file.
func Load(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--permission-policy: %w", err)
	}
	return parsePolicy(path, b)
}

// lineOf is the 1-based line of byte offset off in b.
func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// parsePolicy parses a policy file's bytes; errors name source:line.
func parsePolicy(source string, b []byte) (*Policy, error) {
	p := &Policy{Source: source}
	fail := func(off int64, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", source, lineOf(b, off), fmt.Sprintf(format, args...))
	}
	jsonErr := func(err error, at int64) error {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return fail(syn.Offset, "%v", syn)
		case errors.As(err, &typ):
			return fail(at+typ.Offset, "%s: want %v", typ.Field, typ.Type)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return fail(int64(len(b)), "unexpected end of the file")
		}
		return fail(at, "%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(err, 0)
	}
	switch tok {
	case json.Delim('['):
	case json.Delim('{'):
		found := false
		if dec.More() {
			at := dec.InputOffset()
			key, err := dec.Token()
			if err != nil {
				return nil, jsonErr(err, at)
			}
			if key != "rules" {
				return nil, fail(skipSpace(b, at), "unknown field %q (want \"rules\": [...])", key)
			}
			if tok, err := dec.Token(); err != nil {
				return nil, jsonErr(err, at)
			} else if tok != json.Delim('[') {
				return nil, fail(dec.InputOffset(), "\"rules\": want an array of rules")
			}
			found = true
		}
		if !found {
			return nil, fail(0, "no \"rules\" array")
		}
	default:
		return nil, fail(0, "want {\"rules\": [...]} or an array of rules")
	}
	for dec.More() {
		at := skipSpace(b, dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, jsonErr(err, at)
		}
		n := len(p.rules) + 1
		r, field, err := parseRule(raw)
		if err != nil {
			off := at
			if field != "" {
				if i := bytes.Index(raw, []byte(`"`+field+`"`)); i >= 0 {
					off += int64(i)
				}
			}
			return nil, fail(off, "rule %d: %v", n, err)
		}
		r.line = lineOf(b, at)
		p.rules = append(p.rules, r)
	}
	if _, err := dec.Token(); err != nil { // the closing ]
		return nil, jsonErr(err, dec.InputOffset())
	}
	return p, nil
}

// skipSpace moves off past white space and commas.
func skipSpace(b []byte, off int64) int64 {
	for off < int64(len(b)) && strings.IndexByte(" \t\r\n,:", b[off]) >= 0 {
		off++
	}
	return off
}

// parseRule decodes and checks one rule; field names the field at fault.
func parseRule(raw json.RawMessage) (permRule, string, error) {
	var r permRule
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return r, typ.Field, fmt.Errorf("%s: want a %v", typ.Field, typ.Type)
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return r, strings.Trim(name, `"`), fmt.Errorf("unknown field %s (want kind, title, command, path, answer)", name)
		}
		return r, "", err
	}
	switch r.Answer {
	case ruleAllow, ruleReject, ruleAsk:
	case "":
		return r, "", errors.New(`no "answer": want allow, reject or ask`)
	default:
		return r, "answer", fmt.Errorf("answer %q: want allow, reject or ask", r.Answer)
	}
	if r.Kind != "" && !slices.Contains(knownKinds, acp.ToolKind(r.Kind)) {
		var names []string
		for _, k := range knownKinds {
			names = append(names, string(k))
		}
		return r, "kind", fmt.Errorf("kind %q: want one of %s", r.Kind, strings.Join(names, ", "))
	}
	for _, g := range []struct {
		name, glob string
		path       bool
		re         **regexp.Regexp
	}{{"title", r.Title, false, &r.title}, {"command", r.Command, false, &r.command}, {"path", r.Path, true, &r.paths}} {
		if g.glob == "" {
			continue
		}
		re, err := globRegexp(g.glob, g.path)
		if err != nil {
			return r, g.name, fmt.Errorf("%s %q: %v", g.name, g.glob, err)
		}
		*g.re = re
	}
	return r, "", nil
}

// globRegexp compiles a glob: * any run (in a path, without /), ** any
// run, ? one character (in a path, not /); the rest is literal.
func globRegexp(glob string, path bool) (*regexp.Regexp, error) {
	if strings.ContainsAny(glob, "[]{}") {
		return nil, errors.New("only *, ** and ? are special; [ ] { } are not supported")
	}
	star, one := ".*", "."
	if path {
		star, one = "[^/]*", "[^/]"
	}
	var b strings.Builder
	b.WriteString(`\A`)
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case c == '*' && i+1 < len(glob) && glob[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString(star)
		case c == '?':
			b.WriteString(one)
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`\z`)
	return regexp.Compile("(?s)" + b.String())
}

// shellControl are the characters that chain or redirect shell commands.
const shellControl = ";&|`$()<>\n"

// RequestPaths are the files a request names: its locations and the diffs
// of cls, its classification.
func RequestPaths(req *acp.PermissionRequest, cls acp.Classification) []string {
	var paths []string
	for _, l := range req.ToolCall.Locations {
		if l.Path != "" && !slices.Contains(paths, l.Path) {
			paths = append(paths, l.Path)
		}
	}
	for _, d := range cls.Changes {
		if d.Path != "" && !slices.Contains(paths, d.Path) {
			paths = append(paths, d.Path)
		}
	}
	return paths
}

// matches reports whether r matches req, classified as cls; cwd is the
// session's directory.
func (r *permRule) matches(req *acp.PermissionRequest, cls acp.Classification, cwd string) bool {
	tc := req.ToolCall
	if r.Kind != "" && string(tc.Kind) != r.Kind {
		return false
	}
	if r.title != nil && !r.title.MatchString(tc.Title) {
		return false
	}
	if r.command != nil {
		cmd := cls.Command
		if cmd == "" || !r.command.MatchString(cmd) {
			return false
		}
		if r.Answer == ruleAllow {
			for _, c := range shellControl {
				if strings.ContainsRune(cmd, c) && !strings.ContainsRune(r.Command, c) {
					return false
				}
			}
		}
	}
	if r.paths != nil {
		paths := RequestPaths(req, cls)
		if len(paths) == 0 {
			return false
		}
		relative := !filepath.IsAbs(r.Path) && !strings.HasPrefix(r.Path, "/")
		match := func(p string) bool {
			if relative && cwd != "" && filepath.IsAbs(p) {
				rel, err := filepath.Rel(cwd, p)
				if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					return false
				}
				p = rel
			}
			return r.paths.MatchString(filepath.ToSlash(filepath.Clean(p)))
		}
		if r.Answer == ruleAllow { // every path must match
			return !slices.ContainsFunc(paths, func(p string) bool { return !match(p) })
		}
		return slices.ContainsFunc(paths, match)
	}
	return true
}

// match returns the first rule matching req, or nil.
func (p *Policy) match(req *acp.PermissionRequest, cwd string) *permRule {
	cls := acp.Classify(req) // once, not once a rule
	for i := range p.rules {
		if p.rules[i].matches(req, cls, cwd) {
			return &p.rules[i]
		}
	}
	return nil
}

// Decider is the policy file in front of fallback: allow and reject rules
// answer at once (noting which rule did), ask rules go to ask (the person,
// or with nobody to ask, the --non-interactive-permissions answer).
//
// note is told of each answer a rule gave: rule names it (file:line), text
// says it for people.
func (p *Policy) Decider(cwd string, ask, fallback acphost.PermissionFunc, note func(req *acp.PermissionRequest, rule, text string)) acphost.PermissionFunc {
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		r := p.match(req, cwd)
		if r == nil {
			return fallback(ctx, req)
		}
		rule := fmt.Sprintf("%s:%d", filepath.Base(p.Source), r.line)
		why := rule
		var id string
		switch r.Answer {
		case ruleAllow:
			id = acphost.AllowOption(req)
			if id == "" {
				id, why = acphost.RejectOption(req), why+" allows, but no allow option is offered"
			}
		case ruleReject:
			id = acphost.RejectOption(req)
		case ruleAsk:
			return ask(ctx, req)
		}
		note(req, rule, "policy "+why)
		return id, nil
	}
}
