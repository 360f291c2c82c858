// End-of-turn token usage: the usage member of a session/prompt result
// (unstable in the schema).

package acp

import (
	"encoding/json"
)

// Usage is the tokens one turn used, as the agent reports them when the
// turn ends (the usage member of the session/prompt result). It is
// unstable in the schema: the host library types it only with
// ACPOptions.Unstable. The three totals are required; the others are nil
// when the agent did not report them.
type Usage struct {
	TotalTokens  uint64 `json:"totalTokens"`
	InputTokens  uint64 `json:"inputTokens"`
	OutputTokens uint64 `json:"outputTokens"`
	// ThoughtTokens are the reasoning tokens, when reported.
	ThoughtTokens *uint64 `json:"thoughtTokens,omitempty"`
	// CachedReadTokens and CachedWriteTokens are the tokens read from and
	// written to the model's prompt cache, when reported.
	CachedReadTokens  *uint64 `json:"cachedReadTokens,omitempty"`
	CachedWriteTokens *uint64 `json:"cachedWriteTokens,omitempty"`
}

// DecodeUsage decodes a prompt result's usage as the schema's lenient
// rules have it: an optional count that is not a non-negative integer is
// dropped (nil). It returns nil when raw is absent or null, and nil with an
// error matching ErrMalformed when raw is not an object or one of the three
// required totals is missing or not a non-negative integer.
func DecodeUsage(raw json.RawMessage) (*Usage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if !isObject(raw) || json.Unmarshal(raw, &m) != nil {
		return nil, malformed("usage is not an object")
	}
	var u Usage
	for _, f := range []struct {
		key string
		dst *uint64
	}{{"totalTokens", &u.TotalTokens}, {"inputTokens", &u.InputTokens}, {"outputTokens", &u.OutputTokens}} {
		n, ok := count(m[f.key])
		if !ok {
			return nil, malformed("usage." + f.key + " is missing or not a count")
		}
		*f.dst = n
	}
	for _, f := range []struct {
		key string
		dst **uint64
	}{{"thoughtTokens", &u.ThoughtTokens}, {"cachedReadTokens", &u.CachedReadTokens}, {"cachedWriteTokens", &u.CachedWriteTokens}} {
		if n, ok := count(m[f.key]); ok {
			*f.dst = &n
		}
	}
	return &u, nil
}

// count decodes a non-negative integer that fits in a uint64.
func count(raw json.RawMessage) (uint64, bool) {
	var n uint64
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}
