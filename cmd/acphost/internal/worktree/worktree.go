// Package worktree makes and removes the git worktrees acphost --worktree
// runs sessions in: one per session, on a branch of its own
// (acphost/NAME), all of a repository's in one directory beside it. It runs
// the git command; nothing else in acphost does, and the library never
// depends on git.
package worktree

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// BranchPrefix starts the branch of every worktree acphost makes; only
// such a branch is ever deleted.
const BranchPrefix = "acphost/"

// ConfigKey is the git configuration key (any scope: the repository's,
// the user's, the system's) that names the directory worktrees go in:
// absolute, or relative to the repository's main worktree.
const ConfigKey = "acphost.worktreeDir"

// Errors Create and Remove wrap.
var (
	// ErrNotRepo: the directory is in no git repository (or in a bare one).
	ErrNotRepo = errors.New("not in a git work tree")
	// ErrExists: the worktree's directory or branch is there already.
	ErrExists = errors.New("already exists")
	// ErrBadName: a worktree name git or a file system would not take
	// as it is.
	ErrBadName = errors.New("not a worktree name")
	// ErrNoGit: the git command cannot be run.
	ErrNoGit = errors.New("git cannot be run")
)

// gitTimeout bounds one git command.
const gitTimeout = time.Minute

// maxOutput bounds what is kept of a git command's output.
const maxOutput = 64 << 10

// MaxNameBytes bounds a worktree name.
const MaxNameBytes = 64

// ValidName checks a worktree name: ASCII letters, digits, '.', '_' and
// '-', not starting with '.' or '-', without "..", not ending in ".lock"
// or '.', at most MaxNameBytes — a directory name and, after BranchPrefix,
// a branch name (git check-ref-format) with nothing to escape.
func ValidName(name string) error {
	bad := func(why string) error { return fmt.Errorf("%q: %w: %s", name, ErrBadName, why) }
	switch {
	case name == "":
		return bad("empty")
	case len(name) > MaxNameBytes:
		return bad(fmt.Sprintf("over %d bytes", MaxNameBytes))
	case name[0] == '.' || name[0] == '-':
		return bad("it starts with '.' or '-'")
	case strings.Contains(name, ".."):
		return bad(`it holds ".."`)
	case strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, "."):
		return bad(`it ends in ".lock" or "."`)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return bad("only letters, digits, '.', '_' and '-' are taken")
		}
	}
	return nil
}

// DefaultName is the worktree name for a session: its name made into a
// valid one (other characters become '-'), or, without a name or when
// nothing is left of it, "s-" and 8 random hex digits.
func DefaultName(session string) string {
	var b strings.Builder
	for _, c := range session {
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	name := b.String()
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", ".")
	}
	name = strings.TrimSuffix(strings.Trim(name, ".-"), ".lock")
	name = strings.TrimRight(name, ".-")
	if len(name) > MaxNameBytes {
		name = strings.TrimRight(name[:MaxNameBytes], ".-")
	}
	if ValidName(name) == nil {
		return name
	}
	var id [4]byte
	_, _ = rand.Read(id[:])
	return "s-" + hex.EncodeToString(id[:])
}

// Worktree is a worktree Create made.
type Worktree struct {
	Path   string // its directory
	Branch string // its branch, BranchPrefix + name
	Base   string // the commit it starts from (HEAD where acphost ran)
	Repo   string // the repository's main worktree
	// Dir is where the session runs: the directory acphost ran in, at
	// the same place in the new worktree (Path when it has no such place).
	Dir string
}

