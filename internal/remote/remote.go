// Package remote builds the commands that run an agent on a machine the
// host reaches only through byte streams (SSH sessions, a container
// engine's exec), so that the agent's processes end with the host's
// interest in them — when the host stops the agent, when the link drops,
// when the host dies — whatever the agent does with its stdin.
//
// Two commands run per agent, each on a stream of its own:
//
//   - the agent: a POSIX sh prelude that reads the agent's environment
//     from the first lines of its stdin (so no secret shows in the remote
//     process list or the engine's records), enters the directory and
//     execs the agent. The environment carries a mark, a random
//     ACPHOST_LINK=… entry, which every process the agent starts inherits.
//   - the watchdog: reads its stdin, which the host never writes. When it
//     ends — the host stopped the agent and closed it, or the link dropped
//     and the server closed it, or the engine's client died with the host
//     — it sends SIGTERM to every process carrying the mark, and SIGKILL a
//     grace later. It never waits on the agent, so an agent that stopped
//     reading (its stdin full) is ended like any other, and a process that
//     left the agent's process group or session is found by its mark.
//
// Both need sh, and the watchdog /proc, tr, grep, sleep and kill (any
// Linux).
//
// Over SSH (HiddenWatchdog), the agent is held more firmly where the
// remote side allows it: the watchdog checks that unshare can give this
// user a PID namespace of its own, and says so when it is ready; the agent
// then runs as the init of one (unshare --user --map-current-user --pid
// --fork --kill-child --mount-proc). A process it starts, even one that
// dropped its environment (env -i, a daemon) or left its session, is in
// the namespace, and ends with it; nothing in it can see or signal the
// watchdog. The watchdog's command line names neither its mark nor
// itself: its script, mark and grace come on its stdin, so an agent
// without the namespace cannot find its own watchdog by its argv either.
package remote

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// agentScript is the agent's prelude: $1 the directory to start in (""
// for the login directory), then the agent's argv. Its only variable is
// reserved (see EnvHeader), so the environment cannot change the prelude.
const agentScript = `while IFS= read -r _acphost_v && [ -n "$_acphost_v" ]; do export "$_acphost_v"; done
unset _acphost_v
if [ -n "$1" ]; then cd "$1" || exit 126; fi
shift
exec "$@"`

// watchdogScript: $1 the mark, $2 the grace in whole seconds. It says
// Ready on stdout before it waits, so that the host starts the agent only
// once something will end it.
const watchdogScript = `m=$1 g=$2
echo ` + Ready + `
IFS= read -r _ || :
k() {
	n=0
	for p in /proc/[0-9]*; do
		q=${p#/proc/}
		[ "$q" = "$$" ] && continue
		if tr '\000' '\n' 2>/dev/null <"$p/environ" | grep -qxF -e "$m"; then
			kill "-$1" "$q" 2>/dev/null && n=$((n + 1))
		fi
	done
}
k TERM
if [ "$n" -gt 0 ]; then sleep "$g"; fi
k KILL`

// Ready is the line the watchdog prints once it waits.
const Ready = "acphost-watchdog-ready"

// Containment is how the remote side holds the agent.
type Containment string

const (
	// ContainPIDNamespace: the agent is the init of a PID namespace of its
	// own; everything it starts ends with it.
	ContainPIDNamespace Containment = "pid namespace"
	// ContainMark: the agent's processes are found by the mark in their
	// environment; one that drops it escapes.
	ContainMark Containment = "mark"
)

// unshareArgv runs a command as the init of a PID namespace of its own,
// in a user namespace mapping only the user to itself (so no setuid
// program works in it), with a /proc of its own; --kill-child ends it when
// unshare ends.
var unshareArgv = []string{"unshare", "--user", "--map-current-user", "--pid", "--fork", "--kill-child", "--mount-proc", "--"}

// hiddenWatchdogArgv is the hidden watchdog's command line: it runs the
// first line of its stdin.
var hiddenWatchdogArgv = []string{"sh", "-c", `IFS= read -r _s && eval "$_s"`}

// hiddenWatchdogScript is that first line: it reads the mark and the
// grace from the next two, checks for PID namespaces, says Ready and the
// containment, and waits. At its stdin's end it sends SIGTERM to the
// mark's processes but unshare (whose end SIGKILLs its namespace at once:
// the agent gets the grace), then SIGKILL to all, unshare with them.
const hiddenWatchdogScript = `IFS= read -r m; IFS= read -r g; c=mark; ` +
	`if unshare --user --map-current-user --pid --fork --kill-child --mount-proc true </dev/null >/dev/null 2>&1; then c=pidns; fi; ` +
	`echo ` + Ready + ` $c; IFS= read -r _ || :; ` +
	`k() { n=0; for p in /proc/[0-9]*; do q=${p#/proc/}; [ "$q" = "$$" ] && continue; ` +
	`if tr '\000' '\n' 2>/dev/null <"$p/environ" | grep -qxF -e "$m"; then ` +
	`if [ "$1" = TERM ] && [ "$(cat "$p/comm" 2>/dev/null)" = unshare ]; then continue; fi; ` +
	`kill "-$1" "$q" 2>/dev/null && n=$((n + 1)); fi; done; }; ` +
	`k TERM; if [ "$n" -gt 0 ]; then sleep "$g"; fi; k KILL`

