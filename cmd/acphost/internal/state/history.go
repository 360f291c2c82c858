package state

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// maxHistory bounds the prompts kept per agent; the file is cut back to
// it when it has grown to twice as many lines.
const maxHistory = 500

// History is the prompts typed to one agent, most recent last: in memory
// for the line editor, and in a file under the state directory
// (acphost/history/AGENT, mode 0600) so they outlive the process. Every
// line is appended with the file locked, so acphost processes running at
// once keep each other's lines; none is lost when the file is cut back.
type History struct {
	mu    sync.Mutex
	lines []string
	path  string // "" : in memory only (--no-store)
}

// HistoryKey names an agent's history file: its name, or for a command
// (when it has no name) a readable part of it and a hash of the whole.
func HistoryKey(agentName string, command []string) string {
	if agentName != "" || len(command) == 0 {
		return SafeFileName(agentName)
	}
	sum := sha256.Sum256([]byte(strings.Join(command, "\x00")))
	return SafeFileName(filepath.Base(command[0])) + "-" + hex.EncodeToString(sum[:4])
}

// SafeFileName is s as a file name: letters, digits, - _ and . kept, any
// other character made _; "agent" when nothing (or only dots) is left.
func SafeFileName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 || strings.Trim(b.String(), ".") == "" {
		return "agent"
	}
	return b.String()
}

// OpenHistory loads the history in dir/history/key ("" dir: in memory).
func OpenHistory(dir, key string) (*History, error) {
	h := &History{}
	if dir == "" {
		return h, nil
	}
	h.path = filepath.Join(dir, "history", key)
	err := h.locked(func() error {
		lines, err := readLines(h.path)
		if err != nil {
			return err
		}
		if len(lines) > 2*maxHistory {
			lines = lines[len(lines)-maxHistory:]
			if err := writeLines(h.path, lines); err != nil {
				return err
			}
		}
		if len(lines) > maxHistory {
			lines = lines[len(lines)-maxHistory:]
		}
		h.lines = lines
		return nil
	})
	return h, err
}

// locked runs fn holding the history's lock. The directory is checked as
// the store's (the user's own, writable by nobody else, not a link) and
// nothing in it is opened through a link.
func (h *History) locked(fn func() error) error {
	if err := PrivateDir(filepath.Dir(h.path)); err != nil {
		return err
	}
	return withLock(h.path+".lock", fn)
}

// maxHistoryBytes bounds what is read of a history file.
const maxHistoryBytes = 4 << 20

func readLines(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(io.LimitReader(f, maxHistoryBytes))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// writeLines replaces the file atomically.
func writeLines(path string, lines []string) error {
	return replaceFile(path, []byte(strings.Join(lines, "\n")+"\n"))
}

// Add records a line: not a blank one, nor the one just before again.
func (h *History) Add(line string) {
	if strings.TrimSpace(line) == "" || strings.ContainsAny(line, "\r\n") {
		return
	}
	h.mu.Lock()
	if n := len(h.lines); n > 0 && h.lines[n-1] == line {
		h.mu.Unlock()
		return
	}
	h.lines = append(h.lines, line)
	if len(h.lines) > maxHistory {
		h.lines = h.lines[len(h.lines)-maxHistory:]
	}
	h.mu.Unlock()
	if h.path == "" {
		return
	}
	_ = h.locked(func() error {
		f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|oNoFollow, 0o600)
		if err != nil {
			return err
		}
		_, err = f.WriteString(line + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
}

// Len is how many lines the history holds.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.lines)
}

// At is the i-th most recent line (0: the last).
func (h *History) At(i int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lines[len(h.lines)-1-i]
}
