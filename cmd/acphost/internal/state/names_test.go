package state

import (
	"strings"
	"testing"
	"time"
)

// A name is a word a script passes: hostile ones (a path, a terminal
// escape, a bidi override, "last") are refused with why.
func TestValidNameRefusesHostileNames(t *testing.T) {
	for _, name := range []string{"fix-login", "refactor_2", "été", "a.b", "日本"} {
		if err := ValidName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "last", "../x", "a/b", `a\b`, "..", ".x", "-rf", "a b", "a\tb", "a\nb",
		"\x1b[2Jx", "x\x07", "a\u202eb", "a\u200bb", "\xff", strings.Repeat("n", MaxNameBytes+1)} {
		if err := ValidName(name); err == nil {
			t.Errorf("%q: taken", name)
		}
	}
}

// Find takes a name where it takes an id, in the directory the session
// belongs to (a worktree's session belongs to where acphost ran); an exact
// id wins over a name, a name over an id's prefix.
func TestFindByName(t *testing.T) {
	now := time.Now()
	recs := []Record{
		{ID: "abc123", Agent: "demo", Cwd: "/p", Name: "fix", LastUsed: now},
		{ID: "fix999", Agent: "demo", Cwd: "/p", LastUsed: now.Add(-time.Hour)},
		{ID: "w1", Agent: "demo", Cwd: "/p.worktrees/x", Name: "wt", Worktree: &Worktree{From: "/p", Path: "/p.worktrees/x"}, LastUsed: now.Add(-2 * time.Hour)},
		{ID: "q1", Agent: "demo", Cwd: "/q", Name: "other", LastUsed: now},
	}
	for _, tc := range []struct{ key, cwd, want string }{
		{"fix", "/p", "abc123"},
		{"fix999", "/p", "fix999"},
		{"fix9", "/p", "fix999"},
		{"wt", "/p", "w1"},
		{"wt", "/p.worktrees/x", "w1"},
		{"last", "/p", "abc123"},
	} {
		i, err := Find(recs, tc.key, tc.cwd)
		if err != nil || recs[i].ID != tc.want {
			t.Errorf("Find(%q in %s) = %d, %v; want %s", tc.key, tc.cwd, i, err, tc.want)
		}
	}
	if _, err := Find(recs, "other", "/p"); err == nil || !strings.Contains(err.Error(), "/q") {
		t.Errorf("a name of another directory: %v, want it to say where that session is", err)
	}
	two := append(recs, Record{ID: "c1", Agent: "claude", Cwd: "/p", Name: "fix"})
	if _, err := Find(two, "fix", "/p"); err == nil || !strings.Contains(err.Error(), "give the id") {
		t.Errorf("one name, two agents: %v", err)
	}
}

// A name names one session of an agent in a directory: the record last
// written with it keeps it; a writer that does not know of names keeps it.
func TestPutKeepsANameUnique(t *testing.T) {
	s := &Store{Dir: t.TempDir()}
	now := time.Now()
	for _, r := range []Record{
		{ID: "s1", Agent: "demo", Cwd: "/p", Name: "fix", Created: now, LastUsed: now},
		{ID: "s2", Agent: "claude", Cwd: "/p", Name: "fix", Created: now, LastUsed: now},
		{ID: "s3", Agent: "demo", Cwd: "/q", Name: "fix", Created: now, LastUsed: now},
		{ID: "s1", Agent: "demo", Cwd: "/p", LastUsed: now.Add(time.Second)}, // knows no name
		{ID: "s4", Agent: "demo", Cwd: "/p", Name: "fix", Created: now, LastUsed: now.Add(2 * time.Second)},
	} {
		if err := s.Put(r); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, r := range recs {
		names[r.ID] = r.Name
	}
	want := map[string]string{"s1": "", "s2": "fix", "s3": "fix", "s4": "fix"}
	for id, n := range want {
		if names[id] != n {
			t.Errorf("%s named %q, want %q (all: %v)", id, names[id], n, names)
		}
	}
}
