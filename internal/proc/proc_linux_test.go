package proc

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// An agent that ignores stdin EOF and SIGTERM is ended by the ladder's
// SIGKILL, with the group: its background child dies with it.
func TestStopLadderKillsTheGroup(t *testing.T) {
	script := `trap '' TERM; sleep 100 & echo $!; echo oops >&2; while :; do sleep 1; done`
	p, err := Start(Spec{Command: "/bin/sh", Args: []string{"-c", script}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	p.Pump(&wg, nil)
	line, err := bufio.NewReader(p.Stdout()).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(10 * time.Millisecond)
	wg.Wait()
	exit, stderr, _ := p.Outcome()
	if !exit.Signaled || exit.Signal != syscall.SIGKILL || exit.Code != -1 {
		t.Errorf("exit = %+v, want SIGKILL", exit)
	}
	if stderr != "oops\n" {
		t.Errorf("stderr tail = %q", stderr)
	}
	// Killed, it may stay a zombie a moment until init reaps it.
	for deadline := time.Now().Add(5 * time.Second); running(child); {
		if time.Now().After(deadline) {
			t.Fatalf("the agent's child %d outlived Stop", child)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// The tail keeps the last TailBytes.
func TestTailKeepsTheEnd(t *testing.T) {
	var tail Tail
	tail.Write([]byte(strings.Repeat("a", TailBytes)))
	tail.Write([]byte("end"))
	got := tail.String()
	if len(got) != TailBytes || !strings.HasSuffix(got, "aend") {
		t.Errorf("tail: %d bytes, ends %q", len(got), got[len(got)-4:])
	}
}
