//go:build unix

package main

import "testing"

// TestGoldenSystemPromptRefused: the built-in agent takes no system prompt;
// --system-prompt is refused at the start, saying what to do (exit 2).
func TestGoldenSystemPromptRefused(t *testing.T) {
	extra, _, _ := isolated(t)
	p := startPane(t, nil, append(extra, "COLUMNS=120"), "--system-prompt", "Answer briefly.", "-p", "list files")
	compareGolden(t, "demo-system-prompt-refused", p.waitFor("[exited 2]", 1))
}
