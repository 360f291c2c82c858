package fakeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

// Environment variables that select the subprocess mode and carry the script.
const (
	envMode     = "ACPHOST_FAKEAGENT_MODE"
	envScript   = "ACPHOST_FAKEAGENT_SCRIPT"
	modeAgent   = "agent"
	modeSleeper = "sleeper"

	// Replay mode (see ReplayCommand): the recording file and the generation to play.
	modeReplay   = "replay"
	envRecording = "ACPHOST_FAKEAGENT_RECORDING"
	envReplayGen = "ACPHOST_FAKEAGENT_REPLAY_GEN"
)

// sleeperLifetime bounds the Grandchild sleeper, so a test that fails to kill the process
// group does not leak it forever.
const sleeperLifetime = time.Hour

// Main turns the process into a fake agent if it was started by [Command]: it then serves
// ACP on stdin/stdout with the script from the environment and exits the process, never
// returning. Started by [ReplayCommand], it replays the recording instead. Otherwise it
// returns at once. Call it first thing in main or TestMain.
func Main() {
	switch os.Getenv(envMode) {
	case modeAgent:
		os.Exit(runAgent())
	case modeReplay:
		os.Exit(runReplay())
	case modeSleeper:
		time.Sleep(sleeperLifetime)
		os.Exit(0)
	}
}

// Command returns the program, arguments and extra environment (to append to os.Environ)
// that start this same executable as a fake agent playing s. The executable must call
// [Main] at the start of main or TestMain. The script travels in an environment variable,
// so it must stay well under the system's limit for one variable (128 KiB on Linux).
// Unless GORACE is set, env also sets GORACE=atexit_sleep_ms=0, so that race-enabled test
// binaries exit without the race detector's one-second pause.
func Command(s Script) (path string, args []string, env []string, err error) {
	if os.Getenv(envMode) != "" {
		return "", nil, nil, errors.New("fakeagent: Command called inside a fake agent process; call fakeagent.Main at the start of main or TestMain")
	}
	if err := s.validate(); err != nil {
		return "", nil, nil, err
	}
	path, err = os.Executable()
	if err != nil {
		return "", nil, nil, fmt.Errorf("fakeagent: %w", err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", nil, nil, fmt.Errorf("fakeagent: %w", err)
	}
	env = []string{envMode + "=" + modeAgent, envScript + "=" + string(b)}
	if os.Getenv("GORACE") == "" {
		// A race-enabled binary otherwise sleeps a second before exiting with status 0.
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return path, nil, env, nil
}

// ReadRecord reads the messages a subprocess agent appended to its Script.RecordFile.
func ReadRecord(path string) ([]Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fakeagent: %w", err)
	}
	defer f.Close()
	var msgs []Message
	var bad error
	err = readAllLines(f, func(line []byte) bool {
		var m Message
		if bad = json.Unmarshal(line, &m); bad != nil {
			return false
		}
		msgs = append(msgs, m)
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return msgs, fmt.Errorf("fakeagent: reading %s: %w", path, err)
	}
	return msgs, nil
}

// runAgent serves the script from the environment and returns the exit code.
// LoginArg, among a subprocess agent's arguments, makes it its own
// terminal login program instead (the "args" of a terminal auth method, as
// a host runs it): it creates Script.AuthFile, says so and exits 0.
const LoginArg = "--fakeagent-login"

func runAgent() int {
	var s Script
	if err := json.Unmarshal([]byte(os.Getenv(envScript)), &s); err != nil {
		fmt.Fprintf(os.Stderr, "fakeagent: bad script in %s: %v\n", envScript, err)
		return 2
	}
	if slices.Contains(os.Args[1:], LoginArg) {
		if s.AuthFile == "" {
			fmt.Fprintln(os.Stderr, "fakeagent: a terminal login needs Script.AuthFile")
			return 1
		}
		if err := os.WriteFile(s.AuthFile, []byte("logged in\n"), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, "fakeagent:", err)
			return 1
		}
		fmt.Println("fakeagent: logged in")
		return 0
	}
	if s.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM)
	}
	if s.Grandchild {
		if err := startSleeper(); err != nil {
			fmt.Fprintf(os.Stderr, "fakeagent: starting the grandchild: %v\n", err)
			return 2
		}
	}
	go keepAlive()
	a := New(s)
	a.Stderr = os.Stderr
	a.exitFn = os.Exit
	if err := a.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// keepAlive keeps a sleeping goroutine around, so the runtime does not report a deadlock
// while an agent that ignores EOF blocks forever.
func keepAlive() {
	for {
		time.Sleep(time.Hour)
	}
}

// startSleeper starts this executable again as a sleeper that inherits stdout and stderr and
// stays in this process's group.
func startSleeper() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envMode+"="+modeSleeper)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
