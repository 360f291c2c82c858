//go:build linux

package remote

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// wrapped runs agent (a sh script) under the wrapper as a login shell
// would (sh -c), with env in the header, and returns the wrapper, its
// stdin and the agent's stdout lines.
func wrapped(t *testing.T, agent string, env []string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command("sh", "-c", Command([]string{"sh", "-c", agent}, t.TempDir(), time.Second))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	header, err := EnvHeader(env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stdin.Write(header); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, bufio.NewScanner(stdout)
}

func line(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("the agent's output ended: %v", sc.Err())
	}
	return sc.Text()
}

func pidLine(t *testing.T, sc *bufio.Scanner) int {
	t.Helper()
	pid, err := strconv.Atoi(line(t, sc))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat))
	return len(f) > 2 && f[2] != "Z"
}

// gone polls (bounded) until none of pids runs.
func gone(t *testing.T, within time.Duration, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := 0
		for _, p := range pids {
			if alive(p) {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %v still running after %v", left, pids, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWrapperCarriesEnvAndStreams(t *testing.T) {
	t.Parallel()
	cmd, stdin, out := wrapped(t, `echo "$SECRET $OTHER $(pwd)"; exec cat`, []string{"SECRET=a b'c", "OTHER=$HOME"})
	got := line(t, out)
	if !strings.HasPrefix(got, "a b'c $HOME /") {
		t.Fatalf("env and dir: %q", got)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0"}`+"\n")
	if got := line(t, out); got != `{"jsonrpc":"2.0"}` {
		t.Fatalf("relayed: %q", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("an agent that ends at EOF ends the wrapper cleanly: %v", err)
	}
}

func TestWrapperPassesTheAgentsExitStatus(t *testing.T) {
	t.Parallel()
	cmd, _, out := wrapped(t, `echo up; exit 3`, nil)
	line(t, out)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("want exit 3, got %v", err)
	}
}

// stubborn ignores EOF and SIGTERM and leaves a grandchild in its group.
const stubborn = `trap '' TERM; sleep 1000 & echo $$; echo $!; while :; do sleep 1; done`

func TestWrapperKillsTheGroupWhenStdinEnds(t *testing.T) {
	t.Parallel()
	cmd, stdin, out := wrapped(t, stubborn, nil)
	agent, child := pidLine(t, out), pidLine(t, out)
	stdin.Close()
	gone(t, 10*time.Second, agent, child)
	cmd.Wait()
}

func TestWrapperKillsTheGroupWhenTheLinkDrops(t *testing.T) {
	t.Parallel()
	cmd, stdin, out := wrapped(t, stubborn, nil)
	agent, child := pidLine(t, out), pidLine(t, out)
	// The server side of a dropped link: the session's process dies and
	// its pipe ends close.
	cmd.Process.Signal(syscall.SIGKILL)
	stdin.Close()
	gone(t, 10*time.Second, agent, child)
	cmd.Wait()
}

func TestWrapperPassesSIGTERMToTheGroup(t *testing.T) {
	t.Parallel()
	cmd, _, out := wrapped(t, `sleep 1000 & echo $$; echo $!; wait`, nil)
	agent, child := pidLine(t, out), pidLine(t, out)
	cmd.Process.Signal(syscall.SIGTERM)
	gone(t, 5*time.Second, agent, child)
	cmd.Wait()
}

func TestEnvHeaderRefusesWhatTheWrapperCannotCarry(t *testing.T) {
	for _, bad := range []string{"NOEQUALS", "=v", "1A=v", "A B=v", "A=line\nbreak", "A=nul\x00"} {
		if _, err := EnvHeader([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"": "''", "plain/path-1.0": "plain/path-1.0", "it's": `'it'\''s'`, "$HOME": `'$HOME'`} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWrapperKillsWhatTheAgentLeftInItsGroup(t *testing.T) {
	t.Parallel()
	cmd, _, out := wrapped(t, `sleep 1000 & echo $!; exit 0`, nil)
	child := pidLine(t, out)
	cmd.Wait()
	gone(t, 5*time.Second, child)
}
