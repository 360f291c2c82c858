package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost"
)

// A session's transcript is what acphost sessions history shows: for each
// turn the prompt, the tool calls (title, kind, final status), the agent's
// answer and how the turn ended, one JSON line each, in
// transcripts/KEY.jsonl under the store's directory. The agent keeps the
// conversation itself; this is the host's short account of it, bounded.

// Bounds of a transcript: the file, one entry's text, the tool calls kept
// of one turn.
const (
	maxTranscriptBytes = 1 << 20
	maxEntryText       = 16 << 10
	maxEntryField      = 256 // a tool's title, kind, status; a stop reason
	maxTranscriptTools = 100
	cutMark            = "…(cut)"
)

// Entry types.
const (
	entryPrompt = "prompt"
	entryTool   = "tool"
	entryAnswer = "answer"
	entryEnd    = "end"
)

// transcriptEntry is one line of a transcript.
type transcriptEntry struct {
	Time time.Time `json:"time"`
	Type string    `json:"type"` // prompt, tool, answer, end
	// Text is a prompt's or an answer's text.
	Text string `json:"text,omitempty"`
	// Title, Kind and Status are a tool call's, as it ended.
	Title  string `json:"title,omitempty"`
	Kind   string `json:"kind,omitempty"`
	Status string `json:"status,omitempty"`
	// Refused says the tool call's permission was refused ("rejected",
	// "rejected by plan mode", "cancelled"), whatever the agent reported.
	Refused string `json:"refused,omitempty"`
	// Stop, Ms, Error and Omitted end a turn: its stop reason, how long it
	// took, why it failed, how many tool calls were not kept.
	Stop    string `json:"stop,omitempty"`
	Ms      int64  `json:"ms,omitempty"`
	Error   string `json:"error,omitempty"`
	Omitted int    `json:"omitted,omitempty"`
}

// bounded returns e with its text cut to the bounds.
func (e transcriptEntry) bounded() transcriptEntry {
	e.Text = cutText(e.Text, maxEntryText)
	e.Error = cutText(e.Error, maxEntryText)
	e.Title = cutText(e.Title, maxEntryField)
	e.Kind = clip(e.Kind, maxEntryField)
	e.Status = clip(e.Status, maxEntryField)
	e.Refused = clip(e.Refused, maxEntryField)
	e.Stop = clip(e.Stop, maxEntryField)
	e.Ms = max(e.Ms, 0)
	e.Omitted = max(e.Omitted, 0)
	return e
}

// cutText cuts s to n bytes, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return clip(s, n-len(cutMark)) + cutMark
}

// validEntryType reports whether t is a type of entry.
func validEntryType(t string) bool {
	switch t {
	case entryPrompt, entryTool, entryAnswer, entryEnd:
		return true
	}
	return false
}

// turnEntries is the transcript of one turn.
func turnEntries(prompt string, since time.Time, r turnResult, refused map[string]string) []transcriptEntry {
	now := time.Now()
	es := []transcriptEntry{{Time: since, Type: entryPrompt, Text: prompt}}
	tools := r.resp.ToolCalls
	omitted := 0
	if len(tools) > maxTranscriptTools {
		omitted = len(tools) - maxTranscriptTools
		tools = tools[:maxTranscriptTools]
	}
	for _, tc := range tools {
		es = append(es, transcriptEntry{Time: now, Type: entryTool, Title: tc.Title, Kind: string(tc.Kind), Status: string(tc.Status), Refused: refused[tc.ID]})
	}
	if text := strings.TrimSpace(r.resp.Text); text != "" {
		es = append(es, transcriptEntry{Time: now, Type: entryAnswer, Text: text})
	}
	end := transcriptEntry{Time: now, Type: entryEnd, Stop: string(r.stop), Ms: r.elapsed.Milliseconds(), Omitted: omitted}
	if r.err != nil && !r.userCancel {
		end.Error = dedupe(r.err.Error())
	}
	return append(es, end)
}

