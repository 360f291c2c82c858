package sandbox

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layout is a test tree:
//
//	base/root/            the root
//	base/root/a.txt       "alpha\n"
//	base/root/sub/b.txt   "beta\n"
//	base/root-other/x     sibling sharing the root's name as a prefix
//	base/outside/secret   "secret\n"
type layout struct {
	base, root, other, outside string
	r                          *Roots
}

func newLayout(t *testing.T) *layout {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	l := &layout{
		base:    base,
		root:    filepath.Join(base, "root"),
		other:   filepath.Join(base, "root-other"),
		outside: filepath.Join(base, "outside"),
	}
	for _, d := range []string{l.root, filepath.Join(l.root, "sub"), l.other, l.outside} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	writeFile(t, filepath.Join(l.root, "a.txt"), "alpha\n")
	writeFile(t, filepath.Join(l.root, "sub", "b.txt"), "beta\n")
	writeFile(t, filepath.Join(l.other, "x"), "other\n")
	writeFile(t, filepath.Join(l.outside, "secret"), "secret\n")
	l.r, err = New(l.root)
	require.NoError(t, err)
	return l
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

func requireReason(t *testing.T, err error, reason string) *Error {
	t.Helper()
	var se *Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, reason, se.Reason, "error: %v", err)
	return se
}

func TestNew(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	writeFile(t, file, "x")

	_, err := New()
	requireReason(t, err, ReasonNoRoots)
	_, err = New("rel/dir")
	requireReason(t, err, ReasonRelative)
	_, err = New(filepath.Join(dir, "missing"))
	requireReason(t, err, ReasonNotFound)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = New(file)
	requireReason(t, err, ReasonNotDir)

	// A root given through a symlink is stored resolved, and request paths
	// spelled through the symlink are accepted.
	real := filepath.Join(dir, "real")
	require.NoError(t, os.Mkdir(real, 0o755))
	link := filepath.Join(dir, "link")
	symlink(t, real, link)
	r, err := New(link + "/")
	require.NoError(t, err)
	wantReal, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)
	assert.Equal(t, []string{wantReal}, r.Dirs())
	got, err := r.Resolve(filepath.Join(link, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wantReal, "new.txt"), got)
	got, err = r.Resolve(filepath.Join(wantReal, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wantReal, "new.txt"), got)
}

