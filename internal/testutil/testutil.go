// Package testutil holds helpers the module's tests share: a buffer safe
// for concurrent writers, a TestMain that fails the run when goroutines
// outlive the tests, a bounded poll, a loopback HTTPS file server, and
// (on unix) /proc process helpers.
//
// It is for tests only and imports nothing of the module, so any package's
// tests (the root package's internal ones included) may use it.
package testutil

import (
	"bytes"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer safe for concurrent use.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RunCheckingGoroutines runs the tests and, when they passed, fails the
// run (printing every stack) unless the goroutines come back, within
// five seconds, to as many as there were before them. It returns the exit
// code for os.Exit.
func RunCheckingGoroutines(m *testing.M) int {
	base := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 && !GoroutinesBackTo(base) {
		buf := make([]byte, 1<<20)
		os.Stderr.Write(buf[:runtime.Stack(buf, true)])
		os.Stderr.WriteString("FAIL: goroutines outlived the tests (stacks above)\n")
		code = 1
	}
	return code
}

// GoroutinesBackTo polls, for up to five seconds, for the goroutines to be
// no more than base (after closing http.DefaultClient's idle connections).
func GoroutinesBackTo(base int) bool {
	http.DefaultClient.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	return true
}

// Eventually polls cond until it holds, failing t if ten seconds pass.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Until(t, 10*time.Second, func() (bool, string) { return cond(), "timed out waiting for " + what })
}

// Until polls check until it reports done, failing t with the last state
// it described if within passes: the one polling loop of the tests (the
// condition is what is waited for; within only bounds a hang).
func Until(t testing.TB, within time.Duration, check func() (done bool, state string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, state := check()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", within, state)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// Returns runs fn on a goroutine of its own and fails t (naming what) if
// it has not returned within d: for calls that must not hang, such as a
// Close. On failure fn's goroutine is left to its fate.
func Returns(t testing.TB, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}
