// Package sandbox confines the file access an agent asks a host for
// (fs/read_text_file, fs/write_text_file) to a set of root directories: a
// session's working directory plus any additional directories.
//
// # What is guaranteed
//
// A request path must be absolute, must not end in a separator, "." or
// ".." (those name directories), and, after lexical cleaning (so ".."
// components are applied first), must lie inside a root by whole path
// components: "/root-other" is not inside "/root". It is then resolved the
// way the kernel would, following every symlink that exists, including a
// dangling final one; the resolved path must again lie inside one of the
// resolved roots. Paths that are outside lexically are refused even if a
// symlink would bring them back in.
//
// Each root is opened once, by New, and kept open (an os.Root) until Close.
// Every access starts from that handle, never from the root's path, so
// replacing a root directory (or a directory above it) with a symlink does
// not move the sandbox: the root is the directory New opened, wherever it
// is later moved.
//
// The resolved path is then opened one component at a time from its root's
// handle without following any symlink: the path was resolved, so it has
// none, and a component that is now a symlink, not a directory, or not the
// directory that was looked at (compared by device and inode after
// opening) makes the call fail with ReasonChanged. ReadText therefore reads
// exactly the regular file the resolved path named when it was opened.
//
// Writes go through a Target, which binds a resolved path to the directory
// holding it (an open handle) and to the file's identity (device and inode,
// size and modification time, and a digest of the content shown for
// review, if any), or its absence. Target.Write creates the new content as
// a temporary file in that directory and renames it over the reviewed
// name, after checking that the name still holds the same file (or still
// nothing: a new file is linked into place, which fails instead of
// replacing whatever appeared). A change since Bind is refused with
// ReasonChanged. The write that lands is therefore the one that was
// reviewed, in the directory that was reviewed, never through a symlink.
//
// Against a concurrent attacker who controls every file inside the roots
// (and the roots' parents), this means: no read returns and no write
// creates, replaces or alters anything outside the directories New opened
// and their descendants; a write lands only at the resolved name that Bind
// returned, in the directory that was then at that place; swaps of the
// final component or of any directory on the path, between check and use,
// make the call fail instead of following them.
//
// # What is not guaranteed
//
//   - The check before a write's rename and the rename are two steps: a
//     file put at the reviewed name in between is replaced, not refused.
//     It is replaced in the reviewed directory, not written through.
//   - A directory that the attacker moves elsewhere while a Target holds it
//     is still written into (it is the directory that was reviewed).
//   - Hard links, bind mounts and mount points are not boundaries: a hard
//     link inside a root to a file elsewhere is read like any file in the
//     root. Writes replace files by rename, so a write never goes through a
//     hard link: the link is broken instead.
//   - Resolve only returns a string; a caller that opens it itself gets none
//     of the protection above.
//   - Containment is compared byte-wise, so on a case-insensitive file
//     system a differently cased spelling of a root is refused, not matched.
//   - Device files, FIFOs and sockets are refused for reading and writing
//     (only regular files are accepted); a FIFO is opened non-blocking on
//     Unix so a swap to one cannot hang ReadText before being refused.
//   - Skipping lines (ReadText's line) streams through the file: it costs
//     memory bounded by a 64 KiB buffer, but time in proportion to the bytes
//     skipped, until the caller's ctx ends.
package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Reasons carried by Error.
const (
	ReasonRelative      = "relative path"
	ReasonInvalid       = "invalid path" // empty or holding a NUL byte
	ReasonOutside       = "outside roots"
	ReasonSymlinkEscape = "symlink escapes roots"
	ReasonNotRegular    = "not a regular file"
	ReasonNotDir        = "not a directory" // a path component is not a directory
	ReasonNotFound      = "not found"
	ReasonTooManyLinks  = "too many levels of symbolic links"
	ReasonBadRange      = "invalid line or limit"
	ReasonNoRoots       = "no roots"
	ReasonIO            = "i/o error"
	ReasonDirPath       = "names a directory"            // ends in a separator, "." or ".."
	ReasonChanged       = "changed since it was checked" // a concurrent change was detected
	ReasonTooLarge      = "file too large"
)

