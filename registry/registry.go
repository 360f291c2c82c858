// Package registry reads the ACP agent registry
// (github.com/agentclientprotocol/registry) and starts its agents by id:
// npx and uvx packages through those tools, binary distributions
// downloaded, checked and unpacked into a cache of their own.
//
// The registry is a JSON document of agents, each with one or more
// distributions; [Parse] reads one, keeping the members it does not know,
// [Embedded] is the snapshot this package carries, [Load] and [Refresh]
// read another (a file, an HTTPS URL, or the official one, cached with
// its ETag). [Cache] installs binary distributions; [Resolve] turns an id
// into the [acphost.ACPOptions] that start the agent.
//
// Everything downloaded is hostile input: see [Cache] for the checks.
// Nothing here prints or exits; progress goes to a callback.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Registry is a registry document: {"version", "agents": [...]}.
type Registry struct {
	Version string  `json:"version"`
	Agents  []Agent `json:"agents"`
	// Extra holds the members this package does not know (such as
	// "extensions"), kept as they were and written back by MarshalJSON.
	Extra map[string]json.RawMessage `json:"-"`
	// Origin says, for people, where the registry was read from.
	Origin string `json:"-"`
}

// Agent is one registry entry.
type Agent struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	Version      string       `json:"version"`
	Description  string       `json:"description"`
	Repository   string       `json:"repository,omitempty"`
	Website      string       `json:"website,omitempty"`
	Authors      []string     `json:"authors,omitempty"`
	License      string       `json:"license,omitempty"`
	Icon         string       `json:"icon,omitempty"`
	Distribution Distribution `json:"distribution"`

	Extra map[string]json.RawMessage `json:"-"`
}

// Distribution says how an agent is had: any of an npm package run with
// npx, a PyPI package run with uvx, and per-platform binary archives.
type Distribution struct {
	NPX    *Package          `json:"npx,omitempty"`
	UVX    *Package          `json:"uvx,omitempty"`
	Binary map[string]Target `json:"binary,omitempty"` // by platform: linux-x86_64, darwin-aarch64 …

	Extra map[string]json.RawMessage `json:"-"`
}