func TestResolve(t *testing.T) {
	l := newLayout(t)
	symlink(t, l.outside, filepath.Join(l.root, "out-dir"))
	symlink(t, filepath.Join(l.outside, "secret"), filepath.Join(l.root, "out-file"))
	symlink(t, "a.txt", filepath.Join(l.root, "in-file"))
	symlink(t, "../sub", filepath.Join(l.root, "sub", "self"))
	symlink(t, filepath.Join(l.outside, "nothing-yet"), filepath.Join(l.root, "dangling-out"))
	symlink(t, "sub/created.txt", filepath.Join(l.root, "dangling-in"))
	symlink(t, "loop2", filepath.Join(l.root, "loop1"))
	symlink(t, "loop1", filepath.Join(l.root, "loop2"))
	symlink(t, filepath.Join(l.root, "sub"), filepath.Join(l.outside, "back-in"))

	tests := []struct {
		name   string
		path   string
		want   string // resolved, when ok
		reason string // when refused
	}{
		{name: "file", path: l.root + "/a.txt", want: l.root + "/a.txt"},
		{name: "root itself", path: l.root, want: l.root},
		{name: "unclean inside", path: l.root + "/sub/../a.txt", want: l.root + "/a.txt"},
		{name: "new file in new dirs", path: l.root + "/n/m/f.txt", want: l.root + "/n/m/f.txt"},
		{name: "final symlink inside is followed", path: l.root + "/in-file", want: l.root + "/a.txt"},
		{name: "symlink with dotdot inside", path: l.root + "/sub/self/b.txt", want: l.root + "/sub/b.txt"},
		{name: "dangling symlink inside", path: l.root + "/dangling-in", want: l.root + "/sub/created.txt"},
		{name: "relative", path: "a.txt", reason: ReasonRelative},
		{name: "dot relative", path: "./a.txt", reason: ReasonRelative},
		{name: "empty", path: "", reason: ReasonInvalid},
		{name: "nul byte", path: l.root + "/a\x00b", reason: ReasonInvalid},
		{name: "dotdot out", path: l.root + "/../outside/secret", reason: ReasonOutside},
		{name: "deep dotdot out", path: l.root + "/sub/../../../../etc/passwd", reason: ReasonOutside},
		{name: "absolute elsewhere", path: "/etc/passwd", reason: ReasonOutside},
		{name: "sibling sharing the prefix", path: l.other + "/x", reason: ReasonOutside},
		{name: "sibling dir itself", path: l.other, reason: ReasonOutside},
		{name: "parent of root", path: l.base, reason: ReasonOutside},
		{name: "symlinked dir out", path: l.root + "/out-dir/secret", reason: ReasonSymlinkEscape},
		{name: "new file under symlinked dir out", path: l.root + "/out-dir/new/f", reason: ReasonSymlinkEscape},
		{name: "final symlink out", path: l.root + "/out-file", reason: ReasonSymlinkEscape},
		{name: "dangling symlink out", path: l.root + "/dangling-out", reason: ReasonSymlinkEscape},
		{name: "outside path linking back in", path: l.outside + "/back-in/b.txt", reason: ReasonOutside},
		{name: "through a file", path: l.root + "/a.txt/x", reason: ReasonNotDir},
		{name: "symlink loop", path: l.root + "/loop1", reason: ReasonTooManyLinks},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := l.r.Resolve(tt.path)
			if tt.reason != "" {
				se := requireReason(t, err, tt.reason)
				assert.Equal(t, tt.path, se.Path)
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.FromSlash(tt.want), got)
		})
	}
}

