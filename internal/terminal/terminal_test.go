//go:build unix

package terminal_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/internal/terminal"
)

const deadline = 10 * time.Second

func newManager(t *testing.T, o terminal.Options) *terminal.Manager {
	t.Helper()
	m := terminal.NewManager(o)
	t.Cleanup(func() { assert.NoError(t, m.Close()) })
	return m
}

// poll calls cond every few milliseconds until it is true or the deadline
// passes.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	timeout := time.NewTimer(deadline)
	defer timeout.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func create(t *testing.T, m *terminal.Manager, owner string, s terminal.Spec) string {
	t.Helper()
	id, err := m.Create(owner, s)
	require.NoError(t, err)
	return id
}

func sh(script string) terminal.Spec {
	return terminal.Spec{Command: "/bin/sh", Args: []string{"-c", script}}
}

func wait(t *testing.T, m *terminal.Manager, id string) terminal.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	st, err := m.WaitForExit(ctx, id)
	require.NoError(t, err)
	return st
}

// pids polls the output of id until it holds n lines of numbers and
// returns them.
func pids(t *testing.T, m *terminal.Manager, id string, n int) []int {
	t.Helper()
	var out string
	poll(t, "pids in the output", func() bool {
		var err error
		out, _, _, err = m.Output(id)
		require.NoError(t, err)
		return strings.Count(out, "\n") >= n
	})
	var ps []int
	for _, f := range strings.Fields(out)[:n] {
		p, err := strconv.Atoi(f)
		require.NoError(t, err, "output %q", out)
		ps = append(ps, p)
	}
	return ps
}

// gone reports whether pid no longer runs. A killed orphan stays a zombie
// until its new parent reaps it, which depends on the container's init, so
// a zombie counts as gone.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// "pid (comm) S ...": the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func requireGone(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		poll(t, fmt.Sprintf("pid %d to end", pid), func() bool { return gone(pid) })
	}
}

func code(n int) *int { return &n }

func TestEcho(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", terminal.Spec{Command: "echo", Args: []string{"hello", "wörld"}})
	assert.Equal(t, "term-1", id)

	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Code: code(0)}, st)

	out, truncated, exit, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "hello wörld\n", out)
	assert.False(t, truncated)
	assert.Equal(t, &terminal.ExitStatus{Code: code(0)}, exit)
}

func TestIDs(t *testing.T) {
	m := newManager(t, terminal.Options{})
	for i := 1; i <= 3; i++ {
		id := create(t, m, "s", terminal.Spec{Command: "echo"})
		assert.Equal(t, fmt.Sprintf("term-%d", i), id)
	}
}

func TestExitCode(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", sh("echo out; echo err >&2; exit 3"))
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Code: code(3)}, st)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "out\nerr\n", out, "stdout and stderr share one output")
}

func TestOutputNilExitWhileRunning(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", sh("echo ready; exec sleep 100"))
	pollOutput(t, m, id, "ready\n")
	_, _, exit, err := m.Output(id)
	require.NoError(t, err)
	assert.Nil(t, exit)
}

func pollOutput(t *testing.T, m *terminal.Manager, id, want string) {
	t.Helper()
	poll(t, fmt.Sprintf("output %q", want), func() bool {
		out, _, _, err := m.Output(id)
		require.NoError(t, err)
		return strings.Contains(out, want)
	})
}

func TestKillSIGTERM(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", terminal.Spec{Command: "sleep", Args: []string{"100"}})
	require.NoError(t, m.Kill(id))
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Signal: "SIGTERM"}, st)

	// The terminal stays valid after Kill, and a second Kill is harmless.
	_, _, exit, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, &terminal.ExitStatus{Signal: "SIGTERM"}, exit)
	assert.NoError(t, m.Kill(id))
	assert.Equal(t, st, wait(t, m, id))
}

func TestKillEscalatesToSIGKILL(t *testing.T) {
	m := newManager(t, terminal.Options{KillGrace: 50 * time.Millisecond})
	// The shell and the sleep it starts both ignore SIGTERM.
	id := create(t, m, "s", sh(`trap "" TERM; echo ready; sleep 100; echo survived`))
	pollOutput(t, m, id, "ready\n")
	require.NoError(t, m.Kill(id))
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Signal: "SIGKILL"}, st)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "ready\n", out)
}