// Package is an npx or uvx distribution: the package (with its version,
// "pkg@1.2.3" or "pkg==1.2.3"), the command of the package to run when it
// is not the package's default one, and its arguments and environment.
type Package struct {
	Package string            `json:"package"`
	Cmd     string            `json:"cmd,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// Target is a binary distribution for one platform: the archive's URL,
// the command inside it (relative to where it is unpacked), its arguments
// and environment, and, when the registry gives it, the archive's
// SHA-256 (hex).
type Target struct {
	Archive string            `json:"archive"`
	Cmd     string            `json:"cmd"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	SHA256  string            `json:"sha256,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// Distribution kinds, as Agent.Kind names them.
const (
	KindBinary = "binary"
	KindNPX    = "npx"
	KindUVX    = "uvx"
)

// maxRegistry bounds a registry document (the official one is about 60 KB).
const maxRegistry = 8 << 20

// Parse reads a registry document. A malformed one is a single
// *MalformedError naming where it is wrong (matching ErrMalformed).
func Parse(b []byte) (*Registry, error) {
	if len(b) > maxRegistry {
		return nil, &MalformedError{Reason: fmt.Sprintf("%d bytes, more than the %d a registry may have", len(b), maxRegistry)}
	}
	var r Registry
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, &MalformedError{Reason: jsonReason(b, err)}
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	return &r, nil
}

// Agent returns the entry of id.
func (r *Registry) Agent(id string) (Agent, bool) {
	i := slices.IndexFunc(r.Agents, func(a Agent) bool { return a.ID == id })
	if i < 0 {
		return Agent{}, false
	}
	return r.Agents[i], true
}

// IDs are the registry's agent ids, sorted.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.Agents))
	for _, a := range r.Agents {
		ids = append(ids, a.ID)
	}
	slices.Sort(ids)
	return ids
}

// Kind is the distribution used on platform (see Platform): binary when
// the agent has one for it, else npx, else uvx; "" when there is none.
func (a Agent) Kind(platform string) string {
	d := a.Distribution
	switch _, ok := d.Binary[platform]; {
	case ok:
		return KindBinary
	case d.NPX != nil:
		return KindNPX
	case d.UVX != nil:
		return KindUVX
	}
	return ""
}

// Platforms are the platforms of the agent's binary distribution, sorted.
func (a Agent) Platforms() []string {
	ps := make([]string, 0, len(a.Distribution.Binary))
	for p := range a.Distribution.Binary {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

var (
	idPattern      = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
	versionPattern = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	shaPattern     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	envKeyPattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// check is the first thing wrong with r, as a *MalformedError.
func (r *Registry) check() error {
	if r.Agents == nil {
		return &MalformedError{Reason: `no "agents" array`}
	}
	seen := map[string]bool{}
	for i, a := range r.Agents {
		where := fmt.Sprintf("agents[%d]", i)
		if a.ID != "" {
			where += fmt.Sprintf(" (%q)", a.ID)
		}
		bad := func(format string, args ...any) error {
			return &MalformedError{Where: where, Reason: fmt.Sprintf(format, args...)}
		}
		switch {
		case !idPattern.MatchString(a.ID):
			return bad("id %q: want lowercase letters, digits and hyphens, starting with a letter", a.ID)
		case seen[a.ID]:
			return bad("a second agent of this id")
		case !versionPattern.MatchString(a.Version):
			return bad("version %q: want a version such as 1.2.3 (letters, digits, . + _ -)", a.Version)
		}
		seen[a.ID] = true
		d := a.Distribution
		if d.NPX == nil && d.UVX == nil && len(d.Binary) == 0 {
			return bad("distribution: none of npx, uvx, binary")
		}
		for kind, p := range map[string]*Package{KindNPX: d.NPX, KindUVX: d.UVX} {
			if p == nil {
				continue
			}
			if err := p.check(); err != nil {
				return bad("distribution.%s: %s", kind, err)
			}
		}
		for _, platform := range a.Platforms() {
			if err := d.Binary[platform].check(); err != nil {
				return &MalformedError{Where: where, Reason: fmt.Sprintf("distribution.binary.%s: %s", platform, err), Err: err}
			}
		}
	}
	return nil
}

func (p *Package) check() error {
	switch {
	case strings.TrimSpace(p.Package) == "" || strings.HasPrefix(p.Package, "-"):
		return fmt.Errorf("package %q: want a package name", p.Package)
	case strings.HasPrefix(p.Cmd, "-"):
		return fmt.Errorf("cmd %q: want a command name", p.Cmd)
	}
	return checkEnv(p.Env)
}

// CmdPath is t's cmd as a slash path relative to where the archive is
// unpacked ("./bin/devin" → "bin/devin", "./bin\\devin.exe" →
// "bin/devin.exe"); an error for one that would leave that directory.
func (t Target) CmdPath() (string, error) { return cmdPath(t.Cmd) }

func (t Target) check() error {
	if _, err := checkURL(t.Archive); err != nil {
		return &causedError{fmt.Sprintf("archive %q: want an https URL (plain http only to a loopback address)", t.Archive), ErrInsecureURL}
	}
	switch {
	case t.Cmd == "":
		return fmt.Errorf("no cmd")
	case t.SHA256 != "" && !shaPattern.MatchString(strings.ToLower(t.SHA256)):
		return fmt.Errorf("sha256 %q: want 64 hex digits", t.SHA256)
	}
	if _, err := cmdPath(t.Cmd); err != nil {
		return err
	}
	return checkEnv(t.Env)
}

// causedError is a reason in words that errors.Is takes for its cause.
type causedError struct {
	reason string
	cause  error
}

func (e *causedError) Error() string { return e.reason }
func (e *causedError) Unwrap() error { return e.cause }

func checkEnv(env map[string]string) error {
	for k, v := range env {
		if !envKeyPattern.MatchString(k) || strings.ContainsRune(v, 0) {
			return fmt.Errorf("env %q: want NAME (letters, digits, _) and a value without NUL", k)
		}
	}
	return nil
}

// jsonReason says where a JSON error is: line:column for a syntax error,
// the agent and member for a value of the wrong type.
func jsonReason(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("line %s: %v", lineCol(b, se.Offset), err)
	}
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	what := fmt.Sprintf("is a JSON %s, want %s", te.Value, te.Type)
	var doc struct{ Agents []json.RawMessage }
	if json.Unmarshal(b, &doc) == nil {
		for i, raw := range doc.Agents {
			var a Agent
			var ae *json.UnmarshalTypeError
			if err := json.Unmarshal(raw, &a); errors.As(err, &ae) {
				field := strings.TrimPrefix(ae.Field, "agents.")
				if field == "" {
					return fmt.Sprintf("agents[%d] %s", i, what)
				}
				return fmt.Sprintf("agents[%d]: %s %s", i, field, what)
			}
		}
	}
	if te.Field != "" {
		return te.Field + " " + what
	}
	return "the document " + what
}

func lineCol(b []byte, off int64) string {
	off = min(off, int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("%d:%d", line, col)
}

// The JSON methods below keep the members a type does not know, so a
// registry read and written again loses nothing.

type (
	registryJSON     Registry
	agentJSON        Agent
	distributionJSON Distribution
	packageJSON      Package
	targetJSON       Target
)

// UnmarshalJSON reads r, keeping unknown members in Extra.
func (r *Registry) UnmarshalJSON(b []byte) error {
	return decodeKeeping(b, (*registryJSON)(r), &r.Extra)
}

// MarshalJSON writes r with its Extra members.
func (r Registry) MarshalJSON() ([]byte, error) { return encodeKeeping(registryJSON(r), r.Extra) }

// UnmarshalJSON reads a, keeping unknown members in Extra.
func (a *Agent) UnmarshalJSON(b []byte) error { return decodeKeeping(b, (*agentJSON)(a), &a.Extra) }

// MarshalJSON writes a with its Extra members.
func (a Agent) MarshalJSON() ([]byte, error) { return encodeKeeping(agentJSON(a), a.Extra) }

// UnmarshalJSON reads d, keeping unknown members (distribution kinds this
// package does not know) in Extra.
func (d *Distribution) UnmarshalJSON(b []byte) error {
	return decodeKeeping(b, (*distributionJSON)(d), &d.Extra)
}

// MarshalJSON writes d with its Extra members.
func (d Distribution) MarshalJSON() ([]byte, error) {
	return encodeKeeping(distributionJSON(d), d.Extra)
}

// UnmarshalJSON reads p, keeping unknown members in Extra.
func (p *Package) UnmarshalJSON(b []byte) error {
	return decodeKeeping(b, (*packageJSON)(p), &p.Extra)
}

// MarshalJSON writes p with its Extra members.
func (p Package) MarshalJSON() ([]byte, error) { return encodeKeeping(packageJSON(p), p.Extra) }

// UnmarshalJSON reads t, keeping unknown members in Extra.
func (t *Target) UnmarshalJSON(b []byte) error { return decodeKeeping(b, (*targetJSON)(t), &t.Extra) }

// MarshalJSON writes t with its Extra members.
func (t Target) MarshalJSON() ([]byte, error) { return encodeKeeping(targetJSON(t), t.Extra) }
