package main

import (
	"os"
	"path/filepath"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// The session record as the CLI sees it: whose it is, and whether an
// acphost holds it now.

// recordAgent is the agent of cfg as a record names it: by name, or by
// command; the built-in agent by its name alone.
func recordAgent(cfg config) (agent string, command []string) {
	agent, command = cfg.agentName, cfg.agent
	if agent == "" && len(command) == 0 && cfg.remote.url == "" {
		agent = agents.Demo // a --url agent is the server's: named by the URL
	}
	if agent == agents.Demo {
		command = nil
	}
	return agent, command
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
	return agents.Demo
}
