package acp

import (
	"encoding/json"
)

// Update kinds an agent sends only to a client that advertised them:
// notices with ACPOptions.Advertise.Notices, compactions with ACPOptions.Advertise.Compaction.
const (
	KindNotice                 UpdateKind = "notice"
	KindCompactionUpdate       UpdateKind = "compaction_update"
	KindCompactionSummaryChunk UpdateKind = "compaction_summary_chunk"
)

// NoticeSeverity is how a notice asks to be shown. The set is open.
type NoticeSeverity string

// The severities of the schema.
const (
	NoticeInfo    NoticeSeverity = "info"
	NoticeWarning NoticeSeverity = "warning"
	NoticeError   NoticeSeverity = "error"
)

// NoticeUpdate is information for the person — a rate limit reached, a
// model switched — that is live, not part of the session's history: the
// agent must not count on it being seen. Title is plain text that stands
// alone; Description is optional detail. Show both through SafeText.
type NoticeUpdate struct {
	updateHeader
	Severity    NoticeSeverity
	Title       string
	Description string
}

// CompactionStatus is where a context compaction stands. The set is open.
type CompactionStatus string

// The statuses of the schema.
const (
	CompactionInProgress CompactionStatus = "in_progress"
	CompactionCompleted  CompactionStatus = "completed"
	CompactionFailed     CompactionStatus = "failed"
	CompactionCancelled  CompactionStatus = "cancelled"
)

// CompactionUpdate creates a context compaction (the agent summarising
// the conversation to free its context window) or patches one by its ID.
// The first update for an ID fixes its place in the transcript. Summary
// and Error follow patch rules: SummarySet false leaves the summary as it
// was, true replaces it (nil or empty clears it); likewise Error and
// ErrorSet (nil with ErrorSet clears it).
type CompactionUpdate struct {
	updateHeader
	ID         string
	Status     CompactionStatus
	Summary    []ContentBlock
	SummarySet bool
	Error      *string
	ErrorSet   bool
}

// CompactionSummaryChunk appends one block to the summary of compaction
// ID (a first-seen ID starts an in-progress compaction).
type CompactionSummaryChunk struct {
	updateHeader
	ID      string
	Content ContentBlock
}

func decodeNotice(h updateHeader) Update {
	var w struct {
		Update struct {
			Severity    NoticeSeverity `json:"severity"`
			Title       string         `json:"title"`
			Description *string        `json:"description"`
		} `json:"update"`
	}
	if err := json.Unmarshal(h.raw, &w); err != nil || w.Update.Title == "" {
		return &UnknownUpdate{updateHeader: h, Err: orMissing(err, "a notice without a title")}
	}
	n := &NoticeUpdate{updateHeader: h, Severity: w.Update.Severity, Title: w.Update.Title}
	if w.Update.Description != nil {
		n.Description = *w.Update.Description
	}
	return n
}

func decodeCompaction(h updateHeader) Update {
	var w struct {
		Update struct {
			ID      string           `json:"compactionId"`
			Status  CompactionStatus `json:"status"`
			Summary json.RawMessage  `json:"summary"`
			Error   json.RawMessage  `json:"error"`
		} `json:"update"`
	}
	if err := json.Unmarshal(h.raw, &w); err != nil || w.Update.ID == "" || w.Update.Status == "" {
		return &UnknownUpdate{updateHeader: h, Err: orMissing(err, "a compaction_update without compactionId or status")}
	}
	c := &CompactionUpdate{updateHeader: h, ID: w.Update.ID, Status: w.Update.Status}
	if len(w.Update.Summary) > 0 {
		c.SummarySet = true
		c.Summary = decodeBlocks(w.Update.Summary)
	}
	c.Error, c.ErrorSet = optionalString(w.Update.Error)
	if c.Error != nil {
		c.ErrorSet = true
	}
	return c
}

// decodeCompactionChunk builds a summary chunk from the fields the
// update's one decoding pass (decodeUpdateSlow) read.
func decodeCompactionChunk(h updateHeader, id string, content json.RawMessage) Update {
	if id == "" || len(content) == 0 {
		return &UnknownUpdate{updateHeader: h, Err: malformed("a compaction_summary_chunk without compactionId or content")}
	}
	c := &CompactionSummaryChunk{updateHeader: h, ID: id}
	if err := c.Content.decode(content); err != nil {
		return &UnknownUpdate{updateHeader: h, Err: err}
	}
	return c
}

// decodeBlocks decodes an array of content blocks, skipping any that do
// not decode (as the schema asks: x-deserialize-skip-invalid-items).
func decodeBlocks(raw json.RawMessage) []ContentBlock {
	return decodeEach(raw, func(item json.RawMessage) (ContentBlock, bool) {
		var b ContentBlock
		return b, b.decode(item) == nil
	})
}

func orMissing(err error, what string) error {
	if err != nil {
		return err
	}
	return malformed(what)
}
