//go:build unix

package container_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/container"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
)

func TestMain(m *testing.M) {
	fakeagent.Main()
	os.Exit(m.Run())
}

// podman returns the engine, or skips (fails under ACPHOST_REQUIRE_PODMAN=1).
func podman(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("podman")
	if err == nil && os.Geteuid() == 0 {
		return path
	}
	if os.Getenv("ACPHOST_REQUIRE_PODMAN") == "1" {
		t.Fatalf("podman (rootful) is required by ACPHOST_REQUIRE_PODMAN=1: %v, euid %d", err, os.Geteuid())
	}
	t.Skip("SKIPPED, NOT PASSED: needs podman as root (.ci/podman-setup.sh); CI sets ACPHOST_REQUIRE_PODMAN=1")
	return ""
}

func mark() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// devbox runs a container that shares the host's files through a
// throwaway overlay (no image needed), so the test binary — the fake
// agent — is there to exec.
func devbox(t *testing.T, engine string) string {
	t.Helper()
	name := "acphost-test-" + mark()
	out, err := exec.Command(engine, "run", "-d", "--init", "--name", name, "--rootfs", "/:O", "sleep", "infinity").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Cleanup(func() { exec.Command(engine, "rm", "-f", "-t", "0", name).Run() })
	return name
}

func fake(t *testing.T, tr *container.Transport, script fakeagent.Script) string {
	path, args, env, err := fakeagent.Command(script)
	require.NoError(t, err)
	m := "ACPHOST_TEST_MARK=" + mark()
	tr.Command, tr.Args, tr.Env = path, args, append(env, m)
	return m
}

var askAndSay = fakeagent.Script{StderrLines: []string{"agent in the box"}, Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
	fakeagent.Ask(fakeagent.PermissionParams("t1", "edit main.go", "edit")),
	fakeagent.Say(fakeagent.Text("done in the box")),
}}}}

func TestExecRunsTurnsAndCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	tr := &container.Transport{Engine: engine, Container: devbox(t, engine)}
	m := fake(t, tr, askAndSay)
	var stderr testutil.SyncBuffer
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
		return acphost.AllowOption(req), nil
	},
		Process: acphost.ProcessOptions{Stderr: &stderr},
	})
	require.NoError(t, err)
	assert.Equal(t, "exec", c.Promises().Transport)
	for range 2 {
		resp, err := c.Generate(acphost.Request{Prompt: "go"})
		require.NoError(t, err)
		assert.Equal(t, "done in the box", resp.Text)
	}
	require.NotEmpty(t, testutil.WithEnv(m))
	require.NoError(t, c.Close())
	testutil.NoneLeft(t, m, 15*time.Second)
}

// The host dies (its engine clients are SIGKILLed, as the parent-death
// signal does): the agent inside, which ignores EOF and SIGTERM and left a
// grandchild, is ended by its watchdog.
func TestExecAgentEndsWhenItsClientDies(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	name := devbox(t, engine)
	tr := &container.Transport{Engine: engine, Container: name}
	m := fake(t, tr, fakeagent.Script{IgnoreEOF: true, IgnoreSIGTERM: true, Grandchild: true})
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/"})
	require.NoError(t, err)
	defer c.Close()
	require.GreaterOrEqual(t, len(testutil.WithEnv(m)), 2)
	killed := 0
	for _, pid := range testutil.Descendants(os.Getpid()) {
		cmdline, _ := os.ReadFile("/proc/" + itoa(pid) + "/cmdline")
		if strings.Contains(string(cmdline), "exec\x00-i\x00"+name) {
			require.NoError(t, syscallKill(pid))
			killed++
		}
	}
	require.Equal(t, 2, killed, "the engine's clients of the agent and its watchdog, as the host's death ends both")
	testutil.NoneLeft(t, m, 15*time.Second)
}

func TestRunRemovesItsContainer(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	tr := &container.Transport{Engine: engine, Run: []string{"--init", "--rootfs", "/:O"}}
	m := fake(t, tr, askAndSay)
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", OnPermission: func(_ context.Context, req *acp.PermissionRequest) (string, error) {
		return acphost.AllowOption(req), nil
	}})
	require.NoError(t, err)
	resp, err := c.Generate(acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	assert.Equal(t, "done in the box", resp.Text)
	before := containers(t, engine)
	require.NotEmpty(t, before, "the transport's own container runs")
	require.NoError(t, c.Close())
	testutil.NoneLeft(t, m, 15*time.Second)
	for _, n := range containers(t, engine) {
		for _, b := range before {
			assert.NotEqual(t, b, n, "the container Run made is removed")
		}
	}
}

func TestExecIntoAMissingContainerFailsWithTheEnginesWord(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	tr := &container.Transport{Engine: engine, Container: "acphost-no-such-" + mark()}
	fake(t, tr, fakeagent.Script{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := acphost.Start(ctx, acphost.ACPOptions{Transport: tr, Dir: "/"})
	var ee *acphost.ExitError
	require.ErrorAs(t, err, &ee)
	assert.NotZero(t, ee.ExitCode)
	assert.Contains(t, strings.ToLower(ee.Stderr), "no such container")
}

func TestArgv(t *testing.T) {
	for _, tc := range []struct {
		tr   container.Transport
		want string
	}{
		{container.Transport{Container: "box", Command: "agent"}, "docker exec -i box agent"},
		{container.Transport{Engine: "/usr/bin/kubectl", EngineArgs: []string{"-n", "dev"}, ExecArgs: []string{"-c", "main"}, Container: "pod-1", Command: "agent"}, "/usr/bin/kubectl -n dev exec -i -c main pod-1 -- agent"},
		{container.Transport{Engine: "podman", Run: []string{"--network", "none", "debian:12"}, Command: "agent"}, "podman run -i --rm --name acphost-"},
	} {
		got := strings.Join(container.Argv(&tc.tr), " ")
		assert.Contains(t, got, tc.want)
		assert.True(t, strings.HasSuffix(got, " agent"), got)
	}
	for _, bad := range []container.Transport{{Command: "agent"}, {Container: "a", Run: []string{"img"}, Command: "agent"}, {Container: "a"}, {Engine: "kubectl", Run: []string{"img"}, Command: "agent"}} {
		_, err := bad.Dial(context.Background())
		assert.ErrorIs(t, err, acphost.ErrLinkLost, "%+v", bad)
	}
}

func containers(t *testing.T, engine string) []string {
	out, err := exec.Command(engine, "ps", "-a", "--format", "{{.Names}}").Output()
	require.NoError(t, err)
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, "acphost-") && !strings.HasPrefix(n, "acphost-test-") {
			names = append(names, n)
		}
	}
	return names
}
