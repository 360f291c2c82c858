package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitEnv isolates git from the user's configuration and names a committer.
func gitEnv(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, "gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
		"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"} {
		t.Setenv(k, v)
	}
}

// run runs git in dir, failing the test on error.
func run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return out
}

// newRepo makes a repository with one commit and a subdirectory, in a
// directory of its own (so the worktrees' directory beside it is the
// test's).
func newRepo(t *testing.T) string {
	t.Helper()
	gitEnv(t)
	repo := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "init", "--quiet", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "sub", "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "add", ".")
	run(t, repo, "commit", "--quiet", "-m", "one")
	return repo
}

func TestCreateMakesAWorktreeBesideTheRepository(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, filepath.Join(repo, "sub"), "fix-1")
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(filepath.Dir(repo), "project.worktrees", "fix-1")
	if w.Path != want || w.Branch != "acphost/fix-1" || w.Repo != repo || w.Dir != filepath.Join(want, "sub") {
		t.Errorf("made %+v; want it at %s on acphost/fix-1, the session in its sub", w, want)
	}
	if got := run(t, w.Path, "symbolic-ref", "HEAD"); got != "refs/heads/acphost/fix-1" {
		t.Errorf("the worktree is on %s", got)
	}
	if got := run(t, repo, "rev-parse", "HEAD"); got != w.Base {
		t.Errorf("base %s, want the repository's HEAD %s", w.Base, got)
	}
	// From a worktree acphost made, the next one still goes beside the
	// main worktree.
	w2, err := Create(ctx, w.Path, "other")
	if err != nil {
		t.Fatal(err)
	}
	if w2.Path != filepath.Join(filepath.Dir(repo), "project.worktrees", "other") || w2.Repo != repo {
		t.Errorf("second worktree %+v", w2)
	}
	if _, err := Create(ctx, repo, "fix-1"); !errors.Is(err, ErrExists) {
		t.Errorf("the same name again: %v, want ErrExists", err)
	}
}

func TestCreateFollowsTheGitConfig(t *testing.T) {
	repo := newRepo(t)
	run(t, repo, "config", ConfigKey, ".trees")
	w, err := Create(context.Background(), repo, "x")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(repo, ".trees", "x"); w.Path != want {
		t.Errorf("path %s, want %s (the repository's %s)", w.Path, want, ConfigKey)
	}
}

