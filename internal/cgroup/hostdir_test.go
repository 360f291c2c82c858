package cgroup

import "testing"

// IsHostDir knows a host's directory by its name, and only that.
func TestIsHostDir(t *testing.T) {
	for name, want := range map[string]bool{
		"acphost-12-345": true, "acphost-0-0": true,
		"acphost-12": false, "acphost--1": false, "acphost-+1-2": false, "acphost-1-2.scope": false,
		"acphost-1-2-3": false, "agent-1": false, "xacphost-1-2": false, "": false,
	} {
		if got := IsHostDir(name); got != want {
			t.Errorf("IsHostDir(%q) = %v", name, got)
		}
	}
}
