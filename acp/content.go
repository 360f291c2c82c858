package acp

import (
	"encoding/json"
)

// ProtocolVersion is the ACP protocol version this package speaks.
const ProtocolVersion = 1

// BlockType is the type of a [ContentBlock]. The set is open: a block of a
// type this version does not know keeps the agent's string and its JSON.
type BlockType string

// The content block types of ACP v1.
const (
	BlockText         BlockType = "text"
	BlockImage        BlockType = "image"
	BlockAudio        BlockType = "audio"
	BlockResourceLink BlockType = "resource_link"
	BlockResource     BlockType = "resource"
)

// ContentBlock is a piece of content in a prompt, a message chunk or a tool
// call. Type is one of the Block constants or a type this version does not
// know. A text block has only Text; image, audio, resource_link and resource
// blocks carry the rest of their fields in Attachment, which is nil for a
// text block (so the block streamed with every chunk stays small). Raw keeps
// the block's JSON as received (it is nil for blocks built in Go).
type ContentBlock struct {
	Type BlockType
	Text string
	// Attachment holds the fields of a block that is not plain text: nil
	// for a text block and for blocks of a type this version does not know.
	Attachment *Attachment
	Raw        json.RawMessage
}

// Attachment is what an image, audio, resource_link or resource block
// carries besides its type: its fields are those of the block's JSON.
type Attachment struct {
	Data     string `json:"data,omitempty"` // base64, for image and audio
	MimeType string `json:"mimeType,omitempty"`
	URI      string `json:"uri,omitempty"`
	Name     string `json:"name,omitempty"` // resource_link
	Title    string `json:"title,omitempty"`
	// Resource is the embedded resource of a "resource" block.
	Resource *EmbeddedResource `json:"resource,omitempty"`
}

// EmbeddedResource is the body of a "resource" content block: text or a
// base64 blob.
type EmbeddedResource struct {
	URI      string `json:"uri"`
	MimeType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// contentBlockJSON is a block's JSON: the attachment's members sit beside
// type and text (encoding/json flattens the embedded pointer, allocating it
// only when one of them is present).
type contentBlockJSON struct {
	Type BlockType `json:"type"`
	Text string    `json:"text,omitempty"`
	*Attachment
}

// UnmarshalJSON decodes a block and keeps a copy of its raw JSON.
func (b *ContentBlock) UnmarshalJSON(data []byte) error {
	return b.decode(append(json.RawMessage(nil), data...))
}

// decode decodes raw into b, keeping raw itself (the caller's to give).
func (b *ContentBlock) decode(raw json.RawMessage) error {
	var j contentBlockJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	*b = ContentBlock{Type: j.Type, Text: j.Text, Attachment: j.Attachment, Raw: raw}
	return nil
}

// MarshalJSON writes Raw when the block has an unknown type and came from
// the wire, so unknown blocks pass through unchanged.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	if len(b.Raw) > 0 && !knownContentType(b.Type) {
		return b.Raw, nil
	}
	return json.Marshal(contentBlockJSON{Type: b.Type, Text: b.Text, Attachment: b.Attachment})
}

func knownContentType(t BlockType) bool {
	switch t {
	case BlockText, BlockImage, BlockAudio, BlockResourceLink, BlockResource:
		return true
	}
	return false
}

// TextBlock returns a text content block.
func TextBlock(s string) ContentBlock { return ContentBlock{Type: BlockText, Text: s} }

// ImageBlock returns an image content block from base64 data.
func ImageBlock(mimeType, base64Data string) ContentBlock {
	return ContentBlock{Type: BlockImage, Attachment: &Attachment{MimeType: mimeType, Data: base64Data}}
}

// ResourceLinkBlock returns a link to a resource the agent can fetch itself.
func ResourceLinkBlock(name, uri string) ContentBlock {
	return ContentBlock{Type: BlockResourceLink, Attachment: &Attachment{Name: name, URI: uri}}
}

// ResourceBlock returns an embedded text resource (an @-mentioned file).
func ResourceBlock(uri, mimeType, text string) ContentBlock {
	return ContentBlock{Type: BlockResource, Attachment: &Attachment{Resource: &EmbeddedResource{URI: uri, MimeType: mimeType, Text: text}}}
}

// StopReason is why the agent ended a turn.
type StopReason string