func TestErrorMatching(t *testing.T) {
	l := newLayout(t)
	_, err := l.r.ReadText(bg, "/etc/passwd", 0, 0, testMax)
	assert.ErrorIs(t, err, fs.ErrPermission)
	assert.EqualError(t, err, "sandbox: /etc/passwd: outside roots")
	_, err = l.r.ReadText(bg, "rel", 0, 0, testMax)
	assert.ErrorIs(t, err, fs.ErrInvalid)
	_, err = l.r.ReadText(bg, l.root+"/a.txt", -1, 0, testMax)
	requireReason(t, err, ReasonBadRange)
	_, err = l.r.ReadText(bg, l.root+"/a.txt", 0, -1, testMax)
	requireReason(t, err, ReasonBadRange)

	_, err = l.r.ReadText(bg, l.root+"/missing.txt", 0, 0, testMax)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.NotErrorIs(t, err, fs.ErrPermission)
	requireReason(t, err, ReasonNotFound)
	assert.Contains(t, err.Error(), "missing.txt: not found: ")
	_, err = l.r.ReadText(bg, l.root+"/newdir/missing.txt", 2, 1, testMax)
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestReadTextLines(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "lines.txt")
	writeFile(t, p, "1\n2\n3\n4\n5")
	long := strings.Repeat("x", 200_000) + "\n"
	pl := filepath.Join(l.root, "long.txt")
	writeFile(t, pl, long+long+"third\r\nfourth\r\n")

	tests := []struct {
		path         string
		line, limit  int
		want         string
		wantAllLines bool
	}{
		{path: p, want: "1\n2\n3\n4\n5"},
		{path: p, line: 1, want: "1\n2\n3\n4\n5"},
		{path: p, line: 0, limit: 1, want: "1\n"},
		{path: p, line: 2, limit: 2, want: "2\n3\n"},
		{path: p, line: 4, want: "4\n5"},
		{path: p, line: 5, limit: 1, want: "5"},
		{path: p, line: 5, limit: 9, want: "5"},
		{path: p, line: 6, want: ""},
		{path: p, line: 100, limit: 3, want: ""},
		{path: pl, line: 3, want: "third\r\nfourth\r\n"},
		{path: pl, line: 2, limit: 1, want: long},
		{path: pl, line: 4, limit: 1, want: "fourth\r\n"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path)+"/"+strconv.Itoa(tt.line)+"/"+strconv.Itoa(tt.limit), func(t *testing.T) {
			got, err := l.r.ReadText(bg, tt.path, tt.line, tt.limit, testMax)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}

	empty := filepath.Join(l.root, "empty")
	writeFile(t, empty, "")
	got, err := l.r.ReadText(bg, empty, 1, 1, testMax)
	require.NoError(t, err)
	assert.Equal(t, "", got)
}

func TestReadTextRefusals(t *testing.T) {
	l := newLayout(t)
	symlink(t, l.outside, filepath.Join(l.root, "out-dir"))
	symlink(t, filepath.Join(l.outside, "secret"), filepath.Join(l.root, "out-file"))
	symlink(t, "sub/b.txt", filepath.Join(l.root, "in-file"))

	got, err := l.r.ReadText(bg, filepath.Join(l.root, "in-file"), 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "beta\n", got)

	// Paths cleaned lexically to a file inside are read.
	for _, path := range []string{
		l.root + "/out-dir/../sub/b.txt", // cleaned before resolving
		l.root + "/sub/./../sub/b.txt",
	} {
		got, err := l.r.ReadText(bg, path, 0, 0, testMax)
		require.NoError(t, err, path)
		assert.Equal(t, "beta\n", got)
	}

	for path, reason := range map[string]string{
		l.root + "/out-dir/secret":    ReasonSymlinkEscape,
		l.root + "/out-file":          ReasonSymlinkEscape,
		l.root + "/../outside/secret": ReasonOutside,
		l.outside + "/secret":         ReasonOutside,
		l.other + "/x":                ReasonOutside,
		l.root + "/sub":               ReasonNotRegular,
		l.root:                        ReasonNotRegular,
		l.root + "/sub/b.txt/":        ReasonDirPath,
		l.root + "/sub/b.txt/.":       ReasonDirPath,
		l.root + "/sub/b.txt/..":      ReasonDirPath,
	} {
		got, err := l.r.ReadText(bg, path, 0, 0, testMax)
		requireReason(t, err, reason)
		assert.Empty(t, got)
	}
}

func TestWriteTextCreatesParents(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "new", "deeper", "f.txt")
	require.NoError(t, l.r.WriteText(p, "hello\n"))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", string(b))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	if um, ok := umask(); ok {
		assert.Equal(t, fs.FileMode(0o644)&^um, fi.Mode().Perm())
		di, err := os.Stat(filepath.Dir(p))
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o755)&^um, di.Mode().Perm())
	}
	got, err := l.r.ReadText(bg, p, 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "hello\n", got)

	// Empty content creates an empty file.
	require.NoError(t, l.r.WriteText(filepath.Join(l.root, "empty"), ""))
	b, err = os.ReadFile(filepath.Join(l.root, "empty"))
	require.NoError(t, err)
	assert.Empty(t, b)
}

func TestWriteTextKeepsModeAndLeavesNoTemp(t *testing.T) {
	l := newLayout(t)
	for _, mode := range []fs.FileMode{0o600, 0o666, 0o755, 0o640} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := filepath.Join(l.root, "m"+strconv.FormatUint(uint64(mode), 8))
			require.NoError(t, os.Mkdir(dir, 0o755))
			p := filepath.Join(dir, "f")
			writeFile(t, p, "old\n")
			require.NoError(t, os.Chmod(p, mode))
			for i := range 5 {
				require.NoError(t, l.r.WriteText(p, "new "+strconv.Itoa(i)+"\n"))
			}
			fi, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, mode, fi.Mode().Perm())
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, "new 4\n", string(b))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "temporary files left behind")
			assert.Equal(t, "f", entries[0].Name())
		})
	}
}

