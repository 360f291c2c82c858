// Package state is what acphost keeps for the user under its state
// directory (see Dir): the session store (sessions.json), each session's
// transcript, the prompt history of each agent and the logs of background
// acphost processes. Every file there holds to the rules of files.go: a
// private directory, no symbolic link followed, a file replaced
// atomically, a lock held by the processes that share it.
package state

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
	"unicode"
	"unicode/utf8"
)

// Record is one conversation acphost had, enough to continue it
// later with --resume: the agent (by name, and the command that ran it),
// the agent's session id, the directory, what the agent called it, its mode
// and when it was last used.
type Record struct {
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
	// Control is that process's control socket (see package control), which
	// acphost cancel and --no-wait talk to; "" once it let go.
	Control string `json:"control,omitempty"`
	// SSH and URL say how a remote agent was reached (--ssh HOST, --url
	// ws://…), so --resume reaches it again; a --url token is never kept
	// (give --token or $ACPHOST_TOKEN again).
	SSH string `json:"ssh,omitempty"`
	URL string `json:"url,omitempty"`
	// Kube says where on Kubernetes the agent ran (--kube-image or
	// --kube-warm-pool), so --resume runs it there again; the pod itself
	// is gone with the acphost that made it. Never a credential: the
	// kubeconfig is the person's, found again as kubectl finds it.
	Kube KubePlace `json:"kube,omitzero"`
	// Name is the person's name for the session (acphost -s NAME; see
	// ValidName), "" for none. A name names one session of an agent in a
	// directory: the record last written with it keeps it (see Put).
	Name string `json:"name,omitempty"`
	// Worktree is the git worktree the session runs in (acphost
	// --worktree), nil for none; Cwd is inside it.
	Worktree *Worktree `json:"worktree,omitempty"`
}

