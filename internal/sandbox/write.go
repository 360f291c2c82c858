package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// A Target is a file resolved once and bound for writing: the directory
// that holds it (kept open), its name there, and what was there when it was
// bound (a regular file's identity, or nothing). Write lands exactly there,
// or fails with ReasonChanged if the name no longer holds what was bound.
// A Target is not safe for concurrent use; Close releases it.
type Target struct {
	path, real string
	dir        *os.Root    // the deepest existing directory of the target
	missing    []string    // directories to create beneath dir, outermost first
	name       string      // the target's name in its directory
	was        fs.FileInfo // the file when bound; nil if there was none
	sum        []byte      // digest of the content Current returned, if it did
}

// Bind resolves p (see Resolve) and binds the file it names. Errors are
// *Error: the refusals of Resolve, ReasonDirPath, ReasonNotRegular for a
// directory or other non-regular file, ReasonChanged for a tree that
// changed while being walked.
//
// A final symlink is resolved here, once: the Target is the file the link
// pointed to when bound (Resolved says which), and Write replaces that
// file, keeping the link. A link that is changed afterwards is not
// followed again.
func (r *Roots) Bind(p string) (*Target, error) {
	if err := checkFileName(p); err != nil {
		return nil, err
	}
	real, rt, rel, err := r.resolve(p)
	if err != nil {
		return nil, err
	}
	if rel == "." {
		return nil, &Error{Path: p, Reason: ReasonNotRegular}
	}
	dirs, name := split(rel)
	dir, missing, err := walk(rt.dir, dirs)
	if err != nil {
		return nil, fail(p, err)
	}
	t := &Target{path: p, real: real, dir: dir, missing: missing, name: name}
	if len(missing) == 0 {
		fi, err := dir.Lstat(name)
		switch {
		case err == nil && fi.Mode()&fs.ModeSymlink != 0:
			err = errChanged // resolved, so it was no symlink a moment ago
		case err == nil && !fi.Mode().IsRegular():
			err = errNotRegular
		case err == nil:
			t.was = fi
		case errors.Is(err, fs.ErrNotExist):
			err = nil
		}
		if err != nil {
			dir.Close()
			return nil, fail(p, err)
		}
	}
	return t, nil
}

// Resolved returns the absolute resolved path of the target, as bound.
func (t *Target) Resolved() string { return t.real }

// Exists reports whether a file was there when the target was bound.
func (t *Target) Exists() bool { return t.was != nil }

// Current returns the bound file's content ("" if there was none), at most
// max bytes: a larger file fails with ReasonTooLarge without being read.
// The content is remembered (as a digest): Write then refuses to replace a
// file whose content is no longer what Current returned.
func (t *Target) Current(ctx context.Context, max int64) (string, error) {
	if t.was == nil {
		return "", nil
	}
	if t.was.Size() > max {
		return "", &Error{Path: t.path, Reason: ReasonTooLarge, Err: fmt.Errorf("more than %d bytes, too large to show for review", max)}
	}
	f, _, err := openRegular(t.dir, t.name, t.was)
	if err != nil {
		return "", fail(t.path, err)
	}
	defer f.Close()
	s, err := readLines(ctx, f, 0, 0, max)
	if err != nil {
		return "", fail(t.path, err)
	}
	sum := sha256.Sum256([]byte(s))
	t.sum = sum[:]
	return s, nil
}

// Write writes content to the target atomically. Missing parent
// directories are created (mode 0755 before umask), each checked as walk
// checks existing ones; the data goes to a temporary file in the target's
// directory, which is fsynced and renamed over the target, and the
// directory is then fsynced (best effort). Readers see either the old or
// the new content, never a mix.
//
// An existing file keeps its permission bits (set explicitly, so the umask
// does not alter them); a new file gets 0644, subject to the umask as with
// os.WriteFile. Ownership, extended attributes, ACLs and hard links of an
// existing file are not preserved: the file is a new inode.
//
// If the name no longer holds the bound file (another file, a symlink,
// different content than Current returned, or a file where there was
// none), Write fails with ReasonChanged and leaves it alone.
func (t *Target) Write(content string) error {
	dir := t.dir
	for _, m := range t.missing {
		next, err := mkdirChild(dir, m)
		if dir != t.dir {
			dir.Close()
		}
		if err != nil {
			return fail(t.path, err)
		}
		dir = next
	}
	if dir != t.dir {
		defer dir.Close()
	}
	perm := fs.FileMode(0o644)
	if t.was != nil {
		perm = t.was.Mode().Perm()
	}
	tmp, err := writeTemp(dir, content, perm, t.was != nil)
	if errors.Is(err, fs.ErrNotExist) {
		err = errChanged // the directory was removed since it was bound
	}
	if err != nil {
		return fail(t.path, err)
	}
	if err := t.land(dir, tmp); err != nil {
		dir.Remove(tmp)
		return fail(t.path, err)
	}
	if d, err := dir.Open("."); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// land puts the temporary file tmp in dir at the target's name, if the name
// still holds what was bound.
func (t *Target) land(dir *os.Root, tmp string) error {
	if t.was == nil {
		if _, err := dir.Lstat(t.name); !errors.Is(err, fs.ErrNotExist) {
			return errChanged
		}
		// A link never replaces what appeared since the check; rename does.
		err := dir.Link(tmp, t.name)
		switch {
		case err == nil:
			dir.Remove(tmp)
			return nil
		case errors.Is(err, fs.ErrExist):
			return errChanged
		}
		// No hard links on this file system: rename, as for a file.
		return dir.Rename(tmp, t.name)
	}
	if err := t.check(dir); err != nil {
		return err
	}
	return dir.Rename(tmp, t.name)
}

// check verifies that dir's entry for the target is still the bound file,
// with the content Current returned.
func (t *Target) check(dir *os.Root) error {
	f, fi, err := openRegular(dir, t.name, t.was)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotRegular) {
		return errChanged
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if t.sum == nil {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, fi.Size()+1)); err != nil {
		return err
	}
	if !bytes.Equal(h.Sum(nil), t.sum) {
		return errChanged
	}
	return nil
}

// Close releases the target's directory.
func (t *Target) Close() error { return t.dir.Close() }

// mkdirChild creates the directory name in parent, unless it exists, and
// opens it as openChild does.
func mkdirChild(parent *os.Root, name string) (*os.Root, error) {
	if err := parent.Mkdir(name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	return openChild(parent, name)
}

// writeTemp writes content to a new temporary file in dir, synced, and
// returns its name.
func writeTemp(dir *os.Root, content string, perm fs.FileMode, chmod bool) (string, error) {
	var (
		f   *os.File
		tmp string
		err error
	)
	for range 10 {
		tmp = tempName()
		f, err = dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	if err == nil && chmod {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		dir.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// WriteText binds p (see Bind) and writes content to it at once (see
// Target.Write).
func (r *Roots) WriteText(p string, content string) error {
	t, err := r.Bind(p)
	if err != nil {
		return err
	}
	defer t.Close()
	return t.Write(content)
}

// tempName returns a fresh hidden temporary file name of fixed length, so a
// target name near the file system's name limit still fits.
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".acphost-" + hex.EncodeToString(b[:]) + ".tmp"
}
