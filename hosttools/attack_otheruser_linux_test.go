package hosttools_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/hosttools"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nobody is the throwaway user the attack runs as.
const nobody = 65534

// clientBinary is a copy of the test binary that nobody can run.
func clientBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	dir, err := os.MkdirTemp("", "hosttools-client")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	in, err := os.Open(self)
	require.NoError(t, err)
	defer in.Close()
	path := filepath.Join(dir, "client")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, errors.Join(err, out.Close()))
	return path
}

// runClient runs the client binary against ep, as cred's user (nil: the
// test's own), and returns what it printed.
func runClient(t *testing.T, bin string, ep endpoint, cred *syscall.Credential) string {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", envCallURL + "=" + ep.url, envCallAuth + "=" + ep.auth}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the client: %s", out)
	return strings.TrimSpace(string(out))
}

// TestAttackAnotherUserWithTheToken (issue 36): another local user who
// read the endpoint's URL and token (an agent's command line shows them)
// calls a tool while a turn runs. The endpoint refuses the connection
// before reading it, and the tool does not run; the same client run as
// the host's own user is answered and the tool runs (the attack would
// work if it were let in). Needs root, to run a process as another user.
func TestAttackAnotherUserWithTheToken(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the client as another user; TestOwnerInCraftedTable covers the refusal unprivileged")
	}
	srv, log := newServer(nil)
	a := connect(t, oneTurn(fakeagent.Step{WaitCancel: true}), acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	ep := lastEndpoint(t, a.Agent)
	turn := make(chan error, 1)
	go func() {
		_, err := a.c.GenerateCtx(context.Background(), acphost.Request{Prompt: "go"})
		turn <- err
	}()
	defer func() {
		a.c.Cancel()
		<-turn
	}()
	testutil.Eventually(t, "the turn running", func() bool {
		for _, m := range a.Received() {
			if m.Method == "session/prompt" {
				return true
			}
		}
		return false
	})
	bin := clientBinary(t)

	got := runClient(t, bin, ep, &syscall.Credential{Uid: nobody, Gid: nobody, NoSetGroups: true})
	t.Logf("another user with the token: %s", got)
	assert.True(t, strings.HasPrefix(got, "refused:"), "another user with the token: %s", got)
	assert.Empty(t, log.ran(), "the tool ran for another user")

	got = runClient(t, bin, ep, nil)
	assert.Equal(t, "status 200", got, "the host's own user")
	assert.Equal(t, []string{"echo"}, log.ran())
}
