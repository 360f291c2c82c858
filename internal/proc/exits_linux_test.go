package proc

import (
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The host's one exit watcher runs each process's function once it has
// exited, for many at once however they end, and its goroutine ends with
// the last of them (a host with no agent has none).
func TestExitsAreWatchedByOneGoroutineThatEnds(t *testing.T) {
	const n = 40
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		pidfd := -1
		cmd := exec.Command("/bin/sh", "-c", "read x; exit 0")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{PidFD: &pidfd}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if pidfd < 0 {
			t.Skip("no pidfd here: exits are waited for in Wait")
		}
		wg.Add(1)
		if !watchExitAsync(pidfd, func() {
			defer wg.Done()
			if err := cmd.Wait(); err != nil && i%2 == 0 {
				t.Errorf("process %d: %v", i, err)
			}
		}) {
			t.Fatal("a pidfd could not be watched")
		}
		if i%2 == 0 {
			stdin.Close() // it ends by itself
		} else {
			_ = cmd.Process.Kill()
		}
		cmds[i] = cmd
	}
	wg.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		exits.mu.Lock()
		done := exits.set == nil && len(exits.waiting) == 0
		exits.mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exit watcher outlived the last process")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OnExit runs after Exited is closed; registered after the exit, at once.
func TestOnExitRunsAfterTheExit(t *testing.T) {
	p, err := Start(Spec{Command: "/bin/sh", Args: []string{"-c", "exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan bool, 2)
	p.OnExit(func() {
		select {
		case <-p.Exited():
			ran <- true
		default:
			ran <- false
		}
	})
	if !<-ran {
		t.Fatal("OnExit ran before Exited was closed")
	}
	p.OnExit(func() { ran <- true })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("OnExit registered after the exit did not run")
	}
	p.Stop(0)
	if exit, _, _ := p.Outcome(); exit.Code != 3 {
		t.Fatalf("exit = %+v", exit)
	}
}

// A process that exits before its exit is watched is seen to exit (the
// pidfd was waited for in the poller from a state the poller had already
// dropped, so an agent that died at once could hang Stop for ever).
func TestExitOfAQuickProcessIsSeen(t *testing.T) {
	for i := range 200 {
		p, err := Start(Spec{Command: "/bin/sh", Args: []string{"-c", "exit 3"}})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-p.Exited():
		case <-time.After(5 * time.Second):
			t.Fatalf("start %d: its exit was not seen", i)
		}
		p.Stop(0)
	}
}
