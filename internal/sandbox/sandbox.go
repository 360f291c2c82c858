// Package sandbox confines the file access an agent asks a host for
// (fs/read_text_file, fs/write_text_file) to a set of root directories: a
// session's working directory plus any additional directories.
//
// # What is guaranteed
//
// A request path must be absolute and, after lexical cleaning (so ".."
// components are applied first), lie inside a root by whole path components:
// "/root-other" is not inside "/root". It is then resolved the way the
// kernel would, following every symlink that exists, including a dangling
// final one; the resolved path must again lie inside one of the resolved
// roots. Paths that are outside lexically are refused even if a symlink
// would bring them back in.
//
// ReadText and WriteText do not reuse the checked path string for the actual
// file system calls. They open the root directory containing the resolved
// path with os.OpenRoot and do every open, stat, mkdir and rename through that
// os.Root, which walks the path one component at a time and refuses to leave
// the root (through "..", an absolute symlink, or a symlink pointing
// outside), whatever the file system looks like at that moment. A directory
// swapped for a symlink to the outside between the check and the use (a
// TOCTOU race) therefore makes the call fail; it cannot make it read or
// write a file outside the root that contained the checked path.
//
// # What is not guaranteed
//
//   - Within a root, a concurrent change can redirect a call to a different
//     file of the same root (os.Root follows symlinks that stay inside it).
//   - Roots are opened by path for each call; replacing a root directory
//     itself (or a symlink leading to it) is not detected.
//   - Hard links, bind mounts and mount points are not boundaries: a hard
//     link inside a root to a file elsewhere is read like any file in the
//     root. (WriteText replaces files by rename, so it never writes through a
//     hard link; the link is broken instead.)
//   - Resolve only returns a string; a caller that opens it itself gets none
//     of the protection above.
//   - Containment is compared byte-wise, so on a case-insensitive file
//     system a differently cased spelling of a root is refused, not matched.
//   - Device files are refused for reading and writing (only regular files
//     are accepted); a FIFO is opened non-blocking on Unix so it cannot hang
//     ReadText before being refused.
package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
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
)

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
// symlink) and fs.ErrInvalid (relative or invalid path, bad line or limit),
// besides whatever the underlying error matches.
func (e *Error) Is(target error) bool {
	switch e.Reason {
	case ReasonOutside, ReasonSymlinkEscape:
		return target == fs.ErrPermission
	case ReasonRelative, ReasonInvalid, ReasonBadRange:
		return target == fs.ErrInvalid
	}
	return false
}

type root struct {
	given string // cleaned as passed to New
	real  string // with symlinks resolved
}

// Roots confines paths to a set of absolute directories (a session's cwd
// plus additional directories). It is immutable and safe for concurrent use.
type Roots struct {
	roots []root
}

