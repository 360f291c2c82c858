//go:build interop

package interop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/sshtest"
	"github.com/acphost/acphost/ssh"
)

// testOverSSH runs the agent through the SSH transport, against a real
// sshd on loopback: the allow, cancel and two-turn scenarios as they run
// locally, then a link cut while a permission waits.
func testOverSSH(t *testing.T, a Agent) {
	srv := sshtest.Start(t)
	t.Run("allow", func(t *testing.T) { testAllow(t, a, viaSSH(t, srv)) })
	t.Run("cancel", func(t *testing.T) { testCancel(t, a, viaSSH(t, srv)) })
	t.Run("two-turns", func(t *testing.T) { testTwoTurns(t, a, viaSSH(t, srv)) })
	t.Run("cut", func(t *testing.T) { testSSHCut(t, a, srv) })
	if a.Name == "claude" { // the agent whose default mode never asks
		t.Run("plan-plain", func(t *testing.T) { testPlanPlain(t, a, viaSSH(t, srv)) })
	}
}

// viaSSH turns a local agent's options into the same agent run through
// srv. Every process of the agent's tree carries a mark in its
// environment; once the client is closed, none may be left.
func viaSSH(t *testing.T, srv *sshtest.Server) func(*session, *acphost.ACPOptions) {
	b := make([]byte, 8)
	rand.Read(b)
	mark := "ACPHOST_INTEROP_MARK=" + hex.EncodeToString(b)
	t.Cleanup(func() { noneLeft(t, mark, 20*time.Second) }) // runs after the client's Close
	return func(s *session, o *acphost.ACPOptions) {
		o.Transport = &ssh.Transport{
			Addr: srv.Addr, User: srv.User, IdentityFiles: []string{srv.Identity}, KnownHostsFiles: []string{srv.KnownHosts},
			Command: o.Command, Args: o.Args, Env: append(o.Process.Env, mark), Dir: o.Dir,
			SharedFiles: true, // the "remote" host is this machine: fs/* means the same files
		}
		o.Command, o.Args, o.Process.Env = "", nil, nil
	}
}

func noneLeft(t *testing.T, mark string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := sshtest.WithEnv(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d processes of the agent's tree outlived Close by %v: %v", len(left), within, left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cut: the link is cut (the sshd processes of the connection killed)
// while a permission waits. The turn fails with a *LinkError at once; the
// remote agent's tree ends by itself; with Recover the next turn dials
// again and runs.
func testSSHCut(t *testing.T, a Agent, srv *sshtest.Server) {
	b := make([]byte, 8)
	rand.Read(b)
	firstMark := "ACPHOST_INTEROP_MARK=" + hex.EncodeToString(b)
	via := viaSSH(t, srv)
	s := start(t, a, func(s *session, o *acphost.ACPOptions) {
		via(s, o)
		tr := o.Transport.(*ssh.Transport)
		tr.Env = append(tr.Env, firstMark)
		o.Recover = &acphost.RecoverOptions{Backoff: 10 * time.Millisecond}
	})
	opened := make(chan struct{}, 1)
	s.setPolicy(func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		select {
		case opened <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return "", ctx.Err()
	})
	done := make(chan turnResult, 1)
	go func() { done <- s.turn(turnCtx(t), prompt("sh:out1.txt")) }()
	select {
	case <-opened:
	case r := <-done:
		t.Fatalf("turn ended before any permission request: %v %q", r.err, r.resp.StopReason)
	case <-time.After(turnTimeout):
		t.Fatalf("no permission request within %v", turnTimeout)
	}
	if n := srv.CutConnections(); n == 0 {
		t.Fatal("no sshd connection process to kill")
	}
	t0 := time.Now()
	var r turnResult
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end within 30s of the cut")
	}
	t.Logf("cut to failed turn: %v", time.Since(t0).Round(time.Microsecond))
	var le *acphost.LinkError
	if !errors.As(r.err, &le) || le.Transport != "ssh" {
		t.Fatalf("turn error %v; want a *LinkError from ssh", r.err)
	}
	// The first agent's tree, cut off from the host, ends on its own.
	noneLeft(t, firstMark, 20*time.Second)

	s.setPolicy(allowOnce)
	r2 := s.turn(turnCtx(t), prompt("sh:out2.txt"))
	if errors.Is(r2.err, acphost.ErrContextLost) {
		t.Logf("the agent could not re-attach the session (%v); the next turn runs fresh", r2.err)
		r2 = s.turn(turnCtx(t), prompt("sh:out2.txt"))
	}
	s.checkAllowed(r2, "out2.txt")
	noFile(t, filepath.Join(s.work, "out1.txt"))
}