func TestWriteTextRefusals(t *testing.T) {
	l := newLayout(t)
	symlink(t, l.outside, filepath.Join(l.root, "out-dir"))
	symlink(t, filepath.Join(l.outside, "secret"), filepath.Join(l.root, "out-file"))
	symlink(t, filepath.Join(l.outside, "created"), filepath.Join(l.root, "dangling-out"))

	tests := []struct {
		name, path, reason string
	}{
		{"dotdot out", l.root + "/../outside/secret", ReasonOutside},
		{"absolute elsewhere", l.outside + "/new", ReasonOutside},
		{"sibling sharing the prefix", l.other + "/x", ReasonOutside},
		{"relative", "a.txt", ReasonRelative},
		{"through symlinked parent out", l.root + "/out-dir/secret", ReasonSymlinkEscape},
		{"new file through symlinked parent out", l.root + "/out-dir/new/f", ReasonSymlinkEscape},
		{"final symlink out", l.root + "/out-file", ReasonSymlinkEscape},
		{"dangling final symlink out", l.root + "/dangling-out", ReasonSymlinkEscape},
		{"directory", l.root + "/sub", ReasonNotRegular},
		{"root itself", l.root, ReasonNotRegular},
		{"through a file", l.root + "/a.txt/f", ReasonNotDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := l.r.WriteText(tt.path, "pwned\n")
			requireReason(t, err, tt.reason)
		})
	}
	b, err := os.ReadFile(filepath.Join(l.outside, "secret"))
	require.NoError(t, err)
	assert.Equal(t, "secret\n", string(b))
	entries, err := os.ReadDir(l.outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "something was created outside")
	b, err = os.ReadFile(filepath.Join(l.other, "x"))
	require.NoError(t, err)
	assert.Equal(t, "other\n", string(b))
}

func TestWriteTextFollowsFinalSymlinkInside(t *testing.T) {
	l := newLayout(t)
	link := filepath.Join(l.root, "link")
	symlink(t, "sub/b.txt", link)
	require.NoError(t, l.r.WriteText(link, "via link\n"))
	b, err := os.ReadFile(filepath.Join(l.root, "sub", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "via link\n", string(b))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&fs.ModeSymlink, "the link must stay a link")

	// A dangling link inside the roots creates its target.
	symlink(t, "sub/created.txt", filepath.Join(l.root, "dangling"))
	require.NoError(t, l.r.WriteText(filepath.Join(l.root, "dangling"), "made\n"))
	b, err = os.ReadFile(filepath.Join(l.root, "sub", "created.txt"))
	require.NoError(t, err)
	assert.Equal(t, "made\n", string(b))
}

func TestMultipleRoots(t *testing.T) {
	l := newLayout(t)
	extra := filepath.Join(l.base, "extra")
	require.NoError(t, os.Mkdir(extra, 0o755))
	r, err := New(l.root, extra)
	require.NoError(t, err)
	require.NoError(t, r.WriteText(filepath.Join(extra, "e.txt"), "e\n"))
	got, err := r.ReadText(bg, filepath.Join(extra, "e.txt"), 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "e\n", got)
	got, err = r.ReadText(bg, filepath.Join(l.root, "a.txt"), 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", got)

	// A symlink from one root into another is allowed.
	symlink(t, filepath.Join(extra, "e.txt"), filepath.Join(l.root, "to-extra"))
	got, err = r.ReadText(bg, filepath.Join(l.root, "to-extra"), 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "e\n", got)
	_, err = l.r.ReadText(bg, filepath.Join(l.root, "to-extra"), 0, 0, testMax)
	requireReason(t, err, ReasonSymlinkEscape)

	_, err = r.ReadText(bg, filepath.Join(l.outside, "secret"), 0, 0, testMax)
	requireReason(t, err, ReasonOutside)
}

// TestSwapAfterResolve simulates a TOCTOU race: a directory checked inside
// the root is replaced by a symlink to the outside before it is opened. The
// walk from the root's handle must refuse to follow it.
func TestSwapAfterResolve(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "sub", "b.txt")
	_, rt, rel, err := l.r.resolve(p)
	require.NoError(t, err)

	require.NoError(t, os.Rename(filepath.Join(l.root, "sub"), filepath.Join(l.root, "sub.moved")))
	symlink(t, l.outside, filepath.Join(l.root, "sub"))

	dirs, _ := split(rel)
	_, _, err = walk(rt.dir, dirs)
	require.ErrorIs(t, err, errChanged)
	requireReason(t, fail(p, err), ReasonChanged)
	assert.ErrorIs(t, fail(p, err), fs.ErrPermission)
}

