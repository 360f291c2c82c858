package state

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
	"time"
)

// A session's transcript is what acphost sessions history shows: for each
// turn the prompt, the tool calls (title, kind, final status), the agent's
// answer and how the turn ended, one JSON line each, in
// transcripts/KEY.jsonl under the store's directory. The agent keeps the
// conversation itself; this is the host's short account of it, bounded.

// Bounds of a transcript: the file, one entry's text, the tool calls kept
// of one turn.
const (
	MaxTranscriptBytes = 1 << 20
	MaxEntryText       = 16 << 10
	MaxEntryField      = 256 // a tool's title, kind, status; a stop reason
	MaxTranscriptTools = 100
	CutMark            = "…(cut)"
)

// Entry types.
const (
	EntryPrompt = "prompt"
	EntryTool   = "tool"
	EntryAnswer = "answer"
	EntryEnd    = "end"
)

// Entry is one line of a transcript.
type Entry struct {
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

// Bounded returns e with its text cut to the bounds.
func (e Entry) Bounded() Entry {
	e.Text = cutText(e.Text, MaxEntryText)
	e.Error = cutText(e.Error, MaxEntryText)
	e.Title = cutText(e.Title, MaxEntryField)
	e.Kind = Clip(e.Kind, MaxEntryField)
	e.Status = Clip(e.Status, MaxEntryField)
	e.Refused = Clip(e.Refused, MaxEntryField)
	e.Stop = Clip(e.Stop, MaxEntryField)
	e.Ms = max(e.Ms, 0)
	e.Omitted = max(e.Omitted, 0)
	return e
}

// cutText cuts s to n bytes, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Clip(s, n-len(CutMark)) + CutMark
}

// ValidEntryType reports whether t is a type of entry.
func ValidEntryType(t string) bool {
	switch t {
	case EntryPrompt, EntryTool, EntryAnswer, EntryEnd:
		return true
	}
	return false
}

// transcriptKey names a record's transcript file: a hash of its agent
// (the name; for a command after --, the command) and session id.
func transcriptKey(r Record) string {
	who := "agent\x00" + r.Agent
	if r.Agent == "" {
		who = "command\x00" + strings.Join(r.Command, "\x00")
	}
	sum := sha256.Sum256([]byte(who + "\x00" + r.ID))
	return hex.EncodeToString(sum[:16])
}

func (s *Store) transcriptDir() string { return filepath.Join(s.Dir, "transcripts") }

// TranscriptPath is the file of r's transcript.
func (s *Store) TranscriptPath(r Record) string {
	return filepath.Join(s.transcriptDir(), transcriptKey(r)+".jsonl")
}

// privateTranscriptDir makes the transcripts directory, and holds it to
// the store's rule: the user's own, writable by nobody else, no link.
// Caller holds the lock.
func (s *Store) privateTranscriptDir() error {
	if err := PrivateDir(s.transcriptDir()); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// AppendTranscript adds entries to r's transcript. When the file would
// grow past maxTranscriptBytes, its oldest turns go first, down to three
// quarters of it.
func (s *Store) AppendTranscript(r Record, entries []Entry) error {
	b, err := encodeEntries(entries)
	if err != nil {
		return err
	}
	return s.locked(func() error { return s.appendTranscriptLocked(r, b) })
}

func (s *Store) appendTranscriptLocked(r Record, b []byte) error {
	if err := s.privateTranscriptDir(); err != nil {
		return err
	}
	path := s.TranscriptPath(r)
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
	if fi.Size()+int64(len(b)) <= MaxTranscriptBytes {
		if _, err := f.Write(b); err != nil {
			return fmt.Errorf("session store: transcript: %w", err)
		}
		return nil
	}
	old, err := readTail(f, fi.Size(), MaxTranscriptBytes)
	if err != nil {
		return fmt.Errorf("session store: transcript: %w", err)
	}
	// Cut to three quarters, so that the next turns append again rather
	// than each rewriting a full file.
	kept := keepNewest(old, MaxTranscriptBytes*3/4-len(b))
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
		var e Entry
		if json.Unmarshal(lines[start], &e) == nil && e.Type == EntryPrompt {
			break
		}
		start++
	}
	return bytes.Join(lines[start:], nil)
}

// ReadTranscript returns r's transcript (nothing when there is none) and
// the file's size. Lines that are not entries are skipped; every entry is
// cut to the bounds again, whoever wrote the file.
func (s *Store) ReadTranscript(r Record) (entries []Entry, size int64, err error) {
	err = s.locked(func() error {
		entries, size, err = s.readTranscriptLocked(r)
		return err
	})
	return entries, size, err
}

func (s *Store) readTranscriptLocked(r Record) ([]Entry, int64, error) {
	if _, err := os.Lstat(s.transcriptDir()); errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err := CheckPrivateDir(s.transcriptDir()); err != nil {
		return nil, 0, fmt.Errorf("session store: %w", err)
	}
	path := s.TranscriptPath(r)
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
	b, err := readTail(f, fi.Size(), MaxTranscriptBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("session store: transcript: %w", err)
	}
	return parseTranscript(b), fi.Size(), nil
}

// parseTranscript decodes the entries of JSON lines, skipping any other
// line.
func parseTranscript(b []byte) []Entry {
	var es []Entry
	for line := range bytes.Lines(b) {
		var e Entry
		if json.Unmarshal(line, &e) != nil || !ValidEntryType(e.Type) {
			continue
		}
		es = append(es, e.Bounded())
	}
	return es
}

// removeTranscriptLocked deletes r's transcript, if any. Caller holds the lock.
func (s *Store) removeTranscriptLocked(r Record) error {
	err := os.Remove(s.TranscriptPath(r))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// writeTranscriptLocked replaces r's transcript with entries (the newest
// turns that fit the bound). Caller holds the lock.
func (s *Store) writeTranscriptLocked(r Record, entries []Entry) error {
	if err := s.privateTranscriptDir(); err != nil {
		return err
	}
	b, err := encodeEntries(entries)
	if err != nil {
		return err
	}
	if len(b) > MaxTranscriptBytes {
		b = keepNewest(b, MaxTranscriptBytes)
	}
	return transcriptErr(replaceFile(s.TranscriptPath(r), b))
}

// encodeEntries writes entries as JSON lines, each bounded.
func encodeEntries(entries []Entry) ([]byte, error) {
	var b []byte
	for _, e := range entries {
		line, err := json.Marshal(e.Bounded())
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