func TestKillKillsGrandchild(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", sh("sleep 100 & echo $!; wait"))
	grandchild := pids(t, m, id, 1)[0]
	require.False(t, gone(grandchild))

	require.NoError(t, m.Kill(id))
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Signal: "SIGTERM"}, st)
	requireGone(t, grandchild)
}

func TestGrandchildHoldingOutputDoesNotHang(t *testing.T) {
	m := newManager(t, terminal.Options{DrainTimeout: 100 * time.Millisecond})
	// The shell exits at once; the sleep keeps the output pipe open.
	id := create(t, m, "s", sh("sleep 100 & echo $!"))
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Code: code(0)}, st)
	grandchild := pids(t, m, id, 1)[0]
	// On Linux what the command left in its group is killed after it exits.
	if runtime.GOOS == "linux" {
		requireGone(t, grandchild)
	} else {
		_ = syscall.Kill(grandchild, syscall.SIGKILL)
	}
}

func TestOutputCompleteAfterExit(t *testing.T) {
	m := newManager(t, terminal.Options{DrainTimeout: deadline})
	// A background job that finishes writing after the shell has exited.
	id := create(t, m, "s", sh(`(i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done) & echo started`))
	wait(t, m, id)
	out, truncated, exit, err := m.Output(id)
	require.NoError(t, err)
	assert.False(t, truncated)
	require.NotNil(t, exit)
	assert.Contains(t, out, "started\n")
	assert.Contains(t, out, "line0\n")
	assert.True(t, strings.HasSuffix(out, "line2999\n") || strings.HasSuffix(out, "started\n"), "tail %q", out[len(out)-20:])
	assert.Equal(t, 3001, strings.Count(out, "\n"))
}

func TestLargeOutputDoesNotBlock(t *testing.T) {
	m := newManager(t, terminal.Options{})
	// About 4 MiB, far more than a pipe buffer, while nobody calls Output.
	id := create(t, m, "s", sh(`s=0123456789abcdef; s=$s$s$s$s; s=$s$s$s$s; i=0; while [ $i -lt 4096 ]; do printf '%s\n' "$s$s$s$s"; i=$((i+1)); done`))
	wait(t, m, id)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, 4096*1025, len(out))
}

func TestOutputByteLimit(t *testing.T) {
	tests := []struct {
		printf    string
		limit     int
		want      string
		truncated bool
	}{
		{"ééééé", 3, "é", true},
		{"ééééé", 4, "éé", true},
		{"ééééé", 9, "éééé", true},
		{"ééééé", 10, "ééééé", false},
		{"ééééé", 0, "ééééé", false},
		{"ééééé", 1, "", true},
		{"hello", 3, "llo", true},
		{"a€b", 3, "b", true},
		{"a€b", 4, "€b", true},
	}
	m := newManager(t, terminal.Options{})
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.printf, tt.limit), func(t *testing.T) {
			s := terminal.Spec{Command: "printf", Args: []string{tt.printf}, OutputByteLimit: tt.limit}
			id := create(t, m, "s", s)
			wait(t, m, id)
			out, truncated, _, err := m.Output(id)
			require.NoError(t, err)
			assert.Equal(t, tt.want, out)
			assert.Equal(t, tt.truncated, truncated)
		})
	}
}

func TestOutputByteLimitStreaming(t *testing.T) {
	m := newManager(t, terminal.Options{})
	// Many small writes, so the limit is applied across reads.
	id := create(t, m, "s", terminal.Spec{
		Command:         "/bin/sh",
		Args:            []string{"-c", `i=0; while [ $i -lt 500 ]; do printf 'é€'; i=$((i+1)); done; printf end`},
		OutputByteLimit: 100,
	})
	wait(t, m, id)
	out, truncated, _, err := m.Output(id)
	require.NoError(t, err)
	assert.True(t, truncated)
	assert.True(t, strings.HasSuffix(out, "end"))
	assert.LessOrEqual(t, len(out), 100)
	assert.Greater(t, len(out), 96)
	assert.True(t, strings.HasPrefix(out, "é") || strings.HasPrefix(out, "€"), "%q", out)
}

func TestEnvAndDir(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, terminal.Options{BaseEnv: []string{"BASE=1", "OVER=old", "PATH=/usr/bin:/bin"}})
	s := sh(`echo "$BASE $OVER $ADDED"; pwd; echo "$PWD"`)
	s.Env = []string{"OVER=new", "ADDED=yes"}
	s.Dir = dir
	id := create(t, m, "s", s)
	wait(t, m, id)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "1 new yes\n"+dir+"\n"+dir+"\n", out)
}

