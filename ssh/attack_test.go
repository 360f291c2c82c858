//go:build unix

package ssh_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xssh "golang.org/x/crypto/ssh"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/linktest"
	"github.com/acphost/acphost/internal/sshtest"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/ssh"
)

// TestSSHLogsInWithTheAgentsKeys: the keys of an ssh-agent (AgentSocket, the
// documented way to use encrypted keys) must log in.
func TestSSHLogsInWithTheAgentsKeys(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, fakeagent.Script{})
	sock := filepath.Join(t.TempDir(), "agent.sock")
	agentCmd := exec.Command("ssh-agent", "-D", "-a", sock)
	require.NoError(t, agentCmd.Start())
	t.Cleanup(func() { agentCmd.Process.Kill(); agentCmd.Wait() })
	// The agent listens once its socket accepts: poll (bounded) until a
	// connection does, then add the key.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			break
		}
		require.False(t, time.Now().After(deadline), "ssh-agent never listened on %s: %v", sock, err)
		time.Sleep(20 * time.Millisecond) // polling interval, not a synchronisation
	}
	add := exec.Command("ssh-add", srv.Identity)
	add.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock)
	out, err := add.CombinedOutput()
	require.NoError(t, err, "%s", out)

	tr.IdentityFiles, tr.AgentSocket = nil, sock
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := acphost.Start(ctx, acphost.ACPOptions{Transport: tr, Dir: t.TempDir()})
	require.NoError(t, err, "a key held by the ssh-agent logs in")
	require.NoError(t, c.Close())
	testutil.NoneLeft(t, mark, 15*time.Second)
}

// queuedBeyondTheAgent is how much input the tests wait to see the link
// take before stopping it: more than the pipes hold, well under what SSH's
// window and sshd's buffers take from an agent that never reads (about
// 2 MiB), so the rest of the write is blocked when they act.
const queuedBeyondTheAgent = 512 << 10

// TestSSHCloseEndsAnAgentThatStoppedReading: an agent that stopped
// reading its stdin (the case the client restarts it for) with more
// input queued than the pipes hold must still end at Close: it never sees
// the EOF, and the test sshd refuses "signal", so only the watchdog ends
// it.
func TestSSHCloseEndsAnAgentThatStoppedReading(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}, fakeagent.Say(fakeagent.Text("wedged"))}},
	}})
	t.Cleanup(func() { // what the test proves survives
		for _, pid := range testutil.WithEnv(mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	var written linktest.Counter
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: written.Transport(tr), Dir: t.TempDir(), Timeouts: acphost.Timeouts{CloseGrace: 100 * time.Millisecond}})
	require.NoError(t, err)
	_, err = c.Generate(acphost.Request{Prompt: "wedge"})
	require.NoError(t, err)
	// A big prompt the agent never reads: SSH's window, sshd's buffer, the
	// agent's pipe take some of it, the rest blocks the host's write.
	// (In a goroutine: a write to a Link cannot be abandoned by its ctx,
	// see TestCancelledWriteToALinkEnds.)
	before := written.Accepted()
	go c.Generate(acphost.Request{Prompt: strings.Repeat("x", 8<<20)})
	written.WaitAccepted(t, before+queuedBeyondTheAgent, 20*time.Second)
	t.Logf("the link took %d bytes the agent never read", written.Accepted()-before)
	testutil.Returns(t, 30*time.Second, "Close", func() { c.Close() })
	testutil.NoneLeft(t, mark, 20*time.Second)
}

// TestSSHDialIsBoundedByItsCtx: a server that completes the handshake
// but never answers the session's channel open must not hang Dial past
// ctx (or DialTimeout).
func TestSSHDialIsBoundedByItsCtx(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	key := filepath.Join(t.TempDir(), "id")
	require.NoError(t, os.WriteFile(key, sshtest.PrivateKeyPEM(t), 0o600))
	tr := &ssh.Transport{Addr: addr, User: "x", IdentityFiles: []string{key}, InsecureIgnoreHostKey: true,
		Command: "true", DialTimeout: time.Second, KeepAlive: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := tr.Dial(ctx)
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Dial still blocked 8s after its ctx ended: the session open is not bounded")
	}
}

// silentServer accepts SSH logins with any key and then never answers a
// channel open request.
func silentServer(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := xssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	cfg := &xssh.ServerConfig{PublicKeyCallback: func(xssh.ConnMetadata, xssh.PublicKey) (*xssh.Permissions, error) { return nil, nil }}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := xssh.NewServerConn(conn, cfg)
				if err != nil {
					return
				}
				go func() {
					for r := range reqs {
						if r.WantReply {
							r.Reply(true, nil) // keepalives are answered
						}
					}
				}()
				var held []xssh.NewChannel
				for ch := range chans {
					held = append(held, ch) // never accepted nor rejected
				}
				_ = held
			}()
		}
	}()
	return l.Addr().String()
}

// TestSSHStopDuringABlockedWriteIsRaceFree: Link.Stop "may be
// called while Read and Write block". ssh.link.Stop closes the session's
// stdin (x/crypto channel.CloseWrite, which writes ch.sentEOF unlocked)
// while Write (WriteExtended, which reads it) is blocked on the window.
// Run with -race.
func TestSSHStopDuringABlockedWriteIsRaceFree(t *testing.T) {
	t.Parallel()
	srv := sshtest.Start(t)
	tr, mark := remoteFake(t, srv, fakeagent.Script{})
	tr.Command, tr.Args = "sh", []string{"-c", "exec sleep 30"} // never reads
	var written linktest.Counter
	l, err := written.Transport(tr).Dial(context.Background())
	require.NoError(t, err)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		l.Write(make([]byte, 8<<20))
	}()
	written.WaitAccepted(t, queuedBeyondTheAgent, 20*time.Second)
	l.Stop(0)
	<-wrote
	t.Cleanup(func() {
		for _, pid := range testutil.WithEnv(mark) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// TestSSHLoginDirIsBoundedByItsCtx: LoginDir, like Dial, must not hang on
// a server that never answers the session's channel open.
func TestSSHLoginDirIsBoundedByItsCtx(t *testing.T) {
	t.Parallel()
	addr := silentServer(t)
	key := filepath.Join(t.TempDir(), "id")
	require.NoError(t, os.WriteFile(key, sshtest.PrivateKeyPEM(t), 0o600))
	tr := &ssh.Transport{Addr: addr, User: "x", IdentityFiles: []string{key}, InsecureIgnoreHostKey: true, DialTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	testutil.Returns(t, 10*time.Second, "LoginDir after its ctx ended", func() {
		_, err := tr.LoginDir(ctx)
		assert.Error(t, err) // not require: this runs on Returns' goroutine
	})
}
