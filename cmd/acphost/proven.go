package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
)

// provenWarning warns when a built-in agent, started unpinned as the
// built-in definition starts it, reports (in initialize's agentInfo) a
// version below the one its profile was proven with (interop/run.sh):
// npx resolves an old build when the machine's Node is too old for the
// latest. "" when there is nothing to say.
func provenWarning(cfg config, info acp.Implementation) string {
	def, ok := agents.Builtin[cfg.agentName]
	if !ok || !slices.Equal(cfg.agent, def.Command) {
		return "" // not a built-in agent, or one the config file pins or replaces
	}
	p := agents.ProfileFor(cfg.agentName, cfg.agent)
	if p == nil || p.ProvenVersion == "" {
		return ""
	}
	got, ok := parseVersion(info.Version)
	want, wok := parseVersion(p.ProvenVersion)
	if !ok || !wok || slices.Compare(got, want) >= 0 {
		return ""
	}
	return fmt.Sprintf("%s reports version %s, older than %s, the one acphost was proven with: npx picked an old build "+
		"(a Node too old for the latest? node --version), or pin a version in the config file",
		cfg.agentName, acp.SafeText(info.Version), p.ProvenVersion)
}

// parseVersion reads "1.2.3" (a leading v, and a -pre or +build suffix,
// allowed) as numbers.
func parseVersion(v string) ([]int, bool) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "v")
	if i := strings.IndexAny(v, "-+ "); i >= 0 {
		v = v[:i]
	}
	var nums []int
	for _, p := range strings.Split(v, ".") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return nil, false
		}
		nums = append(nums, n)
	}
	return nums, len(nums) > 0
}
