package acphost

import (
	"bytes"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrReentrant is returned by calls that would wait for the callback they
// are made from: a turn or LoadSession started from OnUpdate or a stream's
// emit (the dispatcher that must deliver the turn's updates is the one
// running the callback). Start them from another goroutine.
var ErrReentrant = errors.New("acphost: called from a callback it would wait for")

// goid returns the current goroutine's id. It is used only off the
// per-update path: to recognise calls made from the library's own callback
// goroutines, which would otherwise deadlock.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}

// callbacks records which goroutines are running user code for an agent.
type callbacks struct {
	mu         sync.Mutex
	dispatcher uint64
	running    map[uint64]int
	// inUser counts user code running (on any of the agent's goroutines), so
	// that the goroutine id is read only when a call could come from there.
	inUser atomic.Int32
}

// fromDispatcher reports whether the caller is the dispatcher running user
// code (OnUpdate, emit).
func (cb *callbacks) fromDispatcher() bool {
	return cb.inUser.Load() > 0 && cb.onDispatcher(goid())
}

// enter marks goroutine id (the caller's) as running user code; call the
// result when it returns.
func (cb *callbacks) enter(id uint64) (leave func()) {
	cb.mu.Lock()
	if cb.running == nil {
		cb.running = map[uint64]int{}
	}
	cb.running[id]++
	cb.mu.Unlock()
	return func() {
		cb.mu.Lock()
		if cb.running[id]--; cb.running[id] == 0 {
			delete(cb.running, id)
		}
		cb.mu.Unlock()
	}
}

func (cb *callbacks) setDispatcher(id uint64) {
	cb.mu.Lock()
	cb.dispatcher = id
	cb.mu.Unlock()
}

// onDispatcher reports whether id is the dispatcher goroutine.
func (cb *callbacks) onDispatcher(id uint64) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return id != 0 && id == cb.dispatcher
}

// inCallback reports whether id runs user code of this agent.
func (cb *callbacks) inCallback(id uint64) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return (id != 0 && id == cb.dispatcher) || cb.running[id] > 0
}
