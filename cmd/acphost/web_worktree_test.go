package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// webServer runs acphost web with args in dir and returns its URL (the
// token in its fragment) and a stop that ends it with SIGTERM and returns
// its stderr.
func webServer(t *testing.T, dir string, extra []string, args ...string) (base, token string, stop func() string) {
	t.Helper()
	needSignals(t)
	cmd := exec.Command(binPath, append([]string{"web", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env, cmd.Dir = append(env(t, nil), extra...), dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("acphost web: %v\n%s", err, stderr.String())
				}
			case <-time.After(readTimeout):
				cmd.Process.Kill()
				<-exited
				t.Errorf("acphost web did not exit on SIGTERM\n%s", stderr.String())
			}
		}
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the URL: %v\n%s", err, stop())
	}
	base, frag, ok := strings.Cut(strings.TrimSpace(line), "#token=")
	if !ok {
		t.Fatalf("printed %q", line)
	}
	token, _ = url.QueryUnescape(frag)
	return base, token, stop
}

// webCall sends a request to the page's API and returns its status and body.
func webCall(t *testing.T, base, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebWorktree: acphost web in a git repository offers worktrees; a
// session the page opens in one runs in a new git worktree on a branch of
// its own, from the same place in the repository, recorded as the
// terminal's --worktree records it (so that sessions rm removes it, clean,
// with its branch). With --fs the page offers none, and says why; outside
// a repository it offers none and says nothing.
func TestWebWorktree(t *testing.T) {
	repo, genv := gitRepo(t)
	extra, _, _ := isolated(t)
	extra = append(extra, genv...)
	sub := filepath.Join(repo, "sub")
	base, token, stop := webServer(t, sub, extra, "--permission", "allow")
	code, body := webCall(t, base, token, http.MethodPost, "api/session/new", `{"worktree":true,"name":"web1"}`)
	if code != http.StatusOK {
		t.Fatalf("a session in a worktree: %d %s", code, body)
	}
	if code, body := webCall(t, base, token, http.MethodPost, "api/session/new", `{"worktree":true,"name":"../x"}`); code != http.StatusBadGateway || !strings.Contains(body, "not a worktree name") {
		t.Errorf("a bad worktree name: %d %s", code, body)
	}
	code, body = webCall(t, base, token, http.MethodGet, "api/sessions", "")
	var list struct {
		Sessions []struct {
			Branch string `json:"branch"`
			Cwd    string `json:"cwd"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(body), &list); code != http.StatusOK || err != nil {
		t.Fatalf("api/sessions: %d %s", code, body)
	}
	wt := filepath.Join(filepath.Dir(repo), "proj.worktrees", "web1")
	if len(list.Sessions) != 1 || list.Sessions[0].Branch != "acphost/web1" || list.Sessions[0].Cwd != filepath.Join(wt, "sub") {
		t.Errorf("the page's list: %+v", list.Sessions)
	}
	if out := stop(); strings.Contains(out, "worktree") {
		t.Errorf("stderr speaks of worktrees: %s", out)
	}
	branch, err := exec.Command("git", "-C", wt, "branch", "--show-current").Output()
	if err != nil || strings.TrimSpace(string(branch)) != "acphost/web1" {
		t.Fatalf("the worktree's branch: %q, %v", branch, err)
	}
	recs := storeRecords(t, sub, extra)
	if len(recs) != 1 || recs[0].Worktree == nil || recs[0].Worktree.Path != wt || recs[0].Worktree.Branch != "acphost/web1" ||
		recs[0].Cwd != filepath.Join(wt, "sub") || recs[0].Worktree.From != sub || len(recs[0].Worktree.Base) != 40 {
		t.Fatalf("records: %+v", recs)
	}
	rm := runIn(t, sub, extra, nil, "", "sessions", "rm", "last")
	if rm.code != 0 || !strings.Contains(rm.stdout, "removed the worktree "+wt) || !strings.Contains(rm.stdout, "deleted the branch acphost/web1") {
		t.Errorf("rm: exit %d\n%s%s", rm.code, rm.stdout, rm.stderr)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("the worktree stays: %v", err)
	}

	base, token, stop = webServer(t, sub, extra, "--fs")
	if code, body := webCall(t, base, token, http.MethodPost, "api/session/new", `{"worktree":true}`); code != http.StatusBadRequest {
		t.Errorf("--fs: a worktree answered %d %s", code, body)
	}
	if out := stop(); !strings.Contains(out, "offers no worktrees with --fs") {
		t.Errorf("--fs: stderr does not say why there are no worktrees: %s", out)
	}

	plain := t.TempDir()
	base, token, stop = webServer(t, plain, extra)
	if code, body := webCall(t, base, token, http.MethodPost, "api/session/new", `{"worktree":true}`); code != http.StatusBadRequest {
		t.Errorf("outside git: a worktree answered %d %s", code, body)
	}
	if out := stop(); strings.Contains(out, "worktree") {
		t.Errorf("outside git: stderr speaks of worktrees: %s", out)
	}
}