// KubePlace is where an agent runs on Kubernetes: a pod of its own from
// Image, or one claimed from WarmPool, in Namespace through the
// kubeconfig's Context ("": the defaults).
type KubePlace struct {
	Image     string `json:"image,omitempty"`
	WarmPool  string `json:"warmPool,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Context   string `json:"context,omitempty"`
	Pull      string `json:"pull,omitempty"` // never, always, if-not-present
}

// Set reports whether any --kube-* flag was given.
func (k KubePlace) Set() bool { return k != KubePlace{} }

// String names the place for people: "kube pod of IMAGE" or "kube warm
// pool NAME", with the namespace and context when given.
func (k KubePlace) String() string {
	s := "kube pod of " + k.Image
	if k.WarmPool != "" {
		s = "kube warm pool " + k.WarmPool
	}
	if k.Namespace != "" {
		s += " in " + k.Namespace
	}
	if k.Context != "" {
		s += " on " + k.Context
	}
	return s
}

// Worktree is a git worktree acphost made for a session.
type Worktree struct {
	Path   string `json:"path"`   // the worktree's directory
	Branch string `json:"branch"` // its branch (acphost/NAME)
	Base   string `json:"base"`   // the commit it was made from
	Repo   string `json:"repo"`   // the repository's main worktree
	From   string `json:"from"`   // the directory acphost was run in, in the repository
}

// StartedIn reports whether r's session belongs to directory dir: it runs
// there, or in a worktree made by an acphost run there.
func (r Record) StartedIn(dir string) bool {
	return r.Cwd == dir || r.Worktree != nil && r.Worktree.From == dir
}

// sameAgent reports whether r and o are sessions of the same agent,
// reached the same way (Same without the id).
func (r Record) sameAgent(o Record) bool {
	o.ID = r.ID
	return r.Same(o)
}

// Same reports whether r and o are the same conversation: the same session
// id of the same agent — a named agent by its name (the command the
// configuration runs for it may change), another by its command.
func (r Record) Same(o Record) bool {
	if r.ID != o.ID || r.Agent != o.Agent || r.SSH != o.SSH || r.URL != o.URL || r.Kube != o.Kube {
		return false
	}
	return r.Agent != "" || strings.Join(r.Command, "\x00") == strings.Join(o.Command, "\x00")
}

// AgentLabel names the record's agent for people.
func (r Record) AgentLabel() string {
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
	if r.Kube.Set() {
		label += " in " + r.Kube.String()
	}
	return label
}

// storeFile is the file's content.
type storeFile struct {
	Version  int      `json:"version"`
	Sessions []Record `json:"sessions"`
}

// maxRecords bounds the store; the least recently used go first.
const maxRecords = 1000

// Store is the session store: sessions.json in dir, replaced atomically
// (a temporary file renamed over it) while sessions.lock is locked
// (flock on Unix, LockFileEx on Windows), so that acphost processes running
// at once never lose each other's records and a reader never sees half a
// file.
type Store struct {
	// Dir is the state directory (see Dir).
	Dir string
}

// EnvDir names the store's directory instead of the default.
const EnvDir = "ACPHOST_STATE_DIR"

// Dir is where the store lives: $ACPHOST_STATE_DIR; else, on Windows
// %LocalAppData%\acphost, on macOS ~/Library/Application Support/acphost,
// elsewhere $XDG_STATE_HOME/acphost (~/.local/state/acphost when unset or
// not absolute, as the XDG Base Directory spec says).
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
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

// Open returns the store in the state directory (see Dir); the directory
// is made, and checked, on first use.
func Open() (*Store, error) {
	dir, err := Dir()
	if err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	return &Store{Dir: dir}, nil
}

// Path is the store's file, sessions.json.
func (s *Store) Path() string { return filepath.Join(s.Dir, "sessions.json") }

// Bounds on what the store keeps: a record's agent-chosen text and the
// file as a whole (maxRecords of records at their bounds fit well within).
const (
	MaxTitleBytes = 256
	maxStoreBytes = 16 << 20
)

// locked runs fn with the store's lock held. The directory must be the
// user's own and writable by nobody else — --resume runs what a record
// names — and neither it nor the lock may be a symbolic link.
func (s *Store) locked(fn func() error) error {
	if err := PrivateDir(s.Dir); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	return withLock(filepath.Join(s.Dir, "sessions.lock"), fn)
}

// read reads the file; a missing one is empty.
func (s *Store) read() (storeFile, error) {
	var sf storeFile
	f, err := os.OpenFile(s.Path(), os.O_RDONLY|oNoFollow, 0)
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
		return sf, fmt.Errorf("session store: %s is over %d MiB: not read", s.Path(), maxStoreBytes>>20)
	}
	if err := json.Unmarshal(b, &sf); err != nil {
		return sf, fmt.Errorf("session store: %s: %w", s.Path(), err)
	}
	return sf, nil
}

// write replaces the file atomically. Caller holds the lock.
func (s *Store) write(sf storeFile) error {
	sf.Version = 1
	sort.SliceStable(sf.Sessions, func(i, j int) bool { return sf.Sessions[i].LastUsed.After(sf.Sessions[j].LastUsed) })
	var dropped []Record
	if len(sf.Sessions) > maxRecords {
		dropped = sf.Sessions[maxRecords:]
		sf.Sessions = sf.Sessions[:maxRecords]
	}
	for i := range sf.Sessions {
		sf.Sessions[i].Title = Clip(sf.Sessions[i].Title, MaxTitleBytes)
	}
	b, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return err
	}
	if err := replaceFile(s.Path(), append(b, '\n')); err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	for _, r := range dropped {
		_ = s.removeTranscriptLocked(r) // the record is gone; its transcript goes too
	}
	return nil
}

// update reads, changes and writes the store under its lock.
func (s *Store) update(fn func(*storeFile) error) error {
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

// List returns the records, most recently used first.
func (s *Store) List() ([]Record, error) {
	var sf storeFile
	err := s.locked(func() error {
		var err error
		sf, err = s.read()
		return err
	})
	sort.SliceStable(sf.Sessions, func(i, j int) bool { return sf.Sessions[i].LastUsed.After(sf.Sessions[j].LastUsed) })
	return sf.Sessions, err
}

// Put adds r or updates the record of the same conversation (keeping its
// creation time).
func (s *Store) Put(r Record) error {
	return s.update(func(sf *storeFile) error {
		for i, o := range sf.Sessions {
			if o.Same(r) {
				r.Created = o.Created
				if r.Title == "" {
					r.Title = o.Title
				}
				if r.Name == "" { // a writer that does not know of names keeps it
					r.Name = o.Name
				}
				if r.Worktree == nil {
					r.Worktree = o.Worktree
				}
				sf.Sessions[i] = r
				claimName(sf.Sessions, i)
				return nil
			}
		}
		sf.Sessions = append(sf.Sessions, r)
		claimName(sf.Sessions, len(sf.Sessions)-1)
		return nil
	})
}

// claimName gives recs[i]'s name to it alone: another session of its
// agent in its directory loses that name.
func claimName(recs []Record, i int) {
	r := recs[i]
	if r.Name == "" {
		return
	}
	for j := range recs {
		if o := &recs[j]; j != i && o.Name == r.Name && o.sameAgent(r) && (o.StartedIn(r.Cwd) || r.Worktree != nil && o.StartedIn(r.Worktree.From)) {
			o.Name = ""
		}
	}
}

// Remove deletes the record the id names (see Find), and its transcript,
// and returns it.
func (s *Store) Remove(id, cwd string) (Record, error) {
	var gone Record
	err := s.locked(func() error {
		sf, err := s.read()
		if err != nil {
			return err
		}
		i, err := Find(sf.Sessions, id, cwd)
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

// Lookup finds the record id names (see Find) in the store.
func (s *Store) Lookup(id, cwd string) (Record, error) {
	recs, err := s.List()
	if err != nil {
		return Record{}, err
	}
	i, err := Find(recs, id, cwd)
	if err != nil {
		return Record{}, err
	}
	return recs[i], nil
}

// Find picks a record: "last" is the most recently used one in cwd (see
// StartedIn: a worktree made from there counts); else
// a session id; else a session's name (see Record.Name) in cwd (see
// StartedIn); else a unique prefix of an id.
func Find(recs []Record, id, cwd string) (int, error) {
	if id == "last" {
		best := -1
		for i, r := range recs {
			if r.StartedIn(cwd) && (best < 0 || r.LastUsed.After(recs[best].LastUsed)) {
				best = i
			}
		}
		if best < 0 {
			return -1, fmt.Errorf("no session recorded in %s (acphost sessions lists them all)", cwd)
		}
		return best, nil
	}
	var hits, named []int
	elsewhere := ""
	for i, r := range recs {
		if r.ID == id {
			return i, nil
		}
		if r.Name == id && id != "" {
			if r.StartedIn(cwd) {
				named = append(named, i)
			} else {
				elsewhere = r.Cwd
			}
		}
		if id != "" && strings.HasPrefix(r.ID, id) {
			hits = append(hits, i)
		}
	}
	switch len(named) {
	case 0:
	case 1:
		return named[0], nil
	default:
		var who []string
		for _, i := range named {
			who = append(who, recs[i].AgentLabel()+": "+recs[i].ID)
		}
		return -1, fmt.Errorf("%q names %d sessions here, of different agents (%s); give the id", id, len(named), strings.Join(who, ", "))
	}
	switch len(hits) {
	case 0:
		if elsewhere != "" {
			return -1, fmt.Errorf("no session %q recorded in %s; a session of that name is in %s (names are per directory: run there, or give its id)", id, cwd, elsewhere)
		}
		return -1, fmt.Errorf("no session %q recorded (acphost sessions lists them)", id)
	case 1:
		return hits[0], nil
	}
	return -1, fmt.Errorf("%q names %d sessions; give more of the id", id, len(hits))
}

// FindNamed finds the session named name of agent's (matched as Same
// matches, without the id) in dir; ok false when there is none.
func FindNamed(recs []Record, agent Record, name, dir string) (r Record, ok bool) {
	for _, o := range recs {
		if o.Name == name && o.sameAgent(agent) && o.StartedIn(dir) {
			if !ok || o.LastUsed.After(r.LastUsed) {
				r, ok = o, true
			}
		}
	}
	return r, ok
}

// MaxNameBytes bounds a session's name.
const MaxNameBytes = 100

// ValidName checks a session name (acphost -s NAME): a word a script can
// pass and a file name could hold — at most MaxNameBytes of UTF-8, no
// control, format (bidi) or space characters, no path separator, not
// starting with '-' or '.', and not "last", which means the latest
// session.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("a session name may not be empty")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("a session name is at most %d bytes", MaxNameBytes)
	case !utf8.ValidString(name):
		return errors.New("a session name must be UTF-8")
	case name == "last":
		return errors.New(`"last" means the latest session; pick another name`)
	case name[0] == '-' || name[0] == '.':
		return errors.New("a session name may not start with '-' or '.'")
	}
	for _, c := range name {
		switch {
		case c == '/' || c == '\\':
			return errors.New("a session name may not hold a path separator ('/' or '\\')")
		case unicode.IsControl(c) || unicode.Is(unicode.Cf, c):
			return errors.New("a session name may not hold control or format characters")
		case unicode.IsSpace(c):
			return errors.New("a session name may not hold spaces")
		}
	}
	return nil
}

// Clip cuts s to at most n bytes, on a rune boundary.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// ImportRecord adds r and its transcript es under the store's lock. A
// record of the same session id and agent is replaced, with its
// transcript, only when replace, told of it, returns nil.
func (s *Store) ImportRecord(r Record, es []Entry, replace func(old Record) error) error {
	return s.locked(func() error {
		sf, err := s.read()
		if err != nil {
			return err
		}
		for i, o := range sf.Sessions {
			if o.ID != r.ID || o.Agent != r.Agent {
				continue
			}
			if err := replace(o); err != nil {
				return err
			}
			sf.Sessions = append(sf.Sessions[:i], sf.Sessions[i+1:]...)
			if err := s.removeTranscriptLocked(o); err != nil {
				return err
			}
			break
		}
		sf.Sessions = append(sf.Sessions, r)
		claimName(sf.Sessions, len(sf.Sessions)-1)
		if err := s.write(sf); err != nil {
			return err
		}
		if len(es) == 0 {
			return nil
		}
		return s.writeTranscriptLocked(r, es)
	})
}

// Prune removes the records keep refuses, and their transcripts, under the
// store's lock, and returns them; with dryRun it only returns them.
func (s *Store) Prune(keep func(Record) bool, dryRun bool) ([]Record, error) {
	var gone []Record
	err := s.locked(func() error {
		sf, err := s.read()
		if err != nil {
			return err
		}
		kept := sf.Sessions[:0]
		for _, r := range sf.Sessions {
			if keep(r) {
				kept = append(kept, r)
			} else {
				gone = append(gone, r)
			}
		}
		if dryRun || len(gone) == 0 {
			return nil
		}
		sf.Sessions = kept
		if err := s.write(sf); err != nil {
			return err
		}
		var errs []error
		for _, r := range gone {
			errs = append(errs, s.removeTranscriptLocked(r))
		}
		return errors.Join(errs...)
	})
	return gone, err
}
