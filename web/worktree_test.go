package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeWorktrees is a WorktreeHooks that makes directories, not git
// worktrees, and remembers what it was asked.
type fakeWorktrees struct {
	base string
	fail error // Make's answer, when set

	mu        sync.Mutex
	names     []string
	discarded []web.Worktree
}

func (f *fakeWorktrees) hooks() *web.WorktreeHooks {
	return &web.WorktreeHooks{
		Make: func(ctx context.Context, name string) (web.Worktree, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.names = append(f.names, name)
			if f.fail != nil {
				return web.Worktree{}, f.fail
			}
			if name == "" {
				name = "w" + strconv.Itoa(len(f.names))
			}
			path := filepath.Join(f.base, name)
			if err := os.Mkdir(path, 0o755); err != nil {
				return web.Worktree{}, err
			}
			return web.Worktree{Dir: path, Path: path, Branch: "acphost/" + name}, nil
		},
		Discard: func(ctx context.Context, w web.Worktree) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.discarded = append(f.discarded, w)
			os.Remove(w.Path)
		},
	}
}

// TestWorktreeSession: with Config.Worktree the state offers worktrees; a
// new session asked for in one runs there (session/new's cwd is the
// worktree's directory), the page's state and reset name its branch, its
// record names the worktree at once, and the list shows the branch;
// continuing it from the list opens it in the worktree again. A worktree
// the server does not offer is refused, and so is one whose hook fails.
func TestWorktreeSession(t *testing.T) {
	t.Parallel()
	st := &memStore{}
	wts := &fakeWorktrees{base: t.TempDir()}
	r := newRig(t, twoTurns(`{"loadSession":true}`), func(c *web.Config) { c.Sessions, c.Worktree = st, wts.hooks() })
	tb := r.tab()
	first := tb.next("reset", ofType("reset")).sub("session").str("id")
	tb.next("worktrees offered", func(m msg) bool { return m.typ() == "state" && m["worktrees"] == true })
	r.post("/api/prompt", map[string]string{"text": "first"}, http.StatusOK)
	tb.textUntil("done")
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })

	r.post("/api/session/new", map[string]any{"worktree": true, "name": "fix"}, http.StatusOK)
	reset := tb.next("reset", ofType("reset"))
	sess := reset.sub("session")
	dir := filepath.Join(wts.base, "fix")
	assert.Equal(t, "acphost/fix", sess.str("branch"))
	assert.Equal(t, dir, sess.str("dir"))
	second := sess.str("id")
	cwd, _ := json.Marshal(dir)
	r.received(`"cwd":` + string(cwd))
	note := tb.next("note", func(m msg) bool { return m.typ() == "note" && m.str("kind") == "session" })
	assert.Contains(t, note.str("text"), "worktree "+dir+" on branch acphost/fix")
	tb.next("state", func(m msg) bool { return m.typ() == "state" && m.sub("session").str("branch") == "acphost/fix" })
	recs, _ := st.List()
	require.Len(t, recs, 2, "the worktree's session is recorded when it opens")
	assert.Equal(t, second, recs[0].ID)
	assert.Equal(t, dir, recs[0].Cwd)
	require.NotNil(t, recs[0].Worktree)
	assert.Equal(t, web.Worktree{Dir: dir, Path: dir, Branch: "acphost/fix"}, *recs[0].Worktree)

	r.post("/api/prompt", map[string]string{"text": "hi"}, http.StatusOK)
	tb.textUntil("done")
	tb.next("idle", func(m msg) bool { return m.typ() == "state" && m["running"] == false })
	recs, _ = st.List()
	require.NotNil(t, recs[0].Worktree, "a turn's record keeps the worktree")
	assert.Equal(t, dir, recs[0].Cwd)

	var list struct {
		Sessions []struct {
			ID     string `json:"id"`
			Branch string `json:"branch"`
		} `json:"sessions"`
	}
	resp := r.request(http.MethodGet, "/api/sessions", "", nil)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	require.Len(t, list.Sessions, 2)
	assert.Equal(t, "acphost/fix", list.Sessions[0].Branch)
	assert.Empty(t, list.Sessions[1].Branch)

	// Back to the first session (in the server's directory), then the
	// worktree's session again: loaded in its worktree.
	r.post("/api/session/resume", map[string]string{"id": first}, http.StatusOK)
	tb.next("state", func(m msg) bool {
		return m.typ() == "state" && m.sub("session").str("id") == first && m.sub("session").str("branch") == ""
	})
	r.post("/api/session/resume", map[string]string{"id": second}, http.StatusOK)
	r.received(`"method":"session/load"`)
	for _, m := range r.agent.Received() {
		if m.Method == "session/load" {
			var p struct {
				SessionID string `json:"sessionId"`
				Cwd       string `json:"cwd"`
			}
			require.NoError(t, json.Unmarshal(m.Params, &p))
			assert.Equal(t, second, p.SessionID)
			assert.Equal(t, dir, p.Cwd, "the worktree's session is continued in its worktree")
		}
	}
	tb.next("state", func(m msg) bool { return m.typ() == "state" && m.sub("session").str("branch") == "acphost/fix" })

	// A name is the hook's to check; a failing hook opens nothing.
	wts.mu.Lock()
	wts.fail = errors.New("bad name")
	wts.mu.Unlock()
	out := r.post("/api/session/new", map[string]any{"worktree": true, "name": "../x"}, http.StatusBadGateway)
	assert.Contains(t, out, "bad name")
	assert.Equal(t, []string{"fix", "../x"}, wts.names)
}

// TestWorktreeRefused: without Config.Worktree a worktree is refused (400)
// and the state offers none; with the file service, a worktree outside its
// roots is refused and discarded, the session left as it was.
func TestWorktreeRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, twoTurns(`{}`), nil)
	tb := r.tab()
	st := tb.next("state", ofType("state"))
	assert.Nil(t, st["worktrees"])
	r.post("/api/session/new", map[string]any{"worktree": true}, http.StatusBadRequest)

	wts := &fakeWorktrees{base: t.TempDir()}
	r = newRig(t, twoTurns(`{}`), func(c *web.Config) {
		c.Worktree = wts.hooks()
		c.Agent.FS = &acphost.FSOptions{Read: true}
	})
	tb = r.tab()
	first := tb.next("reset", ofType("reset")).sub("session").str("id")
	out := r.post("/api/session/new", map[string]any{"worktree": true}, http.StatusBadGateway)
	assert.Contains(t, out, "outside the directories the host's file service serves")
	wts.mu.Lock()
	assert.Len(t, wts.discarded, 1)
	wts.mu.Unlock()
	assert.NoDirExists(t, filepath.Join(wts.base, "w1"))
	opened := 0
	for _, m := range r.agent.Received() {
		if m.Method == "session/new" {
			opened++
		}
	}
	assert.Equal(t, 1, opened, "no session was opened in the worktree")
	r.post("/api/prompt", map[string]string{"text": "hi"}, http.StatusOK)
	tb.textUntil("done")
	assert.Equal(t, first, r.srv.Client().Session().ID())
}
