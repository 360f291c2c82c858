package browsertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/chromedp/chromedp"
)

// TestWorktreeCheckbox: where the server offers worktrees, the sessions
// panel has a checkbox and a name; ticking it and opening a new session
// opens it in the worktree the hook made (the agent's session/new names
// its directory), and the header shows the branch. A server that offers
// none shows no checkbox.
func TestWorktreeCheckbox(t *testing.T) {
	b := browser(t)
	base := t.TempDir()
	hooks := &web.WorktreeHooks{Make: func(ctx context.Context, name string) (web.Worktree, error) {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return web.Worktree{}, err
		}
		return web.Worktree{Dir: dir, Path: dir, Branch: "acphost/" + name}, nil
	}}
	script := fakeagent.Script{AgentCapabilities: json.RawMessage(`{"loadSession":true}`)}
	r := newRig(t, script, func(c *web.Config) { c.Sessions, c.Worktree = &memStore{}, hooks })
	tab := r.tab(b)
	r.click(tab, "#sessionsbtn")
	r.poll(tab, `!document.getElementById("wtform").hidden && document.getElementById("wtname").disabled`)
	if eval[bool](r, tab, `!document.getElementById("worktree").hidden`) {
		t.Error("the header names a worktree for the first session")
	}
	r.click(tab, "#wtcheck")
	r.poll(tab, `!document.getElementById("wtname").disabled`)
	r.do(tab, chromedp.SendKeys(chromedp.CSS("#wtname"), "feat"))
	r.click(tab, "#newsession")
	r.poll(tab, `document.getElementById("worktree").textContent === "worktree acphost/feat"`)
	dir, _ := json.Marshal(filepath.Join(base, "feat"))
	r.received(`"cwd":` + string(dir))
	r.poll(tab, `document.querySelector("#transcript .note.session") !== null && document.querySelector("#transcript .note.session").textContent.includes("on branch acphost/feat")`)
	r.poll(tab, `!document.getElementById("wtcheck").checked && document.getElementById("wtname").value === ""`)
	r.poll(tab, `[...document.querySelectorAll("#sessionlist li")].some(li => li.textContent.includes("worktree acphost/feat"))`)
	r.screenshot(tab, "worktree.png")
	r.send(tab, "hello")
	r.turnEnded(tab, 1)

	plain := newRig(t, script, nil)
	tab = plain.tab(b)
	plain.click(tab, "#sessionsbtn")
	plain.poll(tab, `!document.getElementById("sessions").hidden`)
	if !eval[bool](plain, tab, `document.getElementById("wtform").hidden`) {
		t.Error("a server without worktrees shows the checkbox")
	}
}