// Create makes worktree name of the repository that holds directory from:
// on a new branch BranchPrefix+name at from's HEAD, in Place's directory.
// It refuses a directory that is in no repository (ErrNotRepo), a name
// ValidName refuses (ErrBadName) and a directory or branch that exists
// (ErrExists).
func Create(ctx context.Context, from, name string) (Worktree, error) {
	if err := ValidName(name); err != nil {
		return Worktree{}, err
	}
	top, err := git(ctx, from, "rev-parse", "--show-toplevel")
	if err != nil {
		return Worktree{}, fmt.Errorf("%s: %w (--worktree makes a git worktree of the repository you run acphost in): %w", from, ErrNotRepo, err)
	}
	repo, err := mainWorktree(ctx, top)
	if err != nil {
		return Worktree{}, err
	}
	base, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return Worktree{}, fmt.Errorf("%s has no commit to branch from: commit first", top)
	}
	branch := BranchPrefix + name
	if _, err := git(ctx, top, "check-ref-format", "--branch", branch); err != nil {
		return Worktree{}, fmt.Errorf("%q: %w: git refuses the branch %s", name, ErrBadName, branch)
	}
	if _, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err == nil {
		return Worktree{}, fmt.Errorf("branch %s %w in %s: pick another name (--worktree=OTHER), or delete the branch", branch, ErrExists, repo)
	}
	dir, err := Place(ctx, repo)
	if err != nil {
		return Worktree{}, err
	}
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return Worktree{}, fmt.Errorf("%s %w: pick another name (--worktree=OTHER)", path, ErrExists)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Worktree{}, err
	}
	if _, err := git(ctx, top, "worktree", "add", "--quiet", "-b", branch, path, base); err != nil {
		return Worktree{}, fmt.Errorf("git worktree add %s: %w", path, err)
	}
	w := Worktree{Path: path, Branch: branch, Base: base, Repo: repo, Dir: path}
	if rel, err := filepath.Rel(top, from); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		if fi, err := os.Stat(filepath.Join(path, rel)); err == nil && fi.IsDir() {
			w.Dir = filepath.Join(path, rel)
		}
	}
	return w, nil
}

// Repo returns the main worktree of the repository that holds directory
// from, or an error matching ErrNotRepo (ErrNoGit when git cannot run).
func Repo(ctx context.Context, from string) (string, error) {
	top, err := git(ctx, from, "rev-parse", "--show-toplevel")
	if err != nil {
		if errors.Is(err, ErrNoGit) {
			return "", err
		}
		return "", fmt.Errorf("%s: %w: %w", from, ErrNotRepo, err)
	}
	return mainWorktree(ctx, top)
}

// Place is the directory the worktrees of the repository whose main
// worktree is repo go in: the git configuration's ConfigKey (relative to
// repo), else REPO.worktrees beside it (../project.worktrees/NAME for
// ../project).
func Place(ctx context.Context, repo string) (string, error) {
	dir, err := git(ctx, repo, "config", "--get", ConfigKey)
	if err != nil || dir == "" {
		return filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees"), nil
	}
	if strings.HasPrefix(dir, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("git config %s %s: %w", ConfigKey, dir, err)
		}
		dir = filepath.Join(home, dir[2:])
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repo, dir)
	}
	return filepath.Clean(dir), nil
}

// mainWorktree is the main worktree of the repository top is a worktree
// of (the first git worktree list names).
func mainWorktree(ctx context.Context, top string) (string, error) {
	out, err := git(ctx, top, "worktree", "list", "--porcelain")
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(out, "\n")
	repo, ok := strings.CutPrefix(first, "worktree ")
	if !ok || !filepath.IsAbs(repo) {
		return "", fmt.Errorf("git worktree list in %s: unexpected output %q", top, first)
	}
	return repo, nil
}

// Removal is what Remove did.
type Removal struct {
	// Removed: the worktree's directory was removed (or was gone).
	Removed bool
	// Dirty lists (git status --porcelain) what kept a worktree with
	// changes; Removed is false then.
	Dirty []string
	// BranchDeleted: the branch had no commit beyond Base and was
	// deleted. Ahead is how many it had when it was kept.
	BranchDeleted bool
	Ahead         int
}