// TestBoundTargetStaysInItsDirectory: a Target holds its directory, so a
// directory swapped for a symlink to the outside after Bind does not move
// the write; it lands in the directory that was bound.
func TestBoundTargetStaysInItsDirectory(t *testing.T) {
	l := newLayout(t)
	tg, err := l.r.Bind(filepath.Join(l.root, "sub", "secret"))
	require.NoError(t, err)
	defer tg.Close()
	require.NoError(t, os.Rename(filepath.Join(l.root, "sub"), filepath.Join(l.root, "sub.moved")))
	symlink(t, l.outside, filepath.Join(l.root, "sub"))
	require.NoError(t, tg.Write("mine\n"))
	b, err := os.ReadFile(filepath.Join(l.root, "sub.moved", "secret"))
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(b))
	assertOutsideUntouched(t, l)
}

// TestBoundTargetRefusesChanges: Write refuses a name that no longer holds
// what Bind (and Current) saw.
func TestBoundTargetRefusesChanges(t *testing.T) {
	outsideLink := func(t *testing.T, l *layout, p string) {
		require.NoError(t, os.Remove(p))
		symlink(t, filepath.Join(l.outside, "secret"), p)
	}
	cases := map[string]struct {
		exists bool
		change func(t *testing.T, l *layout, p string)
	}{
		"file became a symlink out":    {true, outsideLink},
		"file became a symlink inside": {true, func(t *testing.T, l *layout, p string) { require.NoError(t, os.Remove(p)); symlink(t, "sub/b.txt", p) }},
		"file replaced":                {true, func(t *testing.T, l *layout, p string) { require.NoError(t, os.Remove(p)); writeFile(t, p, "x\n") }},
		"file changed in place":        {true, func(t *testing.T, l *layout, p string) { writeFile(t, p, "different\n") }},
		"file removed":                 {true, func(t *testing.T, l *layout, p string) { require.NoError(t, os.Remove(p)) }},
		"file became a directory": {true, func(t *testing.T, l *layout, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}},
		"absent became a symlink out": {false, func(t *testing.T, l *layout, p string) { symlink(t, filepath.Join(l.outside, "secret"), p) }},
		"absent became a file":        {false, func(t *testing.T, l *layout, p string) { writeFile(t, p, "x\n") }},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			l := newLayout(t)
			p := filepath.Join(l.root, "target")
			if c.exists {
				writeFile(t, p, "reviewed\n")
			}
			tg, err := l.r.Bind(p)
			require.NoError(t, err)
			defer tg.Close()
			assert.Equal(t, c.exists, tg.Exists())
			cur, err := tg.Current(bg, testMax)
			require.NoError(t, err)
			if c.exists {
				assert.Equal(t, "reviewed\n", cur)
			}
			c.change(t, l, p)
			requireReason(t, tg.Write("pwned\n"), ReasonChanged)
			assertOutsideUntouched(t, l)
			b, _ := os.ReadFile(filepath.Join(l.root, "sub", "b.txt"))
			assert.Equal(t, "beta\n", string(b))
			entries, err := os.ReadDir(l.root)
			require.NoError(t, err)
			for _, e := range entries {
				assert.NotContains(t, e.Name(), ".tmp", "temporary file left")
			}
		})
	}
}