// ErrTooLarge is matched (errors.Is) by an *Error with ReasonTooLarge: the
// file, or the lines asked for, exceed the byte limit of the call.
var ErrTooLarge = errors.New("acphost: file too large")

// maxLinks bounds symlink expansions per path, as filepath.EvalSymlinks does.
const maxLinks = 255

// Error reports a refused or failed file access.
type Error struct {
	Path   string // the path as requested
	Reason string // one of the Reason constants
	Err    error  // the underlying error, if any
}

// Error says which path failed and why.
func (e *Error) Error() string {
	s := "sandbox: " + e.Path + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes refusals match fs.ErrPermission (outside the roots, escaping
// symlink, changed since checked), fs.ErrInvalid (relative, invalid or
// directory path, bad line or limit, too large) and ErrTooLarge, besides
// whatever the underlying error matches.
func (e *Error) Is(target error) bool {
	switch e.Reason {
	case ReasonOutside, ReasonSymlinkEscape, ReasonChanged:
		return target == fs.ErrPermission
	case ReasonRelative, ReasonInvalid, ReasonBadRange, ReasonDirPath:
		return target == fs.ErrInvalid
	case ReasonTooLarge:
		return target == fs.ErrInvalid || target == ErrTooLarge
	}
	return false
}

type root struct {
	given string   // cleaned as passed to New
	real  string   // with symlinks resolved
	dir   *os.Root // opened by New; every access starts here
}

// Roots confines paths to a set of absolute directories (a session's cwd
// plus additional directories). It is immutable and safe for concurrent
// use; it holds one open directory per root until Close.
type Roots struct {
	roots []root
}

// New opens Roots for dirs. Each must be an absolute path to an existing
// directory; it is opened once and kept open, and its path is stored both
// as given (cleaned), to accept request paths spelled through it, and
// resolved (filepath.EvalSymlinks), which is what resolved request paths
// are checked against. A directory that is swapped while New runs (the
// resolved path no longer names the directory opened) is refused with
// ReasonChanged. The caller must Close the Roots.
func New(dirs ...string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, &Error{Reason: ReasonNoRoots}
	}
	r := &Roots{}
	for _, d := range dirs {
		rt, err := openRoot(d)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.roots = append(r.roots, rt)
	}
	return r, nil
}

func openRoot(d string) (root, error) {
	if d == "" || strings.IndexByte(d, 0) >= 0 {
		return root{}, &Error{Path: d, Reason: ReasonInvalid}
	}
	if !filepath.IsAbs(d) {
		return root{}, &Error{Path: d, Reason: ReasonRelative}
	}
	given := filepath.Clean(d)
	real, err := filepath.EvalSymlinks(given)
	if err != nil {
		return root{}, &Error{Path: d, Reason: reasonFor(err), Err: err}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return root{}, &Error{Path: d, Reason: reasonFor(err), Err: err}
	}
	if !fi.IsDir() {
		return root{}, &Error{Path: d, Reason: ReasonNotDir}
	}
	dir, err := os.OpenRoot(real)
	if err != nil {
		return root{}, &Error{Path: d, Reason: reasonFor(err), Err: err}
	}
	if dfi, err := dir.Stat("."); err != nil || !os.SameFile(fi, dfi) {
		dir.Close()
		return root{}, &Error{Path: d, Reason: ReasonChanged, Err: err}
	}
	return root{given: given, real: real, dir: dir}, nil
}

// Close closes the roots' directories. Calls made after it fail; calls in
// progress finish. It is safe to call more than once.
func (r *Roots) Close() error {
	if r == nil {
		return nil
	}
	var errs []error
	for _, rt := range r.roots {
		if err := rt.dir.Close(); err != nil && !errors.Is(err, fs.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Dirs returns the resolved root directories, in the order given to New.
func (r *Roots) Dirs() []string {
	out := make([]string, len(r.roots))
	for i, rt := range r.roots {
		out[i] = rt.real
	}
	return out
}

// Resolve returns the real absolute path for p if it lies inside a root,
// following symlinks of every existing component; for a path that does not
// exist yet, the deepest existing ancestor is resolved and must lie inside a
// root (a dangling symlink is followed to its target, which must too).
// Errors are *Error with a Reason such as ReasonRelative, ReasonOutside,
// ReasonSymlinkEscape or ReasonNotDir.
//
// The result describes the file system at the time of the call only; see
// the package documentation.
func (r *Roots) Resolve(p string) (string, error) {
	real, _, _, err := r.resolve(p)
	return real, err
}

// ResolveFile is Resolve for a path that must name a file: one ending in a
// separator, "." or ".." is refused with ReasonDirPath.
func (r *Roots) ResolveFile(p string) (string, error) {
	if err := checkFileName(p); err != nil {
		return "", err
	}
	return r.Resolve(p)
}

// resolve returns p's resolved path, the root that contains it (the
// deepest, if roots nest) and the path relative to that root.
func (r *Roots) resolve(p string) (real string, rt *root, rel string, err error) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", nil, "", &Error{Path: p, Reason: ReasonInvalid}
	}
	if !filepath.IsAbs(p) {
		return "", nil, "", &Error{Path: p, Reason: ReasonRelative}
	}
	clean := filepath.Clean(p)
	lexical := false
	for _, rt := range r.roots {
		if within(rt.given, clean) || within(rt.real, clean) {
			lexical = true
			break
		}
	}
	if !lexical {
		return "", nil, "", &Error{Path: p, Reason: ReasonOutside}
	}
	real, err = realPath(clean)
	if err != nil {
		return "", nil, "", &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	for i := range r.roots {
		if within(r.roots[i].real, real) && (rt == nil || len(r.roots[i].real) > len(rt.real)) {
			rt = &r.roots[i]
		}
	}
	if rt == nil {
		return "", nil, "", &Error{Path: p, Reason: ReasonSymlinkEscape}
	}
	rel, err = filepath.Rel(rt.real, real)
	if err != nil {
		return "", nil, "", &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	return real, rt, rel, nil
}

// within reports whether p is base or lies below it, comparing whole path
// components. Both must be clean and absolute.
func within(base, p string) bool {
	if p == base {
		return true
	}
	if !strings.HasSuffix(base, string(filepath.Separator)) {
		base += string(filepath.Separator)
	}
	return strings.HasPrefix(p, base)
}

// realPath resolves the clean absolute path p like filepath.EvalSymlinks,
// except that the components from the first missing one on are kept as
// they are instead of failing, and a dangling symlink is followed to its
// target.
func realPath(p string) (string, error) {
	vol := filepath.VolumeName(p)
	sep := string(filepath.Separator)
	resolved := vol + sep
	rest := p[len(vol):]
	links := 0
	missing := false
	for {
		for rest != "" && os.IsPathSeparator(rest[0]) {
			rest = rest[1:]
		}
		if rest == "" {
			return resolved, nil
		}
		i := 0
		for i < len(rest) && !os.IsPathSeparator(rest[i]) {
			i++
		}
		comp := rest[:i]
		rest = rest[i:]
		switch comp {
		case ".":
			continue
		case "..":
			// Only symlink targets bring ".." here (p is clean); resolved
			// holds no symlinks, so its parent is the real parent.
			if missing {
				return "", &fs.PathError{Op: "resolve", Path: p, Err: fs.ErrNotExist}
			}
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			missing = true
			resolved = next
			continue
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && strings.Trim(rest, sep+"/") != "" {
				return "", &fs.PathError{Op: "resolve", Path: next, Err: syscall.ENOTDIR}
			}
			resolved = next
			continue
		}
		links++
		if links > maxLinks {
			return "", &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			v := filepath.VolumeName(target)
			resolved = v + sep
			target = target[len(v):]
		}
		rest = target + sep + rest
	}
}

// reasonFor classifies a file system error.
func reasonFor(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ReasonNotFound
	case errors.Is(err, syscall.ENOTDIR):
		return ReasonNotDir
	case errors.Is(err, syscall.ELOOP):
		return ReasonTooManyLinks
	case errors.Is(err, errChanged):
		return ReasonChanged
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root refused to leave the root: the tree changed after the
		// check. The os error value is unexported, hence the text match.
		return ReasonSymlinkEscape
	}
	return ReasonIO
}
