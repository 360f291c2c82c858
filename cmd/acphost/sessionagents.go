package main

import (
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/sessions"
)

// sessionAgents is the user's agents as the sessions subcommands see them.
func sessionAgents() sessions.Agents {
	return sessions.Agents{Demo: agents.Demo, Load: func() (sessions.Config, error) {
		file, err := agents.Load()
		if err != nil {
			return nil, err
		}
		return sessionConfig{file}, nil
	}}
}

// sessionConfig is an agents.FileConfig as a sessions.Config.
type sessionConfig struct{ file agents.FileConfig }

func (c sessionConfig) Agent(name string) ([]string, string, error) {
	def, err := c.file.Lookup(name)
	return def.Command, def.Source(), err
}

func (c sessionConfig) Path() string { return c.file.Path() }
