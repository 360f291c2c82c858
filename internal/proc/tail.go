package proc

import "sync"

// TailBytes bounds the stderr a Process keeps for error messages.
const TailBytes = 64 << 10

// Tail keeps the last TailBytes written to it. The zero value is ready to
// use; it is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - TailBytes; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
