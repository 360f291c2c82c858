//go:build linux

package acphost_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/confine"
	"github.com/stretchr/testify/require"
)

// Test binary modes for the Landlock signal-scope attack (chosen in init,
// before TestMain).
const (
	reviewKillerEnv = "ACPHOST_REVIEW_TGKILL"      // be the agent: signal the host's threads; value: report file
	reviewHostEnv   = "ACPHOST_REVIEW_TGKILL_HOST" // be the host: start a confined agent that is the killer
	reviewPtraceEnv = "ACPHOST_REVIEW_PTRACE"      // the killer attaches with ptrace instead of killing
)

func init() {
	if out := os.Getenv(reviewKillerEnv); out != "" {
		reviewKiller(out)
		os.Exit(0)
	}
	if dir := os.Getenv(reviewHostEnv); dir != "" {
		exe, _ := os.Executable()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := acphost.Start(ctx, acphost.ACPOptions{Command: exe, Dir: dir,
			Process: acphost.ProcessOptions{CleanEnv: true, Env: []string{reviewKillerEnv + "=" + filepath.Join(dir, "report"), reviewPtraceEnv + "=" + os.Getenv(reviewPtraceEnv)}, Confine: &acphost.Confinement{Writable: []string{dir}}}})
		if err == nil {
			c.Close()
		}
		fmt.Println("host survived")
		os.Exit(0)
	}
}

// reviewKiller runs as the confined agent: its parent is the host. Landlock
// scopes signals by the target *thread's* domain, and the host thread that
// restricted itself to start the agent (process.startAndWait keeps it for
// the agent's life) is in the agent's own domain: tgkill to it is allowed,
// and SIGKILL to one thread kills the whole host.
func reviewKiller(out string) {
	host := os.Getppid()
	var report strings.Builder
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(host) + "/task")
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		err := syscall.Tgkill(host, tid, 0)
		fmt.Fprintf(&report, "tid %d: %v\n", tid, err)
		if err != nil {
			continue
		}
		if os.Getenv(reviewPtraceEnv) != "" {
			reviewPtrace(tid, &report)
			continue
		}
		_ = os.WriteFile(out, []byte(report.String()+"SIGKILL\n"), 0o644)
		_ = syscall.Tgkill(host, tid, syscall.SIGKILL)
	}
	_ = os.WriteFile(out, []byte(report.String()), 0o644)
}

// A confined agent can SIGKILL (or SIGSTOP) its host despite Landlock's
// ABI 6 signal scope, through the host thread that started it.
func TestConfinedAgentCannotKillItsHost(t *testing.T) {
	if !confine.Scoped() {
		t.Skip("LOUD: Landlock ABI 6 scopes are not available on this kernel")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), reviewHostEnv+"="+dir)
	outp, err := cmd.CombinedOutput()
	report, _ := os.ReadFile(filepath.Join(dir, "report"))
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("the confined agent killed its host with %v through a thread in its Landlock domain:\n%s", ws.Signal(), report)
		}
	}
	require.NoError(t, err, "%s", outp)
	require.Contains(t, string(outp), "host survived")
}

// reviewPtrace attaches to the host thread tid and reads a word of the
// host's memory: with it the agent could as well write it (POKEDATA).
func reviewPtrace(tid int, report *strings.Builder) {
	runtime.LockOSThread()
	if err := syscall.PtraceAttach(tid); err != nil {
		fmt.Fprintf(report, "ptrace attach %d: %v\n", tid, err)
		return
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(tid, &ws, syscall.WALL, nil)
	var regs syscall.PtraceRegs
	err := syscall.PtraceGetRegs(tid, &regs)
	buf := make([]byte, 8)
	_, perr := syscall.PtracePeekData(tid, uintptr(regs.PC()), buf)
	fmt.Fprintf(report, "PTRACE ATTACHED to host thread %d: getregs %v, peek at pc %#x: %v %x\n", tid, err, regs.PC(), perr, buf)
	_ = syscall.PtraceDetach(tid)
}

// A confined agent can ptrace its host (and so write the host's memory,
// running code unconfined) through the same thread, on a kernel without
// Yama's ptrace_scope >= 1: Landlock allows ptrace within a domain.
func TestConfinedAgentCannotPtraceItsHost(t *testing.T) {
	if !confine.Available() {
		t.Skip("LOUD: Landlock is not available on this kernel")
	}
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), reviewHostEnv+"="+dir, reviewPtraceEnv+"=1")
	outp, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", outp)
	report, _ := os.ReadFile(filepath.Join(dir, "report"))
	require.NotContains(t, string(report), "PTRACE ATTACHED", "the confined agent attached to its host:\n%s", report)
}
