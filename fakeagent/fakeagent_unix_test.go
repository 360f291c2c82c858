//go:build unix

package fakeagent_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/fakeagent"
)

func TestSubprocessIgnoresSIGTERM(t *testing.T) {
	cmd, c, _, _ := startProcess(t, fakeagent.Script{IgnoreSIGTERM: true})
	c.handshake() // Main has installed the signal disposition before serving
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A pending SIGTERM is acted on before the process runs again, so an answer proves it
	// was ignored.
	if resp, _ := c.call("initialize", map[string]any{}); resp.Result == nil {
		t.Errorf("got %s", resp.line)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

func TestSubprocessGrandchildHoldsStdout(t *testing.T) {
	path, args, env, err := fakeagent.Command(fakeagent.Script{Grandchild: true})
	if err != nil {
		t.Fatal(err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdoutR.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = stdoutW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdoutW.Close()
	pgid := cmd.Process.Pid
	defer syscall.Kill(-pgid, syscall.SIGKILL)

	stdin.Close() // the agent exits 0 at EOF
	if code := exitCode(t, cmd); code != 0 {
		t.Fatalf("agent exit code %d", code)
	}
	// The grandchild still holds stdout open: a read times out instead of hitting EOF.
	_ = stdoutR.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := stdoutR.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the agent exited: %v, want a timeout (stdout held open)", err)
	}
	// Killing the whole process group closes it.
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = stdoutR.SetReadDeadline(time.Now().Add(timeout))
	if _, err := stdoutR.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after killing the group: %v, want EOF", err)
	}
}
