//go:build linux

package confine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run runs a shell script confined to writable and returns its combined
// output and exit error.
func run(t *testing.T, dir string, writable []string, script string) (string, error) {
	t.Helper()
	if !Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	var out strings.Builder
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	require.NoError(t, Start(cmd, writable))
	err := cmd.Wait()
	return out.String(), err
}

func TestWritesOnlyInsideTheWritableDirectories(t *testing.T) {
	inside, outside := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "precious"), []byte("keep"), 0o644))
	steps := map[string]string{
		"create inside":             `echo ok > new && mkdir sub && echo ok > sub/deep && ln -s new link && mv new moved`,
		"write to /dev/null":        `echo discarded > /dev/null`,
		"read outside":              `cat "$OUT/precious"`,
		"create outside":            `echo x > "$OUT/evil"`,
		"overwrite outside":         `echo x > "$OUT/precious"`,
		"delete outside":            `rm "$OUT/precious"`,
		"mkdir outside":             `mkdir "$OUT/d"`,
		"through a symlink":         `ln -s "$OUT" escape && echo x > escape/evil`,
		"move a file out":           `echo x > f && mv f "$OUT/f"`,
		"move the precious file in": `mv "$OUT/precious" ./stolen`,
		"from a child process":      `sh -c 'echo x > "$OUT/evil"'`,
		"after changing directory":  `cd "$OUT" && echo x > evil`,
	}
	allowed := map[string]bool{"create inside": true, "write to /dev/null": true, "write to /dev/stdout": true, "open a pty": true, "read outside": true}
	t.Setenv("OUT", outside)
	for name, script := range steps {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, inside, []string{inside}, script)
			if allowed[name] {
				require.NoError(t, err, out)
				return
			}
			require.Error(t, err, "the kernel let it through: %s", out)
			assert.Contains(t, out, "ermission denied")
		})
	}
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing was created outside")
	got, err := os.ReadFile(filepath.Join(outside, "precious"))
	require.NoError(t, err)
	assert.Equal(t, "keep", string(got))
	got, err = os.ReadFile(filepath.Join(inside, "sub", "deep"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(got))
}

// The restricted thread is thrown away: the host itself stays free. Every
// thread of this process, the main one included, must be unrestricted once
// the starting goroutines are gone: no_new_privs, set with the
// restriction, shows which.
func TestTheHostIsNotConfined(t *testing.T) {
	inside, outside := t.TempDir(), t.TempDir()
	for range 20 { // enough starts that a reused thread would show
		_, err := run(t, inside, []string{inside}, "true")
		require.NoError(t, err)
	}
	done := make(chan error, 8)
	for i := range cap(done) {
		go func() { done <- os.WriteFile(filepath.Join(outside, strings.Repeat("f", i+1)), nil, 0o644) }()
	}
	for range cap(done) {
		require.NoError(t, <-done)
	}
	out, err := run(t, outside, []string{outside}, "echo ok > f")
	require.NoError(t, err, out)
	deadline := time.Now().Add(10 * time.Second)
	for {
		restricted, err := RestrictedThreads()
		if errors.Is(err, ErrInheritedNoNewPrivs) {
			t.Skip(err)
		}
		require.NoError(t, err)
		if len(restricted) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads %v still carry the restriction", restricted)
		}
		time.Sleep(10 * time.Millisecond) // polling the kernel's view, with a deadline
	}
}

func TestMissingWritableDirectoryIsAnError(t *testing.T) {
	if !Available() {
		t.Skip("Landlock is not available on this kernel")
	}
	err := Start(exec.Command("/bin/true"), []string{filepath.Join(t.TempDir(), "absent")})
	require.ErrorContains(t, err, "absent")
}
