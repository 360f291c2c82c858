package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// sessionRecord is one conversation acphost had, enough to continue it
// later with --resume: the agent (by name, and the command that ran it),
// the agent's session id, the directory, what the agent called it, its mode
// and when it was last used.
type sessionRecord struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent,omitempty"` // the --agent name; "" for a command after --
	Command  []string  `json:"command"`
	Cwd      string    `json:"cwd"`
	Title    string    `json:"title,omitempty"`
	Mode     string    `json:"mode,omitempty"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"lastUsed"`
	// PID is the acphost process that has the session open, 0 once it
	// let go; TurnSince is when the turn it runs started (zero between
	// turns).
	PID       int       `json:"pid,omitempty"`
	TurnSince time.Time `json:"turnSince,omitzero"`
	// Control is that process's control socket (see control.go), which
	// acphost cancel and --no-wait talk to; "" once it let go.
	Control string `json:"control,omitempty"`
	// SSH and URL say how a remote agent was reached (--ssh HOST, --url
	// ws://…), so --resume reaches it again; a --url token is never kept
	// (give --token or $ACPHOST_TOKEN again).
	SSH string `json:"ssh,omitempty"`
	URL string `json:"url,omitempty"`
}

// state says whether a live acphost process holds the session and runs a
// turn in it ("" for neither).
func (r sessionRecord) state() string {
	if r.PID == 0 || !processAlive(r.PID) {
		return ""
	}
	if _, err := os.Lstat(r.Control); r.Control != "" && err != nil {
		return "" // its control socket is gone: the pid is someone else's now
	}
	if !r.TurnSince.IsZero() {
		return fmt.Sprintf("turn running %s (pid %d)", fmtDuration(time.Since(r.TurnSince)), r.PID)
	}
	return fmt.Sprintf("open (pid %d)", r.PID)
}

// same reports whether r and o are the same conversation: the same session
// id of the same agent — a named agent by its name (the command the
// configuration runs for it may change), another by its command.
func (r sessionRecord) same(o sessionRecord) bool {
	if r.ID != o.ID || r.Agent != o.Agent || r.SSH != o.SSH || r.URL != o.URL {
		return false
	}
	return r.Agent != "" || strings.Join(r.Command, "\x00") == strings.Join(o.Command, "\x00")
}

// recordAgent is the agent of cfg as a record names it: by name, or by
// command; the built-in agent by its name alone.
func recordAgent(cfg config) (agent string, command []string) {
	agent, command = cfg.agentName, cfg.agent
	if agent == "" && len(command) == 0 && cfg.remote.url == "" {
		agent = demoAgent // a --url agent is the server's: named by the URL
	}
	if agent == demoAgent {
		command = nil
	}
	return agent, command
}

// agentLabel names the record's agent for people.
func (r sessionRecord) agentLabel() string {
	label := r.Agent
	switch {
	case label != "":
	case len(r.Command) > 0:
		label = filepath.Base(r.Command[0])
	case r.URL != "":
		return r.URL
	default:
		return "?"
	}
	if r.SSH != "" {
		label += " on " + r.SSH
	}
	return label
}

// storeFile is the file's content.
type storeFile struct {
	Version  int             `json:"version"`
	Sessions []sessionRecord `json:"sessions"`
}

// maxRecords bounds the store; the least recently used go first.
const maxRecords = 1000

// store is the session store: sessions.json in dir, replaced atomically
// (a temporary file renamed over it) while sessions.lock is locked
// (flock on Unix, LockFileEx on Windows), so that acphost processes running
// at once never lose each other's records and a reader never sees half a
// file.
type store struct{ dir string }

// envStateDir names the store's directory instead of the default.
const envStateDir = "ACPHOST_STATE_DIR"

// stateDir is where the store lives: $ACPHOST_STATE_DIR; else, on Windows
// %LocalAppData%\acphost, on macOS ~/Library/Application Support/acphost,
// elsewhere $XDG_STATE_HOME/acphost (~/.local/state/acphost when unset or
// not absolute, as the XDG Base Directory spec says).
func stateDir() (string, error) {
	if d := os.Getenv(envStateDir); d != "" {
		return d, nil
	}
	switch runtime.GOOS {
	case "windows":
		d, err := os.UserCacheDir() // %LocalAppData%
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "acphost"), nil
	case "darwin", "ios":
		d, err := os.UserConfigDir() // ~/Library/Application Support
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "acphost"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "acphost"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", errors.New("neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(home, ".local", "state", "acphost"), nil
}

func openStore() (*store, error) {
	dir, err := stateDir()
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return &store{dir: dir}, nil
}

func (s *store) path() string { return filepath.Join(s.dir, "sessions.json") }

// Bounds on what the store keeps: a record's agent-chosen text and the
// file as a whole (maxRecords of records at their bounds fit well within).
const (
	maxTitleBytes = 256
	maxStoreBytes = 16 << 20
)

// locked runs fn with the store's lock held. The directory must be the
// user's own and writable by nobody else — --resume runs what a record
// names — and neither it nor the lock may be a symbolic link.
func (s *store) locked(fn func() error) error {
	if err := privateDir(s.dir); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return withLock(filepath.Join(s.dir, "sessions.lock"), fn)
}

// privateDir makes dir (0700) if it is missing and holds it to the store's
// rule: the user's own, writable by nobody else, not a link. Every
// directory under the state directory goes through it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return checkPrivateDir(dir)
}