// The stop reasons of ACP v1.
const (
	StopEndTurn         StopReason = "end_turn"
	StopMaxTokens       StopReason = "max_tokens"
	StopMaxTurnRequests StopReason = "max_turn_requests"
	StopRefusal         StopReason = "refusal"
	StopCancelled       StopReason = "cancelled"
)

// SessionMode is one mode a session can be in.
type SessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// SessionModes is the mode state the agent reported for a session.
type SessionModes struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []SessionMode `json:"availableModes"`
}

// ConfigOption is one session configuration option (a model picker, a
// thought level …). Type is "select", "boolean" or unknown; Raw keeps the
// whole option. For a select, Choices lists the values in the agent's
// order (grouped ones flattened, each with its Group) and CurrentValue is
// the chosen value's JSON string; for a boolean, CurrentValue is true or
// false.
type ConfigOption struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	Category     ConfigCategory  `json:"category,omitempty"`
	Type         string          `json:"type"`
	CurrentValue json.RawMessage `json:"currentValue,omitempty"`
	Choices      []ConfigChoice  `json:"-"`
	Raw          json.RawMessage `json:"-"`
}

// ConfigCategory says what a config option is for, so that a UI can put
// the model and the thought level in pickers of their own. The set is
// open; "" when the agent gives none.
type ConfigCategory string

// The categories of the schema.
const (
	CategoryMode         ConfigCategory = "mode"
	CategoryModel        ConfigCategory = "model"
	CategoryModelConfig  ConfigCategory = "model_config"
	CategoryThoughtLevel ConfigCategory = "thought_level"
)

// ConfigChoice is one value of a select option: Value is what
// SetConfigOption takes; Group and GroupName name the group it was listed
// in, when the agent grouped them.
type ConfigChoice struct {
	Value       string
	Name        string
	Description string
	Group       string
	GroupName   string
}

// Current returns the select's current value ("" for other types).
func (o *ConfigOption) Current() string {
	var v string
	if json.Unmarshal(o.CurrentValue, &v) != nil {
		return ""
	}
	return v
}

// UnmarshalJSON decodes an option and keeps its raw JSON.
func (o *ConfigOption) UnmarshalJSON(data []byte) error {
	type plain ConfigOption
	var p struct {
		plain
		Options json.RawMessage `json:"options"`
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*o = ConfigOption(p.plain)
	o.Choices = decodeChoices(p.Options)
	o.Raw = data
	return nil
}

// decodeChoices flattens a select's options, grouped or not; items that
// do not decode are skipped.
func decodeChoices(raw json.RawMessage) []ConfigChoice {
	var items []struct {
		Value       *string `json:"value"`
		Name        string  `json:"name"`
		Description string  `json:"description"`
		Group       string  `json:"group"`
		Options     []struct {
			Value       *string `json:"value"`
			Name        string  `json:"name"`
			Description string  `json:"description"`
		} `json:"options"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []ConfigChoice
	for _, it := range items {
		if it.Value != nil {
			out = append(out, ConfigChoice{Value: *it.Value, Name: it.Name, Description: it.Description})
			continue
		}
		for _, c := range it.Options {
			if c.Value != nil {
				out = append(out, ConfigChoice{Value: *c.Value, Name: c.Name, Description: c.Description, Group: it.Group, GroupName: it.Name})
			}
		}
	}
	return out
}

// decodeConfigOptions keeps every option it can decode; an option of an
// unknown type is kept with its raw JSON, a malformed one is skipped.
func DecodeConfigOptions(raw json.RawMessage) []ConfigOption {
	return decodeEach(raw, func(item json.RawMessage) (ConfigOption, bool) {
		var o ConfigOption
		return o, json.Unmarshal(item, &o) == nil
	})
}

// Implementation names a program: the agent's agentInfo.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// AuthMethod is one way the agent offers to authenticate. Type "" or
// "agent" is done by the agent through authenticate (ACPOptions.AuthMethod);
// "terminal" (offered only with ACPOptions.Advertise.TerminalAuth) by running the
// agent's own program interactively with Args appended and Env set — see
// ACPClient.TerminalAuthCommand. Other types are the agent's own.
type AuthMethod struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Type        string            `json:"type,omitempty"`
	Args        []string          `json:"args,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
}
