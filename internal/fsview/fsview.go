// Package fsview starts a process in a private view of the file system:
// a mount namespace of its own where the trees the host protects are
// read-only, the places a user's programs write their state (homes, the
// temporary directories) are copy-on-write overlays whose writes land in a
// private, memory-backed upper layer that ends with the process, and the
// directories the host keeps writable for real are bound over them. On top
// of it Landlock confines writes to those places (package confine), so a
// program that sets its own HOME or XDG directories runs, and nothing it
// writes reaches the real files but what the host keeps writable.
//
// The view is made by the process itself, between its start and the
// program it runs: the host's executable is started again (/proc/self/exe)
// with a marker in its environment, and this package's init function,
// which runs before the program's main in every host that links it, makes
// the view, confines itself and replaces itself with the program. So the
// host never runs a restricted thread, and no mount or Landlock rule is
// ever made in the host's own process.
package fsview

import (
	"errors"
	"fmt"
)

// View says what the started process sees and may write. Every path is
// absolute and, resolved, a directory that exists; a missing one is left
// out of the view.
type View struct {
	// ReadOnly are the trees the process may read but never change: the
	// project, the session's roots, what the user names. Bound read-only
	// (submounts included) over whatever else holds them.
	ReadOnly []string
	// Overlay are the trees whose writes land in the private upper layer:
	// the process sees its own writes, the real files never change. A tree
	// inside another one is covered by it; one inside a ReadOnly tree is an
	// overlay over the read-only view (state a program insists on writing
	// under the project).
	Overlay []string
	// Writable are the real directories the process may write: bound over
	// an Overlay or ReadOnly tree they lie in.
	Writable []string
	// Scratch is an empty directory the host made, where the process
	// mounts the memory file system that holds the overlays' upper layers.
	Scratch string
	// ScratchBytes caps that memory (DefaultScratchBytes when 0): a
	// program that writes more gets ENOSPC.
	ScratchBytes int64
	// Dir is the directory the program starts in, entered again once the
	// view is made (a read-only bind over it must be what it sees).
	Dir string
}

// DefaultScratchBytes is the memory the overlays' upper layers may hold
// when View.ScratchBytes is 0.
const DefaultScratchBytes = 1 << 30

// ErrUnavailable is matched by the errors of a start that could not make
// the view (no mount namespace here, an overlay the kernel refuses): the
// caller may start the process without it.
var ErrUnavailable = errors.New("fsview: a private view of the file system cannot be made here")

// unavailable wraps why the view could not be made.
func unavailable(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }
