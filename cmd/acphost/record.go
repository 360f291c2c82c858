package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// The session record as the CLI sees it: whose it is, and whether an
// acphost holds it now.

// recordAgent is the agent of cfg as a record names it: by name, or by
// command; the built-in agent by its name alone.
func recordAgent(cfg config) (agent string, command []string) {
	agent, command = cfg.agentName, cfg.agent
	if agent == "" && len(command) == 0 && cfg.remote.url == "" {
		agent = demoAgent // a --url agent is the server's: named by the URL
	}
	if agent == demoAgent {
		command = nil
	}
	return agent, command
}

// liveState says whether a live acphost process holds r's session and
// runs a turn in it ("" for neither).
func liveState(r state.Record) string {
	if r.PID == 0 || !processAlive(r.PID) {
		return ""
	}
	if _, err := os.Lstat(r.Control); r.Control != "" && err != nil {
		return "" // its control socket is gone: the pid is someone else's now
	}
	if !r.TurnSince.IsZero() {
		return fmt.Sprintf("turn running %s (pid %d)", tty.FormatDuration(time.Since(r.TurnSince)), r.PID)
	}
	return fmt.Sprintf("open (pid %d)", r.PID)
}

// dirOrHere is dir, or the current directory when dir is "".
func dirOrHere(dir string) string {
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return dir
}

// thisAgent keeps the records of the agent of cfg.
func thisAgent(cfg config, recs []state.Record) []state.Record {
	var probe state.Record
	probe.Agent, probe.Command = recordAgent(cfg)
	var out []state.Record
	for _, r := range recs {
		probe.ID = r.ID
		if r.Same(probe) {
			out = append(out, r)
		}
	}
	return out
}

// agentName names the agent for messages.
func agentName(cfg config) string {
	if cfg.agentName != "" {
		return cfg.agentName
	}
	if len(cfg.agent) > 0 {
		return filepath.Base(cfg.agent[0])
	}
	return demoAgent
}
