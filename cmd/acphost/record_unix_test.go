//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// TestRecordRefusesAFileItDoesNotOwn: --record FILE in a directory others
// share (/tmp) must not write the wire (prompts, answers) into a file
// another user planted there, nor hang on a FIFO they made (opening one
// for writing waits for a reader, who would then read the wire).
func TestRecordRefusesAFileItDoesNotOwn(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err != nil {
		t.Skip("no FIFO here:", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := openRecording(fifo)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO was taken for the recording")
		}
	case <-time.After(10 * time.Second):
		// Unblock the open (a reader arrives) so the goroutine ends.
		if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			r.Close()
		}
		t.Fatal("opening a FIFO for the recording hangs")
	}

	if os.Geteuid() == 0 {
		theirs := filepath.Join(dir, "theirs.jsonl")
		if err := os.WriteFile(theirs, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if f, err := openRecording(theirs); err == nil {
			f.Close()
			t.Error("another user's file was taken for the recording")
		} else if !strings.Contains(err.Error(), "another user") {
			t.Errorf("refused as %v", err)
		}
	}

	mine := filepath.Join(dir, "mine.jsonl")
	if err := os.WriteFile(mine, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := openRecording(mine)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(mine); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 0 {
		t.Errorf("the user's own file: %v %v (want it emptied, 0600)", fi.Mode(), err)
	}
}

// TestStderrFileIsOpenedAsTheRecordIs: --stderr FILE takes no link, no
// FIFO and no other user's file either (the agent's stderr can carry its
// secrets), but a character device such as /dev/null is fine.
func TestStderrFileIsOpenedAsTheRecordIs(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if f, err := state.OpenOutput(link, true); err == nil {
		f.Close()
		t.Error("a link was followed")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Error("the link's target was written")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o666); err == nil {
		if f, err := state.OpenOutput(fifo, true); err == nil {
			f.Close()
			t.Error("a FIFO was taken")
		}
	}
	f, err := state.OpenOutput(os.DevNull, true)
	if err != nil {
		t.Fatalf("%s: %v", os.DevNull, err)
	}
	f.Close()
	if fi, err := os.Stat(os.DevNull); err != nil || fi.Mode().Perm()&0o666 != 0o666 {
		t.Errorf("%s changed: %v %v", os.DevNull, fi.Mode(), err)
	}
	r := runWith(t, nil, "", "--no-store", "--stderr", link, "-p", "hi")
	if r.code == 0 || !strings.Contains(r.stderr, "--stderr") {
		t.Errorf("--stderr through a link: exit %d; stderr %q", r.code, r.stderr)
	}
}