// TestCurrentIsBounded: Current does not read a file over its limit.
func TestCurrentIsBounded(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "big")
	writeFile(t, p, strings.Repeat("x", 1000))
	tg, err := l.r.Bind(p)
	require.NoError(t, err)
	defer tg.Close()
	_, err = tg.Current(bg, 999)
	requireReason(t, err, ReasonTooLarge)
	assert.ErrorIs(t, err, ErrTooLarge)
	got, err := tg.Current(bg, 1000)
	require.NoError(t, err)
	assert.Len(t, got, 1000)
}

// TestRootsHoldTheirDirectories: Roots keep the directories New opened;
// Close releases them and later calls fail.
func TestRootsHoldTheirDirectories(t *testing.T) {
	l := newLayout(t)
	require.NoError(t, os.Rename(l.root, l.root+".moved"))
	require.NoError(t, os.Mkdir(l.root, 0o755))
	// The path now names a new, empty directory; the root is still the one
	// New opened, and a request spelled through the path reaches it.
	got, err := l.r.ReadText(bg, filepath.Join(l.root, "a.txt"), 0, 0, testMax)
	require.NoError(t, err)
	assert.Equal(t, "alpha\n", got)
	require.NoError(t, l.r.Close())
	require.NoError(t, l.r.Close(), "Close twice")
	_, err = l.r.ReadText(bg, filepath.Join(l.root, "a.txt"), 0, 0, testMax)
	assert.Error(t, err)
	assert.Error(t, l.r.WriteText(filepath.Join(l.root, "a.txt"), "x"))
}

// TestWriteTextConcurrentReaders rewrites a large file many times while
// readers poll it; every read must be one complete version.
func TestWriteTextConcurrentReaders(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "big.txt")
	const size = 1 << 20
	versions := make([]string, 4)
	for i := range versions {
		line := strings.Repeat(string(rune('a'+i)), 63) + "\n"
		versions[i] = strings.Repeat(line, size/64)
	}
	require.NoError(t, l.r.WriteText(p, versions[0]))

	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		reads atomic.Int64
	)
	errs := make(chan string, 8)
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				got, err := l.r.ReadText(bg, p, 0, 0, testMax)
				if err != nil {
					errs <- err.Error()
					return
				}
				reads.Add(1)
				if len(got) != size || strings.Count(got, got[:64]) != size/64 {
					errs <- "partial or mixed content of length " + strconv.Itoa(len(got))
					return
				}
				if !bytes.Contains([]byte("abcd"), []byte{got[0]}) {
					errs <- "unknown version"
					return
				}
			}
		})
	}
	for i := range 40 {
		require.NoError(t, l.r.WriteText(p, versions[(i+1)%len(versions)]))
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	assert.Positive(t, reads.Load())
	entries, err := os.ReadDir(l.root)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasSuffix(e.Name(), ".tmp"), "temporary file %s left", e.Name())
	}
}

func TestErrorUnwrap(t *testing.T) {
	inner := errors.New("boom")
	e := &Error{Path: "/x", Reason: ReasonIO, Err: inner}
	assert.ErrorIs(t, e, inner)
	assert.Equal(t, "sandbox: /x: i/o error: boom", e.Error())
	assert.NotErrorIs(t, e, fs.ErrPermission)
}

// umask returns the process umask from /proc/self/status, where available.
func umask() (fs.FileMode, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0, false
			}
			return fs.FileMode(n), true
		}
	}
	return 0, false
}

var bg = context.Background()

// testMax is the read limit of tests that are not about it.
const testMax = 64 << 20
