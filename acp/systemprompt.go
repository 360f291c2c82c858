// The client's system prompt: systemPrompt on session/new, load, resume
// and fork, and the agent's sessionCapabilities.systemPrompt (stable since
// schema v1.30).

package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// SystemPromptMode is how the agent combines a client's system prompt with
// its own instructions. The set is open on the wire; a client sends only
// the two below.
type SystemPromptMode string

// The system prompt modes of ACP v1.
const (
	// SystemPromptAppend adds the client's instructions to the agent's
	// own. Every agent that advertises sessionCapabilities.systemPrompt
	// takes it.
	SystemPromptAppend SystemPromptMode = "append"
	// SystemPromptOverride replaces the agent's built-in default
	// instructions with the client's. Only an agent that advertises
	// sessionCapabilities.systemPrompt.mode.override takes it.
	SystemPromptOverride SystemPromptMode = "override"
)

// SystemPrompt is the system-level instructions a client gives a session:
// the systemPrompt member of session/new, sent again, like cwd and
// mcpServers, on session/load, session/resume and session/fork. Its JSON is
// {"mode": ..., "content": [...]}.
type SystemPrompt struct {
	// Mode is how the agent combines Content with its own instructions.
	// Empty means SystemPromptAppend.
	Mode SystemPromptMode
	// Content is the instructions: text blocks (the only kind the spec
	// lets a client send), at least one.
	Content []ContentBlock
}

// TextSystemPrompt returns a system prompt of one text block.
func TextSystemPrompt(mode SystemPromptMode, text string) *SystemPrompt {
	return &SystemPrompt{Mode: mode, Content: []ContentBlock{TextBlock(text)}}
}

// ErrSystemPrompt matches the errors of SystemPrompt.Check.
var ErrSystemPrompt = errors.New("acp: invalid system prompt")

// Check reports what the spec forbids a client to send: a mode other than
// append and override, no content, a block that is not text, or an empty
// text block. The error matches ErrSystemPrompt.
func (p SystemPrompt) Check() error {
	switch p.Mode {
	case "", SystemPromptAppend, SystemPromptOverride:
	default:
		return fmt.Errorf("%w: mode %q (want append or override)", ErrSystemPrompt, p.Mode)
	}
	if len(p.Content) == 0 {
		return fmt.Errorf("%w: no content", ErrSystemPrompt)
	}
	for i, b := range p.Content {
		switch {
		case b.Type != BlockText:
			return fmt.Errorf("%w: content[%d] is %q; only text blocks may be sent", ErrSystemPrompt, i, b.Type)
		case b.Text == "":
			return fmt.Errorf("%w: content[%d] is empty", ErrSystemPrompt, i)
		}
	}
	return nil
}

// Text returns the text of the prompt's text blocks, joined by blank lines.
func (p SystemPrompt) Text() string {
	var b bytes.Buffer
	for _, c := range p.Content {
		if c.Type != BlockText {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

type systemPromptJSON struct {
	Mode    SystemPromptMode `json:"mode"`
	Content []ContentBlock   `json:"content"`
}

// MarshalJSON writes the wire shape: the mode always (append when empty)
// and content always an array.
func (p SystemPrompt) MarshalJSON() ([]byte, error) {
	v := systemPromptJSON(p)
	if v.Mode == "" {
		v.Mode = SystemPromptAppend
	}
	if v.Content == nil {
		v.Content = []ContentBlock{}
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads the wire shape (as an agent receives it).
func (p *SystemPrompt) UnmarshalJSON(b []byte) error {
	var v systemPromptJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = SystemPrompt(v)
	return nil
}

// SystemPromptModes returns the modes of system prompt an agent takes,
// read from its agentCapabilities (initialize's answer): nil when it does
// not advertise sessionCapabilities.systemPrompt, [append] when it does,
// [append override] when it also advertises mode.override. Each level must
// be a JSON object to count: a capability of another type (true, a string,
// an array) or null is not advertised, as the schema's default-on-error
// rule has it, and never an error.
func SystemPromptModes(agentCapabilities json.RawMessage) []SystemPromptMode {
	sp, ok := objectMember(agentCapabilities, "sessionCapabilities")
	if ok {
		sp, ok = objectMember(sp, "systemPrompt")
	}
	if !ok || !isObject(sp) {
		return nil
	}
	modes := []SystemPromptMode{SystemPromptAppend}
	if m, ok := objectMember(sp, "mode"); ok {
		if o, ok := objectMember(m, "override"); ok && isObject(o) {
			modes = append(modes, SystemPromptOverride)
		}
	}
	return modes
}

// objectMember returns member key of the JSON object b; ok is false when b
// is not an object or has no such member.
func objectMember(b json.RawMessage, key string) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if !isObject(b) || json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	v, ok := m[key]
	return v, ok
}

// isObject reports whether b is a JSON object.
func isObject(b json.RawMessage) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}
