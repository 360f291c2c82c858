// Package remote builds the command line that runs an agent on a machine
// the host reaches only through a byte stream (SSH, a container engine's
// exec): a POSIX sh wrapper that holds the agent's process tree so that it
// ends with the stream, whatever happens to the host or the link.
//
// The wrapper reads the agent's environment from the first lines of its
// stdin (so no secret shows in the remote process list), starts the agent
// in a session and process group of its own (setsid) with stdin through a
// relay, and from then on:
//
//   - when its stdin ends — the host closed it to stop the agent, or the
//     link dropped and the remote server closed it — the agent reads EOF,
//     is sent SIGTERM to its group after grace and SIGKILL after grace
//     again, by the relay, which does not depend on the link;
//   - SIGTERM, SIGINT or SIGHUP to the wrapper (the SSH "signal" request)
//     is passed to the agent's group;
//   - when the agent ends by itself what is left of its group and the
//     relay are killed, and the wrapper exits with the agent's status.
//
// Only the agent holds the stream's stdout and stderr, so its end is the
// stream's end.
package remote

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// script is the wrapper. $1 grace (whole seconds), $2 the directory to
// start in ("" for the login directory), then the agent's argv.
const script = `g=$1 d=$2; shift 2
while IFS= read -r v && [ -n "$v" ]; do export "$v"; done
if [ -n "$d" ]; then cd "$d" || exit 126; fi
command -v setsid >/dev/null 2>&1 || { echo "acphost: setsid is not installed on this host" >&2; exit 127; }
t=$(mktemp -d) && mkfifo "$t/in" || { echo "acphost: cannot make a fifo" >&2; exit 125; }
exec 3<&0
setsid "$@" <"$t/in" 3<&- &
a=$!
setsid sh -c 'cat >"$1"; sleep "$2"; kill -TERM -"$3"; sleep "$2"; kill -KILL -"$3"' relay "$t/in" "$g" "$a" <&3 >/dev/null 2>&1 &
r=$!
exec 3<&- </dev/null >/dev/null 2>&1
trap 'kill -TERM -"$a"' TERM INT HUP
while :; do wait "$a"; s=$?; kill -0 "$a" 2>/dev/null || break; done
kill -KILL -"$a" -"$r" 2>/dev/null
rm -rf "$t"
exit "$s"`

// Command returns the shell command line that runs argv under the
// wrapper, starting in dir ("" for the login directory) and giving the
// agent grace (at least a second) between EOF, SIGTERM and SIGKILL. It is
// meant for a POSIX login shell (sh -c semantics); the remote host needs
// sh, setsid, mktemp, mkfifo, cat, sleep and kill.
func Command(argv []string, dir string, grace time.Duration) string {
	secs := max(1, int(math.Ceil(grace.Seconds())))
	words := []string{"exec", "sh", "-c", Quote(script), "acphost-agent", strconv.Itoa(secs), Quote(dir)}
	for _, a := range argv {
		words = append(words, Quote(a))
	}
	return strings.Join(words, " ")
}

// Argv is Command as an argv for an engine that takes one (docker exec,
// kubectl exec): no login shell is involved.
func Argv(argv []string, dir string, grace time.Duration) []string {
	secs := max(1, int(math.Ceil(grace.Seconds())))
	return append([]string{"sh", "-c", script, "acphost-agent", strconv.Itoa(secs), dir}, argv...)
}

// ErrBadEnv is returned by EnvHeader for an entry the wrapper cannot carry.
var ErrBadEnv = errors.New("remote: environment entries must be KEY=value on one line, KEY a shell name")

// EnvHeader is what the host writes first on the wrapper's stdin: one
// KEY=value per line, then an empty line.
func EnvHeader(env []string) ([]byte, error) {
	var b []byte
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || !isName(k) || strings.ContainsAny(kv, "\n\r\x00") {
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
