//go:build unix

package container_test

import (
	"io"
	"strconv"
	"sync"
	"syscall"
)

func itoa(n int) string { return strconv.Itoa(n) }

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
