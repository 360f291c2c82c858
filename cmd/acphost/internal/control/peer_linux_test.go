//go:build linux

package control

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/cgroup"
)

// envPeerHelper makes the test binary a control client asking the
// socket it names to cancel, and printing what came of it.
const envPeerHelper = "ACPHOST_CONTROL_PEER_HELPER"

func TestMain(m *testing.M) {
	if path := os.Getenv(envPeerHelper); path != "" {
		if p, ok := strings.CutPrefix(path, "connect-only:"); ok {
			_, err := net.Dial("unix", p)
			fmt.Println("connected:", err)
			os.Exit(0) // and the connection stays in the backlog, its peer gone
		}
		rep, err := Ask(path, Request{Op: OpCancel, Session: "s"})
		fmt.Printf("reply %+v, error %v\n", rep, err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// peerServer is a control socket whose handler counts what reaches it.
func peerServer(t *testing.T) (*Server, *atomic.Int32) {
	t.Helper()
	stateDir := filepath.Join(t.TempDir(), "state")
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	s, err := Listen(stateDir, func(Request) Reply {
		handled.Add(1)
		return Reply{OK: true, Running: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, &handled
}

// askFrom runs the client process with attr and returns its output.
func askFrom(t *testing.T, s *Server, attr *syscall.SysProcAttr) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envPeerHelper+"="+s.Path, "GORACE=atexit_sleep_ms=0")
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) {
			t.Skipf("the kernel refuses this start here: %v", err)
		}
		t.Fatalf("client: %v\n%s", err, out)
	}
	return string(out)
}

// refused checks that the client was refused for the reason given and
// that nothing reached the chat.
func refused(t *testing.T, out, reason string, handled *atomic.Int32) {
	t.Helper()
	if !strings.Contains(out, "the peer is not the person's process") || !strings.Contains(out, reason) {
		t.Errorf("the client was not refused for %q:\n%s", reason, out)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("%d request(s) reached the chat", n)
	}
}

// Containment (b): a client in a PID namespace of its own — with a user
// namespace of its own where the test is not root, as acphost starts an
// agent — is refused before its request is read.
func TestPeerInAnotherPIDNamespaceIsRefused(t *testing.T) {
	s, handled := peerServer(t)
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	refused(t, askFrom(t, s, attr), "in another pid namespace", handled)
}

// Containment (b'): a user namespace alone (a private user and mount
// namespace, the PID namespace shared) is refused as well.
func TestPeerInAnotherUserNamespaceIsRefused(t *testing.T) {
	s, handled := peerServer(t)
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}}
	refused(t, askFrom(t, s, attr), "in another user namespace", handled)
}

// Containment (a): a client in an acphost host's cgroup (as acphost
// starts an agent, entered as it is cloned) is refused.
func TestPeerInAnAgentCgroupIsRefused(t *testing.T) {
	g, err := cgroup.New("agent-")
	if err != nil {
		t.Skipf("no cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = g.Remove(5 * time.Second) })
	s, handled := peerServer(t)
	attr := &syscall.SysProcAttr{}
	g.Attach(attr)
	refused(t, askFrom(t, s, attr), "in the agent group /", handled)
}

// Containment (c): a client that an acphost process started (here: this
// very executable, the chat itself), in a process group of its own and
// nothing else, is refused by its ancestry.
func TestPeerAnAcphostStartedIsRefused(t *testing.T) {
	s, handled := peerServer(t)
	refused(t, askFrom(t, s, &syscall.SysProcAttr{Setpgid: true}), fmt.Sprintf("which acphost (pid %d) started", os.Getpid()), handled)
}

// The chat's own process and its ancestry are not an agent's: a request
// from this process (and so from the person's shell that runs acphost
// cancel beside the chat) is answered.
func TestPeerOfTheChatsOwnAncestryIsServed(t *testing.T) {
	s, handled := peerServer(t)
	if rep, err := Ask(s.Path, Request{Op: OpCancel, Session: "s"}); err != nil || !rep.Running {
		t.Fatalf("%+v %v", rep, err)
	}
	if handled.Load() != 1 {
		t.Error("the request did not reach the chat")
	}
}

// foreignAgentGroup names the agent group a peer is in that the chat is
// not in itself, at any depth.
func TestForeignAgentGroup(t *testing.T) {
	for _, c := range []struct{ peer, own, want string }{
		{"/user.slice/x.scope", "/user.slice/y.scope", ""},
		{"/", "/", ""},
		{"", "", ""},
		{"/acphost-12-345/agent-1", "/", "/acphost-12-345/agent-1"},
		{"/acphost-12-345/agent-1/sub/deeper", "/user.slice", "/acphost-12-345/agent-1"},
		{"/acphost-12-345", "/", "/acphost-12-345"},
		{"/a/acphost-12-345/term-3", "/a", "/a/acphost-12-345/term-3"},
		// A chat that an agent runs trusts its own agent's tree, not a
		// sibling agent's nor one of its own agents.
		{"/acphost-1-2/agent-1/x", "/acphost-1-2/agent-1", ""},
		{"/acphost-1-2/agent-2", "/acphost-1-2/agent-1", "/acphost-1-2/agent-2"},
		{"/acphost-1-2/agent-1/acphost-3-4/agent-1", "/acphost-1-2/agent-1", "/acphost-1-2/agent-1/acphost-3-4/agent-1"},
		{"/acphost-x-2/agent-1", "/", ""},
		{"/acphost-1-2.scope/agent-1", "/", ""},
	} {
		if got := foreignAgentGroup(c.peer, c.own); got != c.want {
			t.Errorf("foreignAgentGroup(%q, %q) = %q, want %q", c.peer, c.own, got, c.want)
		}
	}
}

// A peer that has ended by the time the chat looks at it — its pid may
// name another process by then — is refused, not taken for the person.
func TestPeerGoneBeforeItsCheckIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envPeerHelper+"=connect-only:"+path, "GORACE=atexit_sleep_ms=0")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "connected: <nil>") {
		t.Fatalf("client: %v %s", err, out)
	}
	c, err := ln.Accept() // the client has exited and been reaped
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := personPeer(c); !errors.Is(err, ErrAgentPeer) {
		t.Errorf("a peer gone before its check: %v", err)
	} else {
		t.Log(err)
	}
}
