//go:build linux

package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestProcHelpersFindAMarkedChildAndNoneLeftFailsWhileItRuns(t *testing.T) {
	mark := "ACPHOST_TESTUTIL_MARK=" + t.Name()
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	pid := cmd.Process.Pid
	if !Running(pid) {
		t.Fatal("the child is not seen running")
	}
	if got := WithEnv(mark); len(got) != 1 || got[0] != pid {
		t.Fatalf("WithEnv = %v, want [%d]", got, pid)
	}
	found := false
	for _, p := range Descendants(os.Getpid()) {
		found = found || p == pid
	}
	if !found || Comm(pid) != "sleep" {
		t.Fatalf("the child %d (comm %q) is not among the descendants", pid, Comm(pid))
	}
	msg := fails(func(tb testing.TB) { NoneLeft(tb, mark, 50*time.Millisecond) })
	if !strings.Contains(msg, "still run") {
		t.Fatalf("NoneLeft did not fail while a marked process runs: %q", msg)
	}
	cmd.Process.Kill()
	<-exited
	if Running(pid) || len(WithEnv(mark)) != 0 {
		t.Fatal("the killed (reaped) child is still seen")
	}
	if msg := fails(func(tb testing.TB) { NoneLeft(tb, mark, time.Second) }); msg != "" {
		t.Fatalf("NoneLeft failed with none left: %s", msg)
	}
}
