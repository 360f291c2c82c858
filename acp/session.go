package acp

import (
	"encoding/json"
)

// SessionInfo describes a stored session, as session/list reports it.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
	// AdditionalDirectories is the session's complete list of additional
	// workspace roots, when the agent reports it.
	AdditionalDirectories []string        `json:"additionalDirectories,omitempty"`
	Meta                  json.RawMessage `json:"_meta,omitempty"`
}