// withLock runs fn holding an exclusive lock on the file lockPath, opened
// without following a link.
func withLock(lockPath string, fn func() error) error {
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("session store: locking %s: %w", f.Name(), err)
	}
	defer unlockFile(f)
	return fn()
}

// read reads the file; a missing one is empty.
func (s *store) read() (storeFile, error) {
	var sf storeFile
	f, err := os.OpenFile(s.path(), os.O_RDONLY|oNoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return storeFile{Version: 1}, nil
	}
	if err != nil {
		return sf, fmt.Errorf("session store: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStoreBytes+1))
	if err != nil {
		return sf, fmt.Errorf("session store: %w", err)
	}
	if len(b) > maxStoreBytes {
		return sf, fmt.Errorf("session store: %s is over %d MiB: not read", s.path(), maxStoreBytes>>20)
	}
	if err := json.Unmarshal(b, &sf); err != nil {
		return sf, fmt.Errorf("session store: %s: %w", s.path(), err)
	}
	return sf, nil
}

// write replaces the file atomically. Caller holds the lock.
func (s *store) write(sf storeFile) error {
	sf.Version = 1
	sort.SliceStable(sf.Sessions, func(i, j int) bool { return sf.Sessions[i].LastUsed.After(sf.Sessions[j].LastUsed) })
	var dropped []sessionRecord
	if len(sf.Sessions) > maxRecords {
		dropped = sf.Sessions[maxRecords:]
		sf.Sessions = sf.Sessions[:maxRecords]
	}
	for i := range sf.Sessions {
		sf.Sessions[i].Title = clip(sf.Sessions[i].Title, maxTitleBytes)
	}
	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return err
	}
	if err := replaceFile(s.path(), append(b, '\n')); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	for _, r := range dropped {
		_ = s.removeTranscriptLocked(r) // the record is gone; its transcript goes too
	}
	return nil
}

// update reads, changes and writes the store under its lock.
func (s *store) update(fn func(*storeFile) error) error {
	return s.locked(func() error {
		sf, err := s.read()
		if err != nil {
			return err
		}
		if err := fn(&sf); err != nil {
			return err
		}
		return s.write(sf)
	})
}

// list returns the records, most recently used first.
func (s *store) list() ([]sessionRecord, error) {
	var sf storeFile
	err := s.locked(func() error {
		var err error
		sf, err = s.read()
		return err
	})
	sort.SliceStable(sf.Sessions, func(i, j int) bool { return sf.Sessions[i].LastUsed.After(sf.Sessions[j].LastUsed) })
	return sf.Sessions, err
}

// put adds r or updates the record of the same conversation (keeping its
// creation time).
func (s *store) put(r sessionRecord) error {
	return s.update(func(sf *storeFile) error {
		for i, o := range sf.Sessions {
			if o.same(r) {
				r.Created = o.Created
				if r.Title == "" {
					r.Title = o.Title
				}
				sf.Sessions[i] = r
				return nil
			}
		}
		sf.Sessions = append(sf.Sessions, r)
		return nil
	})
}

// remove deletes the record the id names (see find), and its transcript,
// and returns it.
func (s *store) remove(id, cwd string) (sessionRecord, error) {
	var gone sessionRecord
	err := s.locked(func() error {
		sf, err := s.read()
		if err != nil {
			return err
		}
		i, err := find(sf.Sessions, id, cwd)
		if err != nil {
			return err
		}
		gone = sf.Sessions[i]
		sf.Sessions = append(sf.Sessions[:i], sf.Sessions[i+1:]...)
		if err := s.write(sf); err != nil {
			return err
		}
		return s.removeTranscriptLocked(gone)
	})
	return gone, err
}

// find picks a record: "last" is the most recently used one in cwd; else
// a session id, or a unique prefix of one.
// lookup finds the record id names (see find) in the store.
func (s *store) lookup(id, cwd string) (sessionRecord, error) {
	recs, err := s.list()
	if err != nil {
		return sessionRecord{}, err
	}
	i, err := find(recs, id, cwd)
	if err != nil {
		return sessionRecord{}, err
	}
	return recs[i], nil
}

// dirOrHere is dir, or the current directory when dir is "".
func dirOrHere(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return dir
}

func find(recs []sessionRecord, id, cwd string) (int, error) {
	if id == "last" {
		best := -1
		for i, r := range recs {
			if r.Cwd == cwd && (best < 0 || r.LastUsed.After(recs[best].LastUsed)) {
				best = i
			}
		}
		if best < 0 {
			return -1, fmt.Errorf("no session recorded in %s (acphost sessions lists them all)", cwd)
		}
		return best, nil
	}
	var hits []int
	for i, r := range recs {
		if r.ID == id {
			return i, nil
		}
		if id != "" && strings.HasPrefix(r.ID, id) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 0:
		return -1, fmt.Errorf("no session %q recorded (acphost sessions lists them)", id)
	case 1:
		return hits[0], nil
	}
	return -1, fmt.Errorf("%q names %d sessions; give more of the id", id, len(hits))
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// replaceFile writes b to path atomically: a temporary file beside it
// (0600, as os.CreateTemp makes it), synced, then renamed over it. The
// store's files (sessions, transcripts, history) are all written so.
// Caller holds the file's lock.
func replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
