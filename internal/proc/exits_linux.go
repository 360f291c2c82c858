//go:build linux

package proc

import (
	"os"
	"sync"
	"syscall"
)

// exitWatcher waits for the exits of the host's processes on one
// goroutine: their pidfds are in one epoll set, which waits in the
// runtime's poller, so an idle agent costs neither an OS thread nor a
// goroutine of its own for its exit. The goroutine lives while there is a
// process to wait for (a host with no agent has none); what an exit sets
// off runs on a goroutine of its own, never on the watcher's.
type exitWatcher struct {
	mu      sync.Mutex
	set     *exitSet // nil while nothing is watched
	waiting map[int32]func()
}

// exitSet is one epoll set and the goroutine waiting on it.
type exitSet struct {
	file *os.File // the epoll fd, in the runtime's poller
	fd   int
}

var exits = exitWatcher{waiting: map[int32]func(){}}

// watch has f run, on a goroutine of its own, once the process of pidfd
// has exited; the caller closes pidfd after that, not before. It reports
// false when the exit cannot be watched so: f will then never run.
func (w *exitWatcher) watch(pidfd int, f func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	fresh := w.set == nil
	if fresh {
		s, err := newExitSet()
		if err != nil {
			return false
		}
		w.set = s
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(pidfd)}
	if err := syscall.EpollCtl(w.set.fd, syscall.EPOLL_CTL_ADD, pidfd, &ev); err != nil {
		if fresh {
			w.set.file.Close()
			w.set = nil
		}
		return false
	}
	w.waiting[int32(pidfd)] = f
	if fresh {
		go w.run(w.set)
	}
	return true
}

func newExitSet() (*exitSet, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return &exitSet{file: os.NewFile(uintptr(fd), "exits"), fd: fd}, nil
}

// run hands on the exits s reports until nothing is left to wait for. It
// waits in the poller (the epoll fd is readable while an exit is ready);
// where that fails, in epoll_wait, holding one OS thread for the host.
func (w *exitWatcher) run(s *exitSet) {
	var events [32]syscall.EpollEvent
	// drain hands on every exit ready and reports whether the set is done
	// with (nothing left to wait for); timeout is epoll_wait's for the
	// first wait.
	drain := func(timeout int) bool {
		for {
			n, err := syscall.EpollWait(s.fd, events[:], timeout)
			if err == syscall.EINTR {
				continue
			}
			if err != nil || n <= 0 {
				return w.idle(s, err != nil && err != syscall.EAGAIN)
			}
			w.mu.Lock()
			for _, ev := range events[:n] {
				if f, ok := w.waiting[ev.Fd]; ok {
					delete(w.waiting, ev.Fd)
					_ = syscall.EpollCtl(s.fd, syscall.EPOLL_CTL_DEL, int(ev.Fd), nil)
					go f()
				}
			}
			w.mu.Unlock()
			timeout = 0
		}
	}
	rc, err := s.file.SyscallConn()
	if err == nil {
		err = rc.Read(func(uintptr) bool { return drain(0) })
	}
	if err != nil { // not pollable here
		for !drain(-1) {
		}
	}
	s.file.Close() // not from within Read, which holds the file
}

// idle reports whether s is done with: nothing is left to wait for (the
// next watch makes a new set), or it failed, when what waits on it runs
// at once (each such exit then waits in Wait).
func (w *exitWatcher) idle(s *exitSet, failed bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if failed {
		for fd, f := range w.waiting {
			delete(w.waiting, fd)
			go f()
		}
	}
	if len(w.waiting) > 0 {
		return false
	}
	if w.set == s {
		w.set = nil
	}
	return true
}