func TestCreateRefusesADirectoryOutsideGit(t *testing.T) {
	gitEnv(t)
	dir := filepath.Join(t.TempDir(), "plain")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Create(context.Background(), dir, "x")
	if !errors.Is(err, ErrNotRepo) || !strings.Contains(err.Error(), "--worktree") {
		t.Errorf("outside a repository: %v, want ErrNotRepo saying what --worktree needs", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("something was made beside %s: %v", dir, entries)
	}
}

func TestHostileNamesAreRefused(t *testing.T) {
	repo := newRepo(t)
	for _, name := range []string{"", "../escape", "a/b", `a\b`, "..", ".hidden", "-rf", "a..b", "x.lock", "a b",
		"a\x1b[2Jb", "a\nb", "é", "a:b", "a~1", "a^", "a@{1}", "HEAD?", "a*", strings.Repeat("a", 65), "trail."} {
		_, err := Create(context.Background(), repo, name)
		if !errors.Is(err, ErrBadName) {
			t.Errorf("%q: %v, want ErrBadName", name, err)
		}
	}
	if out := run(t, repo, "branch", "--list", "acphost/*"); out != "" {
		t.Errorf("branches made: %s", out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(repo), "project.worktrees")); !os.IsNotExist(err) {
		t.Errorf("the worktrees' directory was made for a refused name: %v", err)
	}
}

func TestDefaultNameIsAValidName(t *testing.T) {
	for in, want := range map[string]string{"fix-login": "fix-login", "../../etc": "etc", "a b/c": "a-b-c", "x.lock": "x", "ünï": "n"} {
		if got := DefaultName(in); got != want {
			t.Errorf("DefaultName(%q) = %q, want %q", in, got, want)
		}
	}
	for _, in := range []string{"", "...", "é"} {
		if got := DefaultName(in); !strings.HasPrefix(got, "s-") || len(got) != 10 || ValidName(got) != nil {
			t.Errorf("DefaultName(%q) = %q, want s- and 8 hex digits", in, got)
		}
	}
}

func TestRemoveKeepsADirtyWorktree(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	w, err := Create(ctx, repo, "dirty")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.Path, "new.txt"), []byte("work\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Remove(ctx, w.Repo, w.Path, w.Branch, w.Base)
	if err != nil {
		t.Fatal(err)
	}
	if r.Removed || len(r.Dirty) != 1 || !strings.Contains(r.Dirty[0], "new.txt") || r.BranchDeleted {
		t.Errorf("removal %+v; want the worktree and its branch kept, new.txt named", r)
	}
	if _, err := os.Stat(filepath.Join(w.Path, "new.txt")); err != nil {
		t.Errorf("the work is gone: %v", err)
	}
}

func TestRemoveRemovesACleanWorktreeAndAnEmptyBranch(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	clean, err := Create(ctx, repo, "clean")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Remove(ctx, clean.Repo, clean.Path, clean.Branch, clean.Base)
	if err != nil || !r.Removed || !r.BranchDeleted {
		t.Fatalf("removal %+v, %v; want both gone", r, err)
	}
	if _, err := os.Stat(clean.Path); !os.IsNotExist(err) {
		t.Errorf("the directory stays: %v", err)
	}
	// A branch with commits of its own stays, with the count.
	work, err := Create(ctx, repo, "work")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work.Path, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, work.Path, "add", ".")
	run(t, work.Path, "commit", "--quiet", "-m", "two")
	r, err = Remove(ctx, work.Repo, work.Path, work.Branch, work.Base)
	if err != nil || !r.Removed || r.BranchDeleted || r.Ahead != 1 {
		t.Fatalf("removal %+v, %v; want the worktree gone and its branch kept, 1 commit ahead", r, err)
	}
	if got := run(t, repo, "branch", "--list", "acphost/work"); !strings.Contains(got, "acphost/work") {
		t.Errorf("the branch with a commit was deleted")
	}
	// A directory removed by hand: git forgets it, the branch goes.
	gone, err := Create(ctx, repo, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone.Path); err != nil {
		t.Fatal(err)
	}
	if r, err = Remove(ctx, gone.Repo, gone.Path, gone.Branch, gone.Base); err != nil || !r.Removed || !r.BranchDeleted {
		t.Errorf("removal of a vanished worktree %+v, %v", r, err)
	}
}

// A record that names what acphost never made (the main worktree, another
// repository, a branch outside acphost/) removes nothing.
func TestRemoveRefusesWhatItDidNotMake(t *testing.T) {
	repo := newRepo(t)
	ctx := context.Background()
	base := run(t, repo, "rev-parse", "HEAD")
	other := newRepo(t)
	w, err := Create(ctx, other, "w")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ repo, path, branch, base string }{
		{repo, repo, "acphost/x", base},            // the main worktree
		{repo, w.Path, w.Branch, w.Base},           // another repository's worktree
		{repo, repo, "main", base},                 // not an acphost branch
		{repo, repo, "acphost/../main", base},      // nor this
		{repo, "relative", "acphost/x", base},      // not absolute
		{repo, w.Path, "acphost/w", "--output=/x"}, // a base that is no commit id
	} {
		if r, err := Remove(ctx, tc.repo, tc.path, tc.branch, tc.base); err == nil || r.Removed || r.BranchDeleted {
			t.Errorf("Remove(%+v) = %+v, %v; want it refused", tc, r, err)
		}
	}
	for _, dir := range []string{repo, w.Path} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed: %v", dir, err)
		}
	}
	if got := run(t, other, "branch", "--list", "acphost/w"); got == "" {
		t.Error("the other repository's branch was deleted")
	}
}