// New returns Roots for dirs. Each must be an absolute path to an existing
// directory; it is stored both as given (cleaned), to accept request paths
// spelled through it, and resolved (filepath.EvalSymlinks), which is what
// resolved request paths are checked against.
func New(dirs ...string) (*Roots, error) {
	if len(dirs) == 0 {
		return nil, &Error{Reason: ReasonNoRoots}
	}
	r := &Roots{}
	for _, d := range dirs {
		if d == "" || strings.IndexByte(d, 0) >= 0 {
			return nil, &Error{Path: d, Reason: ReasonInvalid}
		}
		if !filepath.IsAbs(d) {
			return nil, &Error{Path: d, Reason: ReasonRelative}
		}
		given := filepath.Clean(d)
		real, err := filepath.EvalSymlinks(given)
		if err != nil {
			return nil, &Error{Path: d, Reason: reasonFor(err), Err: err}
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, &Error{Path: d, Reason: reasonFor(err), Err: err}
		}
		if !fi.IsDir() {
			return nil, &Error{Path: d, Reason: ReasonNotDir}
		}
		r.roots = append(r.roots, root{given: given, real: real})
	}
	return r, nil
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

// resolve returns p's resolved path, the resolved root that contains it (the
// deepest, if roots nest) and the path relative to that root.
func (r *Roots) resolve(p string) (real, rootDir, rel string, err error) {
	if p == "" || strings.IndexByte(p, 0) >= 0 {
		return "", "", "", &Error{Path: p, Reason: ReasonInvalid}
	}
	if !filepath.IsAbs(p) {
		return "", "", "", &Error{Path: p, Reason: ReasonRelative}
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
		return "", "", "", &Error{Path: p, Reason: ReasonOutside}
	}
	real, err = realPath(clean)
	if err != nil {
		return "", "", "", &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	for _, rt := range r.roots {
		if within(rt.real, real) && len(rt.real) > len(rootDir) {
			rootDir = rt.real
		}
	}
	if rootDir == "" {
		return "", "", "", &Error{Path: p, Reason: ReasonSymlinkEscape}
	}
	rel, err = filepath.Rel(rootDir, real)
	if err != nil {
		return "", "", "", &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	return real, rootDir, rel, nil
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
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root refused to leave the root: the tree changed after the
		// check. The os error value is unexported, hence the text match.
		return ReasonSymlinkEscape
	}
	return ReasonIO
}

// ReadText reads the file at p, confined to the roots. line is the 1-based
// first line to return (0 or 1: from the start) and limit the maximum number
// of lines (0: all). Lines keep their "\n"; a line past the end gives "".
// Only regular files are read; a final symlink is followed if its target is
// inside the roots. A missing file returns an *Error for which
// errors.Is(err, fs.ErrNotExist) holds.
func (r *Roots) ReadText(p string, line, limit int) (string, error) {
	if line < 0 || limit < 0 {
		return "", &Error{Path: p, Reason: ReasonBadRange}
	}
	_, rootDir, rel, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	return readIn(p, rootDir, rel, line, limit)
}

// readIn reads rel inside rootDir through an os.Root.
func readIn(p, rootDir, rel string, line, limit int) (string, error) {
	rt, err := os.OpenRoot(rootDir)
	if err != nil {
		return "", &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	defer rt.Close()
	f, err := rt.OpenFile(rel, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return "", &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return "", &Error{Path: p, Reason: ReasonNotRegular}
	}
	s, err := readLines(f, line, limit)
	if err != nil {
		return "", &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	return s, nil
}

// readLines returns up to limit lines (0: all) of rd starting at the 1-based
// line (0: 1).
// Lines applies ReadText's line (1-based; 0 = from the start) and limit
// (0 = all) to content held in memory, such as an editor's unsaved buffer.
func Lines(content string, line, limit int) (string, error) {
	if line < 0 || limit < 0 {
		return "", &Error{Reason: ReasonBadRange}
	}
	return readLines(strings.NewReader(content), line, limit)
}

func readLines(rd io.Reader, line, limit int) (string, error) {
	if line <= 1 && limit == 0 {
		b, err := io.ReadAll(rd)
		return string(b), err
	}
	br := bufio.NewReaderSize(rd, 64<<10)
	for skip := line - 1; skip > 0; {
		_, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			skip--
		case errors.Is(err, bufio.ErrBufferFull):
			// The same line continues.
		case errors.Is(err, io.EOF):
			return "", nil
		default:
			return "", err
		}
	}
	var b strings.Builder
	for n := 0; limit == 0 || n < limit; n++ {
		s, err := br.ReadString('\n')
		b.WriteString(s)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// WriteText writes content to p atomically, confined to the roots. Missing
// parent directories inside the roots are created (mode 0755 before umask);
// the data goes to a temporary file in the same directory, which is fsynced
// and renamed over the target, and the directory is then fsynced (best
// effort). Readers see either the old or the new content, never a mix.
//
// An existing file keeps its permission bits (set explicitly, so the umask
// does not alter them); a new file gets 0644, subject to the umask as with
// os.WriteFile. Ownership, extended attributes, ACLs and hard links of an
// existing file are not preserved: the file is a new inode.
//
// A final symlink whose target lies inside the roots is followed (the target
// is replaced, the link stays); one pointing outside, and any path through a
// symlinked directory that resolves outside, is refused with
// ReasonSymlinkEscape. A target that exists but is not a regular file is
// refused with ReasonNotRegular.
func (r *Roots) WriteText(p string, content string) error {
	_, rootDir, rel, err := r.resolve(p)
	if err != nil {
		return err
	}
	return writeIn(p, rootDir, rel, content)
}

// writeIn writes rel inside rootDir through an os.Root.
func writeIn(p, rootDir, rel, content string) error {
	if rel == "." {
		return &Error{Path: p, Reason: ReasonNotRegular}
	}
	rt, err := os.OpenRoot(rootDir)
	if err != nil {
		return &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	defer rt.Close()

	perm, existing := fs.FileMode(0o644), false
	fi, err := rt.Lstat(rel)
	switch {
	case err == nil:
		if !fi.Mode().IsRegular() {
			return &Error{Path: p, Reason: ReasonNotRegular}
		}
		perm, existing = fi.Mode().Perm(), true
	case errors.Is(err, fs.ErrNotExist):
	default:
		return &Error{Path: p, Reason: reasonFor(err), Err: err}
	}

	dir := filepath.Dir(rel)
	if dir != "." {
		if err := rt.MkdirAll(dir, 0o755); err != nil {
			return &Error{Path: p, Reason: reasonFor(err), Err: err}
		}
	}

	var (
		f   *os.File
		tmp string
	)
	for range 10 {
		tmp = filepath.Join(dir, tempName())
		f, err = rt.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	fail := func(err error) error {
		f.Close()
		rt.Remove(tmp)
		return &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	if _, err := f.WriteString(content); err != nil {
		return fail(err)
	}
	if existing {
		if err := f.Chmod(perm); err != nil {
			return fail(err)
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		rt.Remove(tmp)
		return &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	if err := rt.Rename(tmp, rel); err != nil {
		rt.Remove(tmp)
		return &Error{Path: p, Reason: reasonFor(err), Err: err}
	}
	if d, err := rt.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

// tempName returns a fresh hidden temporary file name of fixed length, so a
// target name near the file system's name limit still fits.
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".acphost-" + hex.EncodeToString(b[:]) + ".tmp"
}
