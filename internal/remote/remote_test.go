//go:build linux

package remote

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/testutil"
)

// pair is an agent and its watchdog, run as an SSH server would run them:
// each through "sh -c" (a login shell) with its own pipes.
type pair struct {
	agent, watchdog   *exec.Cmd
	stdin, watchdogIn io.WriteCloser
	out               *bufio.Scanner
	mark              string
}

func start(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

func run(t *testing.T, agent string, env []string) *pair {
	t.Helper()
	p := &pair{mark: NewMark()}
	p.watchdog = exec.Command("sh", "-c", CommandLine(WatchdogArgv(p.mark, time.Second)))
	var err error
	if p.watchdogIn, err = p.watchdog.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	start(t, p.watchdog)
	p.agent = exec.Command("sh", "-c", CommandLine(AgentArgv([]string{"sh", "-c", agent}, t.TempDir())))
	if p.stdin, err = p.agent.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.agent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start(t, p.agent)
	t.Cleanup(func() {
		for _, pid := range testutil.WithEnv(p.mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	header, err := EnvHeader(append(env, p.mark))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.stdin.Write(header); err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewScanner(stdout)
	return p
}

func (p *pair) line(t *testing.T) string {
	t.Helper()
	if !p.out.Scan() {
		t.Fatalf("the agent's output ended: %v", p.out.Err())
	}
	return p.out.Text()
}

func (p *pair) pid(t *testing.T) int {
	t.Helper()
	pid, err := strconv.Atoi(p.line(t))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone polls (bounded) until no process carries the pair's mark.
func (p *pair) gone(t *testing.T, within time.Duration) {
	t.Helper()
	testutil.NoneLeft(t, p.mark, within)
}

func TestAgentPreludeCarriesEnvAndDir(t *testing.T) {
	t.Parallel()
	p := run(t, `echo "$SECRET $OTHER $(pwd)"; exec cat`, []string{"SECRET=a b'c", "OTHER=$HOME"})
	if got := p.line(t); !strings.HasPrefix(got, "a b'c $HOME /") {
		t.Fatalf("env and dir: %q", got)
	}
	io.WriteString(p.stdin, `{"jsonrpc":"2.0"}`+"\n")
	if got := p.line(t); got != `{"jsonrpc":"2.0"}` {
		t.Fatalf("stdin reaches the agent: %q", got)
	}
	p.stdin.Close()
	if err := p.agent.Wait(); err != nil {
		t.Fatalf("an agent that ends at EOF ends cleanly: %v", err)
	}
}

func TestAgentPreludeKeepsTheExitStatus(t *testing.T) {
	t.Parallel()
	p := run(t, `echo up; exit 3`, nil)
	p.line(t)
	if ee, ok := p.agent.Wait().(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatal("want exit 3")
	}
}

func TestEnvCannotChangeThePrelude(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", CommandLine(AgentArgv([]string{"sh", "-c", `pwd`}, dir)))
	cmd.Stdin = strings.NewReader("d=/\ng=7\n\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != dir {
		t.Fatalf("the agent started in %q, not %q", got, dir)
	}
	for _, bad := range []string{"_acphost_v=x", "IFS=x"} {
		if _, err := EnvHeader([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// stubborn ignores EOF and SIGTERM, and leaves a grandchild in a session
// of its own (out of its process group).
const stubborn = `trap '' TERM; setsid sleep 1000 & echo $$; while :; do sleep 1; done`

func TestWatchdogEndsEverythingWhenItsStdinEnds(t *testing.T) {
	t.Parallel()
	p := run(t, stubborn, nil)
	p.pid(t)
	p.stdin.Close()
	p.watchdogIn.Close() // the host stops the agent
	p.gone(t, 10*time.Second)
	p.watchdog.Wait()
}

// The link drops: the server's processes die and both streams' pipe ends
// close; nobody is left on the host's side to ask for anything.
func TestWatchdogEndsEverythingWhenTheLinkDrops(t *testing.T) {
	t.Parallel()
	p := run(t, stubborn, nil)
	p.pid(t)
	p.agent.Process.Signal(syscall.SIGKILL)
	p.stdin.Close()
	p.watchdogIn.Close()
	p.gone(t, 10*time.Second)
}

// An agent that stopped reading, with more input queued than the pipes
// hold, is ended all the same: the watchdog never waits on it.
func TestWatchdogEndsAnAgentThatStoppedReading(t *testing.T) {
	t.Parallel()
	p := run(t, `echo $$; exec sleep 1000`, nil)
	p.pid(t)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		p.stdin.Write(bytes.Repeat([]byte("x"), 512<<10)) // blocks: nobody reads
	}()
	p.watchdogIn.Close()
	p.gone(t, 10*time.Second)
	p.stdin.Close()
	<-wrote
}

func TestWatchdogLeavesOthersAlone(t *testing.T) {
	t.Parallel()
	a := run(t, `echo $$; exec sleep 1000`, nil)
	b := run(t, `echo $$; exec sleep 1000`, nil)
	a.pid(t)
	other := b.pid(t)
	a.watchdogIn.Close()
	a.gone(t, 10*time.Second)
	if !testutil.Running(other) {
		t.Fatal("another agent's watchdog killed this one")
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{"": "''", "plain/path-1.0": "plain/path-1.0", "it's": `'it'\''s'`, "$HOME": `'$HOME'`} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}
