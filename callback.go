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
// running the callback), and a turn of a session started from a callback
// serving that session's running turn (OnPermission, OnReadFile,
// OnWriteFile, OnCommand: the running turn waits for that callback, and the
// new one for the running turn). Start them from another goroutine.
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
	running    map[uint64][]string // goroutine → the sessions it runs callbacks for, innermost last
	// inUser counts user code running (on any of the agent's goroutines), so
	// that the goroutine id is read only when a call could come from there.
	inUser atomic.Int32
}

// fromDispatcher reports whether the caller is the dispatcher running user
// code (OnUpdate, emit).
func (cb *callbacks) fromDispatcher() bool {
	return cb.inUser.Load() > 0 && cb.onDispatcher(goid())
}

// enter marks goroutine id (the caller's) as running user code for
// session; call the result when it returns.
func (cb *callbacks) enter(id uint64, session string) (leave func()) {
	cb.mu.Lock()
	if cb.running == nil {
		cb.running = map[uint64][]string{}
	}
	cb.running[id] = append(cb.running[id], session)
	cb.mu.Unlock()
	return func() {
		cb.mu.Lock()
		if s := cb.running[id]; len(s) > 1 {
			cb.running[id] = s[:len(s)-1]
		} else {
			delete(cb.running, id)
		}
		cb.mu.Unlock()
	}
}

// blocksTurn reports whether a turn of session started by the caller would
// wait for the caller itself: it is the dispatcher running user code, or it
// runs a callback for that session while a turn of it runs (busy).
func (cb *callbacks) blocksTurn(session string, busy bool) bool {
	if cb.inUser.Load() == 0 {
		return false
	}
	id := goid()
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if id == cb.dispatcher {
		return true
	}
	for _, s := range cb.running[id] {
		if s == session && busy {
			return true
		}
	}
	return false
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
	return (id != 0 && id == cb.dispatcher) || len(cb.running[id]) > 0
}
