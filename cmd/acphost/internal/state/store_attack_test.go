//go:build unix

package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStoreRefusesADirOthersCanWrite: --resume runs the command a record
// names, so whoever can write the store's directory would choose what the
// next `acphost --resume last` executes. A directory that already exists
// writable by group and others (pre-created by another user under a shared
// XDG_STATE_HOME or ACPHOST_STATE_DIR) is refused, and a sessions.lock
// symlink is never followed.
func TestStoreRefusesADirOthersCanWrite(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "acphost")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	// "Another user" plants a record for the victim's directory ...
	cwd := t.TempDir()
	planted := storeFile{Version: 1, Sessions: []Record{{ID: "s1", Command: []string{"sh", "-c", "touch " + filepath.Join(root, "pwned")},
		Cwd: cwd, Created: time.Now(), LastUsed: time.Now()}}}
	b, _ := json.Marshal(planted)
	if err := os.WriteFile(filepath.Join(dir, "sessions.json"), b, 0o666); err != nil {
		t.Fatal(err)
	}
	// ... and a lock that points elsewhere.
	victim := filepath.Join(root, "victim-file")
	if err := os.Symlink(victim, filepath.Join(dir, "sessions.lock")); err != nil {
		t.Fatal(err)
	}

	recs, err := (&Store{Dir: dir}).List()
	if err == nil {
		i, ferr := Find(recs, "last", cwd)
		if ferr == nil {
			t.Errorf("a store in a directory anyone can write (mode %o) was trusted: --resume last would run %q", 0o777, recs[i].Command)
		}
	}
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("the sessions.lock symlink was followed: %s was created", victim)
	}
}

// TestStoreBoundsAgentTitles: the agent's session title
// (session_info_update, up to the 64 MiB line limit) is cut when recorded:
// 1000 records of whole titles would make a store of tens of gigabytes
// that every acphost run reads.
func TestStoreBoundsAgentTitles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "acphost")
	st := &Store{Dir: dir}
	huge := strings.Repeat("t", 16<<20)
	if err := st.Put(Record{ID: "s1", Command: []string{"agent"}, Cwd: "/", Title: huge, Created: time.Now(), LastUsed: time.Now()}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(st.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 1<<20 {
		t.Errorf("one record with an agent-chosen title made a %d-byte store", fi.Size())
	}
}

// TestTranscriptLinksAreNotFollowed: a transcript planted as a symbolic
// link (to a file the user can write: ~/.bashrc, say) is neither written
// through nor read; nor is a transcripts directory that is a link.
func TestTranscriptLinksAreNotFollowed(t *testing.T) {
	root := t.TempDir()
	st := &Store{Dir: filepath.Join(root, "acphost")}
	r := Record{ID: "s1", Agent: "demo"}
	if err := st.AppendTranscript(r, []Entry{{Type: EntryPrompt, Text: "first"}}); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := st.TranscriptPath(r)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	werr := st.AppendTranscript(r, []Entry{{Type: EntryPrompt, Text: "through the link"}})
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the transcript link was followed: the file it names now holds %q", b)
	}
	if werr == nil {
		t.Errorf("writing through a linked transcript did not fail")
	}
	if es, _, err := st.ReadTranscript(r); err == nil {
		t.Errorf("a linked transcript was read: %v", es)
	}

	// The directory itself a link: refused.
	other := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(st.transcriptDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, st.transcriptDir()); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendTranscript(r, []Entry{{Type: EntryPrompt, Text: "x"}}); err == nil {
		t.Errorf("a transcripts directory that is a link was written in")
	}
	if left, _ := os.ReadDir(other); len(left) > 0 {
		t.Errorf("the linked transcripts directory got %d file(s)", len(left))
	}
}

// TestPromptHistoryLinksAreNotFollowed: the per-agent prompt history is
// kept as the store is: a history file planted as a link is neither read
// nor written through, and a history directory that is a link (or that
// others can write) is refused.
func TestPromptHistoryLinksAreNotFollowed(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "acphost")
	h, err := OpenHistory(dir, "demo")
	if err != nil {
		t.Fatal(err)
	}
	h.Add("first")
	victim := filepath.Join(root, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "history", "demo")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if h2, err := OpenHistory(dir, "demo"); err == nil && h2.Len() > 0 {
		t.Errorf("a linked history was read: %d lines", h2.Len())
	}
	h.Add("through the link")
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the history link was followed: the file it names now holds %q", b)
	}

	other := filepath.Join(root, "elsewhere")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "history")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dir, "history")); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHistory(dir, "demo"); err == nil {
		t.Errorf("a history directory that is a link was used")
	}
	h.Add("into the linked dir")
	if left, _ := os.ReadDir(other); len(left) > 0 {
		t.Errorf("the linked history directory got %d file(s)", len(left))
	}

	if err := os.Remove(filepath.Join(dir, "history")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "history"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "history"), 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenHistory(dir, "demo"); err == nil {
		t.Errorf("a history directory others can write was used")
	}
}

// TestStoreKeepsOneRecordWhenANamedAgentsCommandChanges: a named agent's
// record is the same conversation whatever command the configuration
// runs for it today; a command after -- is told apart by the command.
func TestStoreKeepsOneRecordWhenANamedAgentsCommandChanges(t *testing.T) {
	st := &Store{Dir: filepath.Join(t.TempDir(), "acphost")}
	for _, cmd := range [][]string{{"npx", "agent@1"}, {"npx", "agent@2"}} {
		if err := st.Put(Record{ID: "s1", Agent: "mine", Command: cmd, Cwd: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range [][]string{{"a"}, {"b"}} {
		if err := st.Put(Record{ID: "s1", Command: cmd, Cwd: "/"}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := st.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3 (one for the named agent, one per command): %+v", len(recs), recs)
	}
}
