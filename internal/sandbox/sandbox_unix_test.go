//go:build unix

package sandbox

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadTextFIFO checks that a FIFO is refused without blocking on open.
func TestReadTextFIFO(t *testing.T) {
	l := newLayout(t)
	p := filepath.Join(l.root, "fifo")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := l.r.ReadText(bg, p, 0, 0, testMax)
	requireReason(t, err, ReasonNotRegular)
	err = l.r.WriteText(p, "x")
	requireReason(t, err, ReasonNotRegular)
}
