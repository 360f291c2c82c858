package main

import (
	"flag"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
)

// mcpConfigFlag defines --mcp-config on fs (acphost and acphost web).
func mcpConfigFlag(fs *flag.FlagSet, cfg *config) {
	fs.Func("mcp-config", usage.FlagHelp("mcp-config"), func(path string) error {
		cfg.mcpConfigs = append(cfg.mcpConfigs, path)
		return nil
	})
}

// applyMCPConfigs reads the --mcp-config files into cfg.mcpServers, after
// the config file's (a server of the same name replaced).
func applyMCPConfigs(cfg *config) error {
	for _, path := range cfg.mcpConfigs {
		servers, err := agents.ReadMCPConfig(path)
		if err != nil {
			return err
		}
		cfg.mcpServers = agents.MergeMCP(cfg.mcpServers, servers)
	}
	return nil
}
