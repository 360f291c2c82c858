//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/acphost/acphost/internal/confine"
)

// gateShell runs a restricted command's program once StartRestricted
// opens the gate: it reads a line from the gate descriptor (and exits 125,
// running nothing, if the host closed it without one), closes it and
// replaces itself with the program.
const (
	gateShell  = "/bin/sh"
	gateScript = `IFS= read -r _ <&%[1]d || exit 125; exec %[1]d<&-; exec "$0" "$@"`
)

// threadGoneWait bounds the wait for the restricting thread to end.
const threadGoneWait = 5 * time.Second

// StartRestricted starts cmd so that it, and everything it starts, may
// write only beneath writable (confine.RestrictThread), and so that it
// cannot reach the host through the thread that started it.
//
// A child is restricted by forking it from a thread that restricted
// itself, and that thread is then inside the child's Landlock domain: a
// child that found it (/proc/PPID/task) could signal it, which for
// SIGKILL kills the whole host, or ptrace it and run code in the host.
// So the restricted thread starts cmd's program behind a gate (a shell
// waiting to read a pipe), ends (it is never unlocked, so the runtime ends
// its OS thread), and only once the thread is gone does the gate open and
// the program run. The child therefore gets no parent-death signal: the
// thread it would follow is gone (callers contain it otherwise: a cgroup
// and its watcher). cmd must be unstarted and, like any, Wait-ed by the
// caller after a nil return; on error nothing is left running.
//
// A cmd that SetNamespace puts in a user namespace has its uid and gid
// maps written by this (unrestricted) goroutine once the restricted thread
// is gone, before the gate opens: the restricted thread may not write
// /proc (Landlock), and the gate shell waits, unmapped, until they are
// written.
func StartRestricted(cmd *exec.Cmd, writable []string) error {
	if cmd.Err != nil {
		return cmd.Err
	}
	if cmd.SysProcAttr != nil {
		cmd.SysProcAttr.Pdeathsig = 0
	}
	maps := deferIDMaps(cmd.SysProcAttr)
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer gateR.Close()
	fd := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, gateR)
	cmd.Args = append([]string{gateShell, "-c", fmt.Sprintf(gateScript, fd), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = gateShell

	type started struct {
		tid int
		err error
	}
	done := make(chan started, 1)
	confine.Go(func() { // never unlocked: the thread ends with this goroutine
		tid := syscall.Gettid()
		if err := confine.RestrictThread(writable); err != nil {
			done <- started{tid, err}
			return
		}
		done <- started{tid, cmd.Start()}
	})
	s := <-done
	if s.err != nil {
		gateW.Close()
		return s.err
	}
	err = waitThreadGone(s.tid, threadGoneWait)
	if err == nil {
		err = maps.write(cmd.Process.Pid)
	}
	if err != nil {
		gateW.Close() // the shell exits without running the program
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	_, err = gateW.Write([]byte("\n"))
	gateW.Close()
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("proc: opening the gate: %w", err)
	}
	return nil
}

// errThreadLives is returned when the restricting thread outlives the wait.
var errThreadLives = errors.New("proc: the thread that started a confined process did not end")

// waitThreadGone polls, with a deadline, until this process's thread tid
// has ended.
func waitThreadGone(tid int, d time.Duration) error {
	task := "/proc/self/task/" + strconv.Itoa(tid)
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(task); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return errThreadLives
		}
		time.Sleep(50 * time.Microsecond)
	}
}
