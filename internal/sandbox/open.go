package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// errChanged is the cause of ReasonChanged: what was checked is no longer
// what is there.
var errChanged = errors.New("the file system changed between check and use")

// checkFileName refuses a path whose last element names a directory ("x/",
// "x/." or "x/.."), which lexical cleaning would otherwise turn into a
// file name.
func checkFileName(p string) error {
	i := len(p)
	for i > 0 && !os.IsPathSeparator(p[i-1]) {
		i--
	}
	if last := p[i:]; last == "" || last == "." || last == ".." {
		return &Error{Path: p, Reason: ReasonDirPath}
	}
	return nil
}

// split returns rel's directory components and its final one. rel is
// clean, relative and not ".".
func split(rel string) (dirs []string, name string) {
	parts := strings.Split(rel, string(filepath.Separator))
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// walk opens the directories dirs, one below the other, beneath base,
// following no symlink (see openChild). It stops at the first one that does
// not exist and returns the deepest directory it opened, which the caller
// must close, and the components beneath it that are missing.
func walk(base *os.Root, dirs []string) (*os.Root, []string, error) {
	cur, err := base.OpenRoot(".")
	if err != nil {
		return nil, nil, err
	}
	for i, d := range dirs {
		next, err := openChild(cur, d)
		if errors.Is(err, fs.ErrNotExist) {
			return cur, dirs[i:], nil
		}
		cur.Close()
		if err != nil {
			return nil, nil, err
		}
		cur = next
	}
	return cur, nil, nil
}

// openChild opens the directory name inside parent. The name must be a
// directory, not a symlink, when looked at, and the directory opened must be
// that one: os.Root would follow a symlink swapped in between (within
// parent), and the identity check catches it.
func openChild(parent *os.Root, name string) (*os.Root, error) {
	fi, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, errChanged
	case !fi.IsDir():
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	child, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	cfi, err := child.Stat(".")
	if err != nil || !os.SameFile(fi, cfi) {
		child.Close()
		return nil, errChanged
	}
	return child, nil
}

// openRegular opens the regular file name inside dir for reading, without
// following a symlink there. If want is set, the file must be that one,
// unchanged (see unchanged).
func openRegular(dir *os.Root, name string, want fs.FileInfo) (*os.File, fs.FileInfo, error) {
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, nil, errChanged
	case !fi.Mode().IsRegular():
		return nil, nil, errNotRegular
	case want != nil && !unchanged(want, fi):
		return nil, nil, errChanged
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|oNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	ffi, err := f.Stat()
	if err != nil || !os.SameFile(fi, ffi) || !ffi.Mode().IsRegular() {
		f.Close()
		return nil, nil, errChanged
	}
	return f, ffi, nil
}

// errNotRegular is the cause of ReasonNotRegular from openRegular.
var errNotRegular = errors.New("not a regular file")

// unchanged reports whether now is the file was describes, with the same
// size and modification time.
func unchanged(was, now fs.FileInfo) bool {
	return os.SameFile(was, now) && was.Size() == now.Size() && was.ModTime().Equal(now.ModTime())
}

// fail wraps err, from a file system call on p, in an *Error.
func fail(p string, err error) error {
	var se *Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, errNotRegular) {
		return &Error{Path: p, Reason: ReasonNotRegular}
	}
	return &Error{Path: p, Reason: reasonFor(err), Err: err}
}

func errNotExist(name string) error {
	return &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}
