//go:build linux

package remote

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReviewStopEndsAnAgentThatStoppedReading: the ladder (EOF, TERM,
// KILL) must start when the wrapper's stdin ends, also when the agent
// stopped reading and the relay holds input it cannot hand on. Here the
// agent does not read at all (a wedged agent, the "stopped reading"
// restart case) and does not even ignore SIGTERM.
func TestReviewStopEndsAnAgentThatStoppedReading(t *testing.T) {
	t.Parallel()
	_, stdin, out := wrapped(t, `echo $$; exec sleep 1000`, nil)
	agent := pidLine(t, out)
	t.Cleanup(func() { syscall.Kill(agent, syscall.SIGKILL) })
	// More than the fifo and the stdin pipe hold (64 KiB each): the
	// relay's cat blocks writing into the fifo and never reads EOF.
	go func() {
		stdin.Write(bytes.Repeat([]byte("x"), 512<<10))
	}()
	time.Sleep(500 * time.Millisecond)
	stdin.Close() // the host stops the agent / the link drops
	gone(t, 10*time.Second, agent)
}

// TestReviewEnvCannotOverrideTheWrappersArguments: an Env entry is the
// agent's environment; it must not change where the agent starts (Dir)
// or the wrapper's grace. The wrapper keeps both in shell variables (d,
// g) that the header's `export "$v"` overwrites.
func TestReviewEnvCannotOverrideTheWrappersArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", Command([]string{"sh", "-c", `pwd; echo "$g"`}, dir, time.Second))
	cmd.Stdin = strings.NewReader("d=/\ng=7\n\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.SplitN(string(out), "\n", 2)[0]; got != dir {
		t.Fatalf("the agent started in %q, not in Dir %q: Env d=/ overrode Dir", got, dir)
	}
}
