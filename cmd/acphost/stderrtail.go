package main

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// maxStderrLines is how much of the agent's stderr a failure shows.
const maxStderrLines = 10

// maxStderrTail bounds the agent's stderr the CLI keeps for a failure
// the library's error carries no tail for (an agent's JSON-RPC error).
const maxStderrTail = 8 << 10

// stderrTail keeps the last maxStderrTail bytes written to it. Write
// runs on the library's stderr-draining goroutine; String on any.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - maxStderrTail; over > 0 {
		t.buf = slices.Delete(t.buf, 0, over)
	}
	return len(p), nil
}

func (t *stderrTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// rootHint is the known cause of a failing agent for a user at root: the
// Claude Code adapter's claude exits with status 1 as root unless
// IS_SANDBOX=1 is in its environment. "" when it is not the case.
func rootHint(euid int, cfg config, environ []string) string {
	if euid != 0 || !isClaude(cfg) {
		return ""
	}
	for _, kv := range append(slices.Clone(environ), cfg.agentEnv...) {
		if strings.HasPrefix(kv, "IS_SANDBOX=") {
			return ""
		}
	}
	return "Claude Code refuses to run as root unless IS_SANDBOX=1 is in its environment: run IS_SANDBOX=1 acphost …, " +
		"or \"env\": {\"IS_SANDBOX\": \"1\"} for the agent in the config file (only where root is already a sandbox), or run as another user"
}

// isClaude reports an agent that runs Claude Code: --agent claude, or a
// command naming it.
func isClaude(cfg config) bool {
	if cfg.agentName == "claude" {
		return true
	}
	for _, w := range cfg.agent {
		if strings.Contains(strings.ToLower(filepath.Base(w)), "claude") {
			return true
		}
	}
	return false
}