// transcriptKey names a record's transcript file: a hash of its agent
// (the name; for a command after --, the command) and session id.
func transcriptKey(r sessionRecord) string {
	who := "agent\x00" + r.Agent
	if r.Agent == "" {
		who = "command\x00" + strings.Join(r.Command, "\x00")
	}
	sum := sha256.Sum256([]byte(who + "\x00" + r.ID))
	return hex.EncodeToString(sum[:16])
}

func (s *store) transcriptDir() string { return filepath.Join(s.dir, "transcripts") }

func (s *store) transcriptPath(r sessionRecord) string {
	return filepath.Join(s.transcriptDir(), transcriptKey(r)+".jsonl")
}

// privateTranscriptDir makes the transcripts directory, and holds it to
// the store's rule: the user's own, writable by nobody else, no link.
// Caller holds the lock.
func (s *store) privateTranscriptDir() error {
	if err := privateDir(s.transcriptDir()); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// appendTranscript adds entries to r's transcript. When the file would
// grow past maxTranscriptBytes, its oldest turns go first, down to three
// quarters of it.
func (s *store) appendTranscript(r sessionRecord, entries []transcriptEntry) error {
	b, err := encodeEntries(entries)
	if err != nil {
		return err
	}
	return s.locked(func() error { return s.appendTranscriptLocked(r, b) })
}

func (s *store) appendTranscriptLocked(r sessionRecord, b []byte) error {
	if err := s.privateTranscriptDir(); err != nil {
		return err
	}
	path := s.transcriptPath(r)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("session store: transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("session store: transcript: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("session store: transcript %s is not a regular file: refusing it", path)
	}
	if fi.Size()+int64(len(b)) <= maxTranscriptBytes {
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("session store: transcript: %w", err)
		}
		return nil
	}
	old, err := readTail(f, fi.Size(), maxTranscriptBytes)
	if err != nil {
		return fmt.Errorf("session store: transcript: %w", err)
	}
	// Cut to three quarters, so that the next turns append again rather
	// than each rewriting a full file.
	kept := keepNewest(old, maxTranscriptBytes*3/4-len(b))
	return transcriptErr(replaceFile(path, append(kept, b...)))
}

// readTail reads the last n bytes of f (size long), from the start of a
// line.
func readTail(f *os.File, size, n int64) ([]byte, error) {
	off := max(size-n, 0)
	b := make([]byte, size-off)
	if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
		return nil, err
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		} else {
			b = nil
		}
	}
	return b, nil
}

