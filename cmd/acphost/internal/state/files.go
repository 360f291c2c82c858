package state

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The files acphost keeps for the user (the session store, transcripts,
// prompt history, logs, --record and --stderr files) hold to these rules:
// their directories are the user's own and writable by nobody else, no
// file is opened through a symbolic link, and a file replaced is replaced
// atomically.

// PrivateDir makes dir (0700) if it is missing and holds it to the store's
// rule: the user's own, writable by nobody else, not a link. Every
// directory under the state directory goes through it.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return CheckPrivateDir(dir)
}

// withLock runs fn holding an exclusive lock on the file path (see
// lockPath).
func withLock(path string, fn func() error) error {
	unlock, err := LockPath(path)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer unlock()
	return fn()
}

// LockPath takes an exclusive lock on the file path (created 0600, opened
// without following a link), waiting for it; unlock releases it and closes
// the file.
func LockPath(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		unlockFile(f)
		f.Close()
	}, nil
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

// OpenOutput opens a file the agent's output goes to (--record, --stderr)
// as openRecording does; with devices, a character device (/dev/null, a
// terminal) is taken as it is.
func OpenOutput(path string, devices bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|oNoFollow|oNonBlock, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err == nil && devices && fi.Mode()&os.ModeCharDevice != 0 {
		return f, nil
	}
	if err := checkOwnFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// logDir is where background acphost processes write their logs.
func (s *Store) logDir() string { return filepath.Join(s.Dir, "log") }

// OpenLog opens a new log of a background acphost for session id, in the
// log directory (private), first removing the oldest logs so that at most
// maxBackgroundLogs remain with it. The file's name begins with the time.
func (s *Store) OpenLog(id string) (*os.File, error) {
	dir := s.logDir()
	if err := PrivateDir(dir); err != nil {
		return nil, err
	}
	pruneLogs(dir, MaxBackgroundLogs-1)
	path := filepath.Join(dir, time.Now().Format("20060102-150405")+"-"+Clip(SafeFileName(id), 40)+".log")
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|oNoFollow, 0o600)
}

// MaxBackgroundLogs is how many background acphost logs are kept.
const MaxBackgroundLogs = 20

// pruneLogs removes the oldest logs in dir (their names begin with when
// they were made) but the newest keep.
func pruneLogs(dir string, keep int) {
	ents, err := os.ReadDir(dir) // sorted by name: oldest first
	if err != nil {
		return
	}
	var logs []string
	for _, e := range ents {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
			logs = append(logs, e.Name())
		}
	}
	for len(logs) > keep {
		_ = os.Remove(filepath.Join(dir, logs[0]))
		logs = logs[1:]
	}
}