// Remove removes worktree path of repository repo if it is clean, then
// its branch if that has no commit beyond base; a worktree with changes
// (modified, staged or untracked files) is kept, and so is everything
// when path is not a linked worktree of repo on a branch under
// BranchPrefix. A directory that is gone is forgotten by git (worktree
// prune) and its branch treated as above.
func Remove(ctx context.Context, repo, path, branch, base string) (Removal, error) {
	var r Removal
	if !strings.HasPrefix(branch, BranchPrefix) || ValidName(strings.TrimPrefix(branch, BranchPrefix)) != nil {
		return r, fmt.Errorf("branch %q is not one acphost makes: nothing removed", branch)
	}
	if !filepath.IsAbs(path) || !filepath.IsAbs(repo) {
		return r, errors.New("the worktree's recorded paths are not absolute: nothing removed")
	}
	if !isCommitID(base) {
		return r, fmt.Errorf("the worktree's recorded base %q is not a commit id: nothing removed", base)
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		r.Removed = true
		if _, err := git(ctx, repo, "worktree", "prune"); err != nil {
			return r, err
		}
	} else {
		if err := isLinkedWorktree(ctx, repo, path); err != nil {
			return r, err
		}
		out, err := git(ctx, path, "status", "--porcelain", "--untracked-files=all")
		if err != nil {
			return r, err
		}
		if out != "" {
			r.Dirty = strings.Split(out, "\n")
			return r, nil
		}
		if _, err := git(ctx, repo, "worktree", "remove", path); err != nil {
			return r, fmt.Errorf("git worktree remove %s: %w", path, err)
		}
		r.Removed = true
	}
	if _, err := git(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+branch); err != nil {
		return r, nil // deleted already
	}
	n, err := git(ctx, repo, "rev-list", "--count", base+".."+"refs/heads/"+branch)
	if err != nil {
		return r, fmt.Errorf("branch %s: %w", branch, err)
	}
	if r.Ahead, _ = strconv.Atoi(n); r.Ahead > 0 {
		return r, nil
	}
	if _, err := git(ctx, repo, "branch", "--quiet", "-D", branch); err != nil {
		return r, fmt.Errorf("git branch -D %s: %w", branch, err)
	}
	r.BranchDeleted = true
	return r, nil
}

// isLinkedWorktree checks that path is a linked (not the main) worktree of
// repo's repository.
func isLinkedWorktree(ctx context.Context, repo, path string) error {
	top, err := git(ctx, path, "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("%s: %w: %w", path, ErrNotRepo, err)
	}
	if !sameDir(top, path) {
		return fmt.Errorf("%s is not the top of a worktree (git says %s): nothing removed", path, top)
	}
	own, err := git(ctx, path, "rev-parse", "--path-format=absolute", "--git-dir")
	if err != nil {
		return err
	}
	common, err := git(ctx, path, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	repoCommon, err := git(ctx, repo, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return err
	}
	switch {
	case sameDir(own, common):
		return fmt.Errorf("%s is a repository's main worktree, not one acphost made: nothing removed", path)
	case !sameDir(common, repoCommon):
		return fmt.Errorf("%s is a worktree of another repository than %s: nothing removed", path, repo)
	}
	return nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// git runs git -C dir args within gitTimeout, never asking at a terminal
// and ignoring a GIT_DIR or GIT_WORK_TREE in the environment, and returns
// its output trimmed; an error carries what it said on stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cleanEnv(), "GIT_TERMINAL_PROMPT=0")
	var out, errb capped
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", ErrNoGit, err)
	}
	if err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			return "", err
		}
		return "", fmt.Errorf("%s (%w)", firstLines(msg, 4), err)
	}
	return strings.TrimRight(out.String(), "\n"), nil
}

// cleanEnv is the environment without the variables that would point git
// at another repository than -C's.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_TERMINAL_PROMPT":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// firstLines is s's first n lines.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "; ")
}

// capped keeps the first maxOutput bytes written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := maxOutput - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// isCommitID reports whether s is a full commit id (SHA-1 or SHA-256 hex).
func isCommitID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
