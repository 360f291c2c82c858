package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/exitcode"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/cmd/acphost/internal/worktree"
)

// worktreeTimeout bounds the git commands of one rm.
const worktreeTimeout = 2 * time.Minute

// sessionsRm is "acphost sessions rm ID|NAME|last": it forgets the record
// and its transcript, and removes the session's worktree when it is clean
// (its branch too, when the branch has no commit beyond the worktree's
// base); a worktree with changes is kept, with a warning. A session with
// a worktree that an acphost process has open is not touched.
func sessionsRm(st *state.Store, key string, stdout, stderr io.Writer) int {
	cwd, _ := os.Getwd()
	r, err := st.Lookup(key, cwd)
	if err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitcode.Failed
	}
	if w := r.Worktree; w != nil {
		if live := LiveState(r); live != "" {
			fmt.Fprintf(stderr, "acphost: sessions rm: session %s is %s, in the worktree %s: end it first (nothing removed)\n",
				acp.SafeText(r.ID), live, acp.SafeText(w.Path))
			return exitcode.Failed
		}
		if code, ok := removeWorktree(*w, stdout, stderr); !ok {
			return code
		}
	}
	if r, err = st.Remove(r.ID, cwd); err != nil {
		fmt.Fprintln(stderr, "acphost:", err)
		return exitcode.Failed
	}
	what := acp.SafeText(r.ID)
	if r.Name != "" {
		what = tty.OneLine(acp.SafeText(r.Name), state.MaxNameBytes) + " (" + what + ")"
	}
	fmt.Fprintf(stdout, "forgot session %s (%s, %s)\n", what, acp.SafeText(r.AgentLabel()), acp.SafeText(r.Cwd))
	return exitcode.OK
}

// removeWorktree removes w as sessions rm does and says what it did; ok
// false when the record must stay (git failed: it still names the
// worktree).
func removeWorktree(w state.Worktree, stdout, stderr io.Writer) (code int, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), worktreeTimeout)
	defer cancel()
	path, branch := acp.SafeText(w.Path), acp.SafeText(w.Branch)
	if _, err := os.Stat(w.Repo); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "acphost: warning: the repository %s of the worktree %s is gone; nothing to remove there\n", acp.SafeText(w.Repo), path)
		return 0, true
	}
	rm, err := worktree.Remove(ctx, w.Repo, w.Path, w.Branch, w.Base)
	if err != nil {
		fmt.Fprintf(stderr, "acphost: sessions rm: the worktree %s: %s; the session is kept (remove the worktree with git worktree remove, then rm again)\n",
			path, acp.SafeText(err.Error()))
		return exitcode.Failed, false
	}
	switch {
	case len(rm.Dirty) > 0:
		fmt.Fprintf(stderr, "acphost: warning: kept the worktree %s: it has %d uncommitted change(s) (%s); commit or discard them and run git worktree remove %s\n",
			path, len(rm.Dirty), tty.OneLine(acp.SafeText(rm.Dirty[0]), 60), path)
		return 0, true
	case rm.Removed:
		fmt.Fprintf(stdout, "removed the worktree %s\n", path)
	}
	switch {
	case rm.BranchDeleted:
		fmt.Fprintf(stdout, "deleted the branch %s (no commit of its own)\n", branch)
	case rm.Ahead > 0:
		fmt.Fprintf(stdout, "kept the branch %s: %d commit(s) beyond %.12s\n", branch, rm.Ahead, acp.SafeText(w.Base))
	}
	return 0, true
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