// HiddenWatchdog is the command line and first input of a watchdog whose
// command line names neither the mark nor itself.
func (c Commands) HiddenWatchdog() (argv []string, input []byte) {
	secs := max(1, int(math.Ceil(Grace.Seconds())))
	return hiddenWatchdogArgv, []byte(hiddenWatchdogScript + "\n" + c.Mark + "\n" + strconv.Itoa(secs) + "\n")
}

// AwaitContainment reads r (a watchdog's stdout) until Ready and returns
// the containment it found (ContainMark from a watchdog that names none),
// as AwaitReady.
func AwaitContainment(ctx context.Context, r io.Reader) (Containment, error) {
	type ready struct {
		how Containment
		err error
	}
	got := make(chan ready, 1)
	go func() {
		line, err := bufio.NewReader(io.LimitReader(r, 4096)).ReadString('\n')
		word, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case word == Ready && rest == "pidns":
			got <- ready{ContainPIDNamespace, nil}
		case word == Ready && (rest == "" || rest == "mark"):
			got <- ready{ContainMark, nil}
		case err != nil:
			got <- ready{err: fmt.Errorf("the watchdog ended before it was ready: %w", err)}
		default:
			got <- ready{err: fmt.Errorf("the watchdog printed %q", strings.TrimSpace(line))}
		}
	}()
	select {
	case r := <-got:
		return r.how, r.err
	case <-ctx.Done():
		return "", fmt.Errorf("the watchdog was not ready: %w", context.Cause(ctx))
	}
}

// ContainedAgent is the agent's command line held as c says.
func (c Commands) ContainedAgent(how Containment) []string {
	if how != ContainPIDNamespace {
		return c.Agent
	}
	return AgentArgv(append(append([]string(nil), unshareArgv...), c.argv...), c.dir)
}

// AwaitReady reads r (the watchdog's stdout) until Ready, or fails when r
// ends first or ctx does (the dial's: it bounds the whole dial).
func AwaitReady(ctx context.Context, r io.Reader) error {
	_, err := AwaitContainment(ctx, r)
	return err
}

// Grace is the watchdog's wait between SIGTERM and SIGKILL: fixed, since
// the watchdog starts before any Stop says its grace (acphost's default
// CloseGrace).
const Grace = 2 * time.Second

// WatchdogWait bounds a Stop's wait for the watchdog once its stdin is
// closed: its SIGTERM and SIGKILL rounds, and the Stop's grace (a second
// at least) more.
func WatchdogWait(grace time.Duration) time.Duration {
	return 2*Grace + max(grace, time.Second)
}

// Commands are one agent's two commands and what the host writes first
// on the agent's stdin.
type Commands struct {
	Agent    []string // argv: the prelude, then the agent
	Watchdog []string // argv: the watchdog of the agent's mark, with Grace
	Header   []byte   // the agent's environment and a fresh mark
	Mark     string   // the mark, as an environment entry

	argv []string
	dir  string
}

// NewCommands makes the commands that run argv in dir ("" for the login
// directory) with env, under a watchdog of a fresh mark.
func NewCommands(argv, env []string, dir string) (Commands, error) {
	mark := NewMark()
	header, err := EnvHeader(append(append([]string(nil), env...), mark))
	if err != nil {
		return Commands{}, err
	}
	return Commands{Agent: AgentArgv(argv, dir), Watchdog: WatchdogArgv(mark, Grace), Header: header, Mark: mark, argv: argv, dir: dir}, nil
}

// MarkKey is the environment variable of the mark.
const MarkKey = "ACPHOST_LINK"

// NewMark returns a fresh mark: an environment entry no other agent has.
func NewMark() string {
	b := make([]byte, 12)
	rand.Read(b)
	return MarkKey + "=" + hex.EncodeToString(b)
}

// AgentArgv is the argv that runs argv in dir ("" for the login
// directory) after reading the environment header from stdin.
func AgentArgv(argv []string, dir string) []string {
	return append([]string{"sh", "-c", agentScript, "acphost-agent", dir}, argv...)
}

// WatchdogArgv is the argv of the watchdog for mark, giving the agent's
// processes grace (at least a second) between SIGTERM and SIGKILL.
func WatchdogArgv(mark string, grace time.Duration) []string {
	secs := max(1, int(math.Ceil(grace.Seconds())))
	return []string{"sh", "-c", watchdogScript, "acphost-watchdog", mark, strconv.Itoa(secs)}
}

// CommandLine quotes argv for a POSIX login shell (what an SSH server runs
// a command with), exec'd so that the shell does not stay in between.
func CommandLine(argv []string) string {
	words := []string{"exec"}
	for _, a := range argv {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " ")
}

// ErrBadEnv is returned by EnvHeader for an entry the prelude cannot carry.
var ErrBadEnv = errors.New("remote: environment entries must be KEY=value on one line, KEY a shell name other than IFS and not starting with _acphost_")

// EnvHeader is what the host writes first on the agent's stdin: one
// KEY=value per line, then an empty line.
func EnvHeader(env []string) ([]byte, error) {
	var b []byte
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !isName(k) || k == "IFS" || strings.HasPrefix(k, "_acphost_") || strings.ContainsAny(kv, "\n\r\x00") {
			return nil, ErrBadEnv
		}
		b = append(b, kv...)
		b = append(b, '\n')
	}
	return append(b, '\n'), nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !(c >= 'A' && c <= 'Z') && !(c >= 'a' && c <= 'z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Quote quotes s for a POSIX shell.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
