package testutil

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalTB records a Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	failed string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fails runs check on a fatalTB and returns what it failed with ("" if it
// did not).
func fails(check func(testing.TB)) string {
	f := &fatalTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(f)
	}()
	<-done
	return f.failed
}

func TestGoroutinesBackToSeesALeak(t *testing.T) {
	base := runtime.NumGoroutine()
	stop := make(chan struct{})
	// Many, so that goroutines of the runtime or the test framework ending
	// meanwhile cannot hide the leak (one alone was hidden so in CI).
	for range 50 {
		go func() { <-stop }()
	}
	if GoroutinesBackTo(base) {
		t.Fatal("goroutines still blocked were not seen")
	}
	close(stop)
	if !GoroutinesBackTo(base) {
		t.Fatal("the goroutine ended but was still counted")
	}
}

func TestEventuallyFailsOnlyWhenItTimesOut(t *testing.T) {
	n := 0
	if msg := fails(func(tb testing.TB) { Eventually(tb, "three calls", func() bool { n++; return n == 3 }) }); msg != "" {
		t.Fatalf("Eventually failed on a condition that came true: %s", msg)
	}
	msg := fails(func(tb testing.TB) { Until(tb, 20*time.Millisecond, func() (bool, string) { return false, "still 7" }) })
	if !strings.Contains(msg, "still 7") {
		t.Fatalf("Until did not fail with the last state on a condition never true: %q", msg)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			b.Write([]byte("ab"))
		}()
	}
	for range 4 {
		<-done
	}
	if got := b.String(); got != "abababab" {
		t.Fatalf("got %q", got)
	}
}
