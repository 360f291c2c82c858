package proc

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A process started with Spec.Namespace is PID 1 of a namespace of its
// own, as the host's user, confined or not; its exit is seen and Stop
// ends it (the ladder's SIGTERM is not delivered to a namespace's PID 1
// without a handler: SIGKILL is, after the grace).
func TestStartInANamespace(t *testing.T) {
	if err := NamespaceAvailable(); err != nil {
		t.Skipf("LOUD: no PID namespace here: %v", err)
	}
	for _, confined := range []bool{false, true} {
		t.Run(fmt.Sprintf("confined=%v", confined), func(t *testing.T) {
			s := Spec{Command: "/bin/sh", Args: []string{"-c", `echo $$ $(id -u) $(id -g); while :; do sleep 1; done`}, Namespace: true, NamespaceRequired: true}
			if confined {
				s.Confined, s.Writable = true, []string{t.TempDir()}
			}
			p, err := Start(s)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Namespaced() || p.Fallback() != nil {
				t.Fatalf("namespaced=%v fallback=%v", p.Namespaced(), p.Fallback())
			}
			if confined != (p.death != nil) {
				t.Errorf("a DeathWatch: %v, confined: %v", p.death != nil, confined)
			}
			var wg sync.WaitGroup
			p.Pump(&wg, nil)
			line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("1 %d %d", os.Getuid(), os.Getgid()); strings.TrimSpace(line) != want {
				t.Errorf("pid, uid, gid inside = %q, want %q", line, want)
			}
			p.Stop(20 * time.Millisecond)
			wg.Wait()
			if exit, _, _ := p.Outcome(); exit.Signal != syscall.SIGKILL {
				t.Errorf("exit = %+v, want SIGKILL", exit)
			}
			if p.death != nil && p.death.cmd.ProcessState == nil {
				t.Error("the DeathWatch outlived Stop")
			}
		})
	}
}

// A DeathWatch kills its process when the host's end of the pipe closes
// without a line (the host died), and not when Stop ends it.
func TestDeathWatchKillsOnlyWhenTheHostDies(t *testing.T) {
	for _, hostDies := range []bool{false, true} {
		p, err := Start(Spec{Command: "/bin/sh", Args: []string{"-c", "exec sleep 1000"}})
		if err != nil {
			t.Fatal(err)
		}
		d := WatchDeath(p.Pid())
		if d == nil {
			t.Fatal("no DeathWatch")
		}
		if hostDies {
			d.pipe.Close() // as the kernel does when the host ends
			_ = d.cmd.Wait()
			if !p.WaitExit(10 * time.Second) {
				t.Fatal("the watch did not kill its process")
			}
		} else {
			d.Stop()
			if p.WaitExit(50 * time.Millisecond) {
				t.Fatal("Stop killed the process")
			}
		}
		p.Stop(0)
	}
}