func TestPathFromSpecEnv(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "acphost-test-tool"), []byte("#!/bin/sh\necho custom tool\n"), 0o755))
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", terminal.Spec{
		Command: "acphost-test-tool",
		Env:     []string{"PATH=" + dir + ":/usr/bin:/bin"},
	})
	wait(t, m, id)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "custom tool\n", out)
}

func TestRelativeCommandUsesDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool"), []byte("#!/bin/sh\necho relative\n"), 0o755))
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", terminal.Spec{Command: "./tool", Dir: dir})
	wait(t, m, id)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "relative\n", out)
}

func TestShell(t *testing.T) {
	m := newManager(t, terminal.Options{Shell: []string{"/bin/sh", "-c"}})
	id := create(t, m, "s", terminal.Spec{Command: "echo", Args: []string{"a", "&&", "echo", "$X"}, Env: []string{"X=b"}})
	st := wait(t, m, id)
	assert.Equal(t, terminal.ExitStatus{Code: code(0)}, st)
	out, _, _, err := m.Output(id)
	require.NoError(t, err)
	assert.Equal(t, "a\nb\n", out)

	// An unknown command is the shell's business.
	id = create(t, m, "s", terminal.Spec{Command: "acphost-no-such-command"})
	assert.Equal(t, terminal.ExitStatus{Code: code(127)}, wait(t, m, id))
}

func TestCreateErrors(t *testing.T) {
	m := newManager(t, terminal.Options{})
	for _, s := range []terminal.Spec{
		{Command: "acphost-no-such-command"},
		{Command: "/nonexistent/acphost-no-such-command"},
		{Command: ""},
		{Command: "echo", Dir: "relative"},
		{Command: "echo", Dir: "/nonexistent-acphost-dir"},
		{Command: "echo", Env: []string{"NOEQUALS"}},
		{Command: "echo", OutputByteLimit: -1},
	} {
		id, err := m.Create("s", s)
		assert.Error(t, err, "%+v", s)
		assert.Empty(t, id)
	}
	// Failed creates use no id.
	assert.Equal(t, "term-1", create(t, m, "s", terminal.Spec{Command: "echo"}))
}

func TestUnknownID(t *testing.T) {
	m := newManager(t, terminal.Options{})
	_, _, _, err := m.Output("term-1")
	assert.ErrorIs(t, err, terminal.ErrNotFound)
	_, err = m.WaitForExit(context.Background(), "term-1")
	assert.ErrorIs(t, err, terminal.ErrNotFound)
	assert.ErrorIs(t, m.Kill("nope"), terminal.ErrNotFound)
	assert.ErrorIs(t, m.Release("nope"), terminal.ErrNotFound)
}

