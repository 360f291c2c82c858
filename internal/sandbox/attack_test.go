package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flipper swaps a path between two states in a tight loop until stopped,
// as an attacker with write access to its parent directory would.
type flipper struct {
	stop chan struct{}
	wg   sync.WaitGroup
	n    int
}

// flip runs toB and toA alternately until stopped; n counts the times
// toB succeeded.
func flip(t *testing.T, toB, toA func() error) *flipper {
	t.Helper()
	f := &flipper{stop: make(chan struct{})}
	f.wg.Go(func() {
		for {
			select {
			case <-f.stop:
				return
			default:
			}
			// The host's own writes create what the attacker removes,
			// so a step can fail; the attacker just tries again.
			if toB() == nil {
				f.n++
			}
			runtime.Gosched()
			toA()
		}
	})
	t.Cleanup(f.halt)
	return f
}

func (f *flipper) halt() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.wg.Wait()
}

// assertOutsideUntouched checks that base/outside still holds only
// "secret" with its content.
func assertOutsideUntouched(t *testing.T, l *layout) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "secret\n", string(b), "a file outside the roots was written")
	entries, err := os.ReadDir(l.outside)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"secret"}, names, "something was created outside the roots")
}

// hammer writes and reads p many times and counts the outcomes; no read
// may ever return the outside file's content.
func hammer(t *testing.T, r *Roots, p string, rounds int) (ok, refused int) {
	t.Helper()
	reasons := map[string]int{}
	count := func(err error) {
		if err == nil {
			ok++
			return
		}
		refused++
		var se *Error
		if errors.As(err, &se) {
			reasons[se.Reason]++
		} else {
			reasons[err.Error()]++
		}
	}
	for i := range rounds {
		count(r.WriteText(p, "agent text "+strconv.Itoa(i)+"\n"))
		got, err := r.ReadText(bg, p, 0, 0, testMax)
		if err == nil {
			require.NotEqual(t, "secret\n", got, "read the outside file")
		}
		count(err)
	}
	t.Logf("refusals: %v", reasons)
	return ok, refused
}

// TestRootSwapRace replaces the root directory itself with a symlink to
// the outside and back, over and over, while the host reads and writes in
// it: an agent that may write the root's parent can do this.
func TestRootSwapRace(t *testing.T) {
	l := newLayout(t)
	// A file at the same relative place outside: where a swapped root
	// would send the write.
	writeFile(t, filepath.Join(l.outside, "secret"), "secret\n")
	p := filepath.Join(l.root, "secret")
	moved := l.root + ".real"
	f := flip(t,
		func() error {
			if err := os.Rename(l.root, moved); err != nil {
				return err
			}
			return os.Symlink(l.outside, l.root)
		},
		func() error {
			if err := os.Remove(l.root); err != nil {
				return err
			}
			return os.Rename(moved, l.root)
		})
	ok, refused := hammer(t, l.r, p, 2000)
	f.halt()
	t.Logf("%d flips, %d accesses done, %d refused", f.n, ok, refused)
	assertOutsideUntouched(t, l)
}

// TestFinalComponentSwapRace flips the target between a regular file and
// a symlink to the outside while the host reads and writes it.
func TestFinalComponentSwapRace(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "f")
	f := flip(t,
		func() error {
			os.Remove(p)
			return os.Symlink(filepath.Join(l.outside, "secret"), p)
		},
		func() error {
			os.Remove(p)
			return os.WriteFile(p, []byte("mine\n"), 0o644)
		})
	ok, refused := hammer(t, l.r, p, 2000)
	f.halt()
	t.Logf("%d flips, %d accesses done, %d refused", f.n, ok, refused)
	assertOutsideUntouched(t, l)
}

// TestIntermediateDirSwapRace flips a directory on the path between a real
// directory and a symlink to the outside.
func TestIntermediateDirSwapRace(t *testing.T) {
	l := newLayout(t)
	sub := filepath.Join(l.root, "sub")
	moved := sub + ".real"
	p := filepath.Join(sub, "secret")
	f := flip(t,
		func() error {
			if err := os.Rename(sub, moved); err != nil {
				return err
			}
			return os.Symlink(l.outside, sub)
		},
		func() error {
			os.RemoveAll(sub) // the link, or a directory the host made meanwhile
			return os.Rename(moved, sub)
		})
	ok, refused := hammer(t, l.r, p, 2000)
	f.halt()
	t.Logf("%d flips, %d accesses done, %d refused", f.n, ok, refused)
	assertOutsideUntouched(t, l)
}

// TestDirectoryPathsAreNotFiles: a path ending in a separator or "/."
// names a directory; it is never written (or read) as a regular file.
func TestDirectoryPathsAreNotFiles(t *testing.T) {
	l := newLayout(t)
	for _, p := range []string{
		l.root + "/new.txt/",
		l.root + "/new.txt/.",
		l.root + "/sub/new.txt//",
		l.root + "/a.txt/",
		l.root + "/a.txt/.",
	} {
		err := l.r.WriteText(p, "x\n")
		assert.Error(t, err, "write %q", p)
		_, err = l.r.ReadText(bg, p, 0, 0, testMax)
		assert.Error(t, err, "read %q", p)
	}
	_, err := os.Lstat(filepath.Join(l.root, "new.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "new.txt was created as a file")
	_, err = os.Lstat(filepath.Join(l.root, "sub", "new.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	b, err := os.ReadFile(filepath.Join(l.root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", string(b))
}

// TestReadRefusesASwappedFinalComponent: the file checked is a regular
// file; before it is opened it becomes a symlink to another file of the
// same root. The read must fail, not follow it.
func TestReadRefusesASwappedFinalComponent(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "a.txt")
	_, rt, rel, err := l.r.resolve(p)
	require.NoError(t, err)
	require.NoError(t, os.Remove(p))
	symlink(t, "sub/b.txt", p)
	dirs, name := split(rel)
	dir, missing, err := walk(rt.dir, dirs)
	require.NoError(t, err)
	defer dir.Close()
	require.Empty(t, missing)
	_, _, err = openRegular(dir, name, nil)
	require.ErrorIs(t, err, errChanged)
}
