package main

import (
	"fmt"
	"sync"
	"testing"
)

func TestVisibleCutAndCutStyled(t *testing.T) {
	s := "\x1b[2mabcdé\x1b[0mfg"
	if i := visibleCut(s, 5); s[:i] != "\x1b[2mabcdé" {
		t.Errorf("visibleCut 5: %q", s[:i])
	}
	if i := visibleCut(s, 8); i != -1 {
		t.Errorf("visibleCut past the end: %d", i)
	}
	head, tail := cutStyled(s, visibleCut(s, 3))
	if head != "\x1b[2mabc\x1b[0m" || tail != "\x1b[2mdé\x1b[0mfg" {
		t.Errorf("cutStyled: %q %q (the style is closed before the cut and reopened after)", head, tail)
	}
	head, tail = cutStyled(s, len(s)-1)
	if head != "\x1b[2mabcdé\x1b[0mf" || tail != "g" {
		t.Errorf("cutStyled after a reset: %q %q", head, tail)
	}
}

// Two histories of the same agent (two acphost processes) keep each
// other's lines; the file is cut back to maxHistory on load.
func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	key := historyKey("", []string{"/usr/bin/my agent", "--acp"})
	if key != "my_agent-"+key[len("my_agent-"):] || len(key) != len("my_agent-")+8 {
		t.Errorf("key %q", key)
	}
	a, err := openHistory(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := openHistory(dir, key)
	var wg sync.WaitGroup
	for _, h := range []*history{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range maxHistory {
				h.add(fmt.Sprintf("%p %d", h, i))
			}
		}()
	}
	wg.Wait()
	lines, err := readLines(a.path)
	if err != nil || len(lines) != 2*maxHistory {
		t.Fatalf("%d lines in the file, want %d: %v", len(lines), 2*maxHistory, err)
	}
	a.add("last one")
	c, err := openHistory(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	if c.len() != maxHistory || c.at(0) != "last one" {
		t.Errorf("loaded %d lines, the last %q", c.len(), c.at(0))
	}
	if lines, _ := readLines(a.path); len(lines) != maxHistory {
		t.Errorf("the file was not cut back: %d lines", len(lines))
	}
	a.add("last one")
	a.add("  ")
	if a.at(0) != "last one" || a.at(1) == "last one" {
		t.Error("a repeat or a blank line was recorded")
	}
}