func TestWaitForExitContext(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", terminal.Spec{Command: "sleep", Args: []string{"100"}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.WaitForExit(ctx, id)
	assert.ErrorIs(t, err, context.Canceled)

	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = m.WaitForExit(ctx, id)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestRelease(t *testing.T) {
	m := newManager(t, terminal.Options{})
	id := create(t, m, "s", sh("sleep 100 & echo $!; echo $$; wait"))
	ps := pids(t, m, id, 2)

	require.NoError(t, m.Release(id))
	_, _, _, err := m.Output(id)
	assert.ErrorIs(t, err, terminal.ErrNotFound)
	_, err = m.WaitForExit(context.Background(), id)
	assert.ErrorIs(t, err, terminal.ErrNotFound)
	assert.ErrorIs(t, m.Kill(id), terminal.ErrNotFound)
	assert.ErrorIs(t, m.Release(id), terminal.ErrNotFound)
	requireGone(t, ps...)

	// Releasing a finished terminal works too, and ids are not reused.
	id = create(t, m, "s", terminal.Spec{Command: "echo"})
	wait(t, m, id)
	require.NoError(t, m.Release(id))
	assert.Equal(t, "term-3", create(t, m, "s", terminal.Spec{Command: "echo"}))
}

func TestCloseOwner(t *testing.T) {
	m := newManager(t, terminal.Options{})
	spec := sh("sleep 100 & echo $!; echo $$; wait")
	a1 := create(t, m, "a", spec)
	a2 := create(t, m, "a", spec)
	b := create(t, m, "b", spec)
	var aPids []int
	aPids = append(aPids, pids(t, m, a1, 2)...)
	aPids = append(aPids, pids(t, m, a2, 2)...)
	bPids := pids(t, m, b, 2)

	m.CloseOwner("a")
	for _, id := range []string{a1, a2} {
		_, _, _, err := m.Output(id)
		assert.ErrorIs(t, err, terminal.ErrNotFound)
	}
	requireGone(t, aPids...)

	_, _, exit, err := m.Output(b)
	require.NoError(t, err)
	assert.Nil(t, exit, "b's terminal still runs")
	for _, pid := range bPids {
		assert.False(t, gone(pid))
	}
	m.CloseOwner("nobody")
}

func TestClose(t *testing.T) {
	before := runtime.NumGoroutine()
	m := terminal.NewManager(terminal.Options{KillGrace: 50 * time.Millisecond})
	var all []int
	for i := 0; i < 3; i++ {
		id := create(t, m, fmt.Sprint("s", i), sh("sleep 100 & echo $!; echo $$; wait"))
		all = append(all, pids(t, m, id, 2)...)
	}
	// One that ignores SIGTERM, one that has exited, one being waited for.
	stubborn := create(t, m, "s", sh(`trap "" TERM; echo $$; echo ready; sleep 100`))
	all = append(all, pids(t, m, stubborn, 1)...)
	pollOutput(t, m, stubborn, "ready\n")
	done := create(t, m, "s", terminal.Spec{Command: "echo"})
	wait(t, m, done)
	waiting := create(t, m, "s", terminal.Spec{Command: "sleep", Args: []string{"100"}})
	waitErr := make(chan error, 1)
	go func() {
		_, err := m.WaitForExit(context.Background(), waiting)
		waitErr <- err
	}()

	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")
	requireGone(t, all...)
	select {
	case err := <-waitErr:
		// nil if the goroutine looked the id up before Close released it.
		if err != nil {
			assert.ErrorIs(t, err, terminal.ErrNotFound)
		}
	case <-time.After(deadline):
		t.Fatal("WaitForExit did not return after Close")
	}

	_, err := m.Create("s", terminal.Spec{Command: "echo"})
	assert.ErrorIs(t, err, terminal.ErrClosed)

	poll(t, "the manager's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestConcurrentUse(t *testing.T) {
	m := terminal.NewManager(terminal.Options{KillGrace: 50 * time.Millisecond})
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		go func() {
			id, err := m.Create("s", sh("echo hi; sleep 100"))
			if err != nil {
				errs <- err
				return
			}
			_, _, _, _ = m.Output(id)
			if i%2 == 0 {
				_ = m.Kill(id)
			}
			if i%3 == 0 {
				_ = m.Release(id)
			}
			errs <- nil
		}()
	}
	for i := 0; i < 20; i++ {
		assert.NoError(t, <-errs)
	}
	require.NoError(t, m.Close())
}

// MaxOutputBytes caps what a Spec asks for, 0 ("everything") included.
func TestMaxOutputBytes(t *testing.T) {
	m := newManager(t, terminal.Options{MaxOutputBytes: 100})
	for _, limit := range []int{0, 1000, 50} {
		s := sh("head -c 5000 /dev/zero | tr '\\000' x")
		s.OutputByteLimit = limit
		id := create(t, m, "s", s)
		_, err := m.WaitForExit(t.Context(), id)
		require.NoError(t, err)
		out, truncated, _, err := m.Output(id)
		require.NoError(t, err)
		assert.True(t, truncated)
		want := 100
		if limit == 50 {
			want = 50 // the smaller one wins
		}
		assert.Equal(t, want, len(out), "limit %d", limit)
	}
}

// Past MaxTerminals live terminals Create fails with ErrTooMany; a
// released one that ignores SIGTERM is killed at once to make room.
func TestMaxTerminals(t *testing.T) {
	m := newManager(t, terminal.Options{MaxTerminals: 2, KillGrace: time.Hour})
	stubborn := create(t, m, "s", sh("trap '' TERM; echo ready; while :; do sleep 1; done"))
	poll(t, "the trap to be set", func() bool { out, _, _, _ := m.Output(stubborn); return out == "ready\n" })
	create(t, m, "s", sh("sleep 100"))
	_, err := m.Create("s", sh("true"))
	require.ErrorIs(t, err, terminal.ErrTooMany)
	require.NoError(t, m.Release(stubborn))
	id, err := m.Create("s", sh("true"))
	require.NoError(t, err, "the released terminal made room")
	_, err = m.WaitForExit(t.Context(), id)
	require.NoError(t, err)
}
