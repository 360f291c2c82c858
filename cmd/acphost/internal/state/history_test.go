package state

import (
	"fmt"
	"sync"
	"testing"
)

// Two histories of the same agent (two acphost processes) keep each
// other's lines; the file is cut back to maxHistory on load.
func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	key := HistoryKey("", []string{"/usr/bin/my agent", "--acp"})
	if key != "my_agent-"+key[len("my_agent-"):] || len(key) != len("my_agent-")+8 {
		t.Errorf("key %q", key)
	}
	a, err := OpenHistory(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := OpenHistory(dir, key)
	var wg sync.WaitGroup
	for _, h := range []*History{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxHistory {
				h.Add(fmt.Sprintf("%p %d", h, i))
			}
		}()
	}
	wg.Wait()
	lines, err := readLines(a.path)
	if err != nil || len(lines) != 2*maxHistory {
		t.Fatalf("%d lines in the file, want %d: %v", len(lines), 2*maxHistory, err)
	}
	a.Add("last one")
	c, err := OpenHistory(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != maxHistory || c.At(0) != "last one" {
		t.Errorf("loaded %d lines, the last %q", c.Len(), c.At(0))
	}
	if lines, _ := readLines(a.path); len(lines) != maxHistory {
		t.Errorf("the file was not cut back: %d lines", len(lines))
	}
	a.Add("last one")
	a.Add("  ")
	if a.At(0) != "last one" || a.At(1) == "last one" {
		t.Error("a repeat or a blank line was recorded")
	}
}