// keepNewest returns the newest whole turns of a transcript that fit in
// budget bytes.
func keepNewest(b []byte, budget int) []byte {
	if budget <= 0 {
		return nil
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	start, size := len(lines), 0
	for start > 0 && size+len(lines[start-1]) <= budget {
		start--
		size += len(lines[start])
	}
	// Begin with a turn's prompt, never in the middle of a turn.
	for start < len(lines) {
		var e transcriptEntry
		if json.Unmarshal(lines[start], &e) == nil && e.Type == entryPrompt {
			break
		}
		start++
	}
	return bytes.Join(lines[start:], nil)
}

// readTranscript returns r's transcript (nothing when there is none) and
// the file's size. Lines that are not entries are skipped; every entry is
// cut to the bounds again, whoever wrote the file.
func (s *store) readTranscript(r sessionRecord) (entries []transcriptEntry, size int64, err error) {
	err = s.locked(func() error {
		entries, size, err = s.readTranscriptLocked(r)
		return err
	})
	return entries, size, err
}

func (s *store) readTranscriptLocked(r sessionRecord) ([]transcriptEntry, int64, error) {
	if _, err := os.Lstat(s.transcriptDir()); errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err := checkPrivateDir(s.transcriptDir()); err != nil {
		return nil, 0, fmt.Errorf("session store: %w", err)
	}
	path := s.transcriptPath(r)
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("session store: transcript: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("session store: transcript: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("session store: transcript %s is not a regular file: refusing it", path)
	}
	b, err := readTail(f, fi.Size(), maxTranscriptBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("session store: transcript: %w", err)
	}
	return parseTranscript(b), fi.Size(), nil
}

// parseTranscript decodes the entries of JSON lines, skipping any other
// line.
func parseTranscript(b []byte) []transcriptEntry {
	var es []transcriptEntry
	for line := range bytes.Lines(b) {
		var e transcriptEntry
		if json.Unmarshal(line, &e) != nil || !validEntryType(e.Type) {
			continue
		}
		es = append(es, e.bounded())
	}
	return es
}

// removeTranscript deletes r's transcript, if any. Caller holds the lock.
func (s *store) removeTranscriptLocked(r sessionRecord) error {
	err := os.Remove(s.transcriptPath(r))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// writeTranscriptLocked replaces r's transcript with entries (the newest
// turns that fit the bound). Caller holds the lock.
func (s *store) writeTranscriptLocked(r sessionRecord, entries []transcriptEntry) error {
	if err := s.privateTranscriptDir(); err != nil {
		return err
	}
	b, err := encodeEntries(entries)
	if err != nil {
		return err
	}
	if len(b) > maxTranscriptBytes {
		b = keepNewest(b, maxTranscriptBytes)
	}
	return transcriptErr(replaceFile(s.transcriptPath(r), b))
}

// transcriptSink records each turn in the session's transcript, around
// the sink that shows it: the narrowest hook, one call as a turn ends.
type transcriptSink struct {
	sink
	a *app

	mu       sync.Mutex
	prompt   string
	since    time.Time
	refused  map[string]string // tool call id → why its permission was refused, this turn
	reported bool              // a failure to write was said once
}

func (t *transcriptSink) beginTurn(prompt string, echo bool) {
	t.mu.Lock()
	t.prompt, t.since, t.refused = prompt, time.Now(), map[string]string{}
	t.mu.Unlock()
	t.sink.beginTurn(prompt, echo)
}

// event notes the permission answers, so that the transcript says a
// rejected tool call was rejected even when the agent reports it completed.
func (t *transcriptSink) event(ev acphost.StreamEvent) {
	if ev.Type == acphost.EventPermissionAnswer && ev.Answer != nil {
		why := refusal(ev.Answer)
		t.mu.Lock()
		if t.refused != nil && why != "" && len(t.refused) < maxTranscriptTools {
			t.refused[ev.ID] = why
		} else if why == "" {
			delete(t.refused, ev.ID)
		}
		t.mu.Unlock()
	}
	t.sink.event(ev)
}

func (t *transcriptSink) endTurn(r turnResult) {
	t.sink.endTurn(r)
	sess := t.a.session()
	if sess == nil {
		return
	}
	t.mu.Lock()
	prompt, since, refused := t.prompt, t.since, t.refused
	t.mu.Unlock()
	rec := sessionRecord{ID: sess.ID()}
	rec.Agent, rec.Command = recordAgent(t.a.cfg)
	err := t.a.store.appendTranscript(rec, turnEntries(prompt, since, r, refused))
	if err == nil {
		return
	}
	t.mu.Lock()
	said := t.reported
	t.reported = true
	t.mu.Unlock()
	if !said {
		t.a.diag(styleYellow, "%s; this session's history is not recorded", acphost.SafeText(err.Error()))
	}
}

// encodeEntries writes entries as JSON lines, each bounded.
func encodeEntries(entries []transcriptEntry) ([]byte, error) {
	var b []byte
	for _, e := range entries {
		line, err := json.Marshal(e.bounded())
		if err != nil {
			return nil, err
		}
		b = append(append(b, line...), '\n')
	}
	return b, nil
}

// transcriptErr names a transcript write's failure.
func transcriptErr(err error) error {
	if err != nil {
		return fmt.Errorf("session store: transcript: %w", err)
	}
	return nil
}
