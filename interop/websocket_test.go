//go:build interop

package interop

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/websocket"
)

// testOverWebSocket serves the agent with a websocket.Bridge on loopback
// and reaches it with websocket.Transport: the allow, cancel and two-turn
// scenarios as they run locally.
func testOverWebSocket(t *testing.T, a Agent) {
	t.Run("allow", func(t *testing.T) { testAllow(t, a, viaWebSocket(t)) })
	t.Run("cancel", func(t *testing.T) { testCancel(t, a, viaWebSocket(t)) })
	t.Run("two-turns", func(t *testing.T) { testTwoTurns(t, a, viaWebSocket(t)) })
	if a.Name == "claude" { // the agent whose default mode never asks
		t.Run("plan-plain", func(t *testing.T) { testPlanPlain(t, a, viaWebSocket(t)) })
	}
}

// viaWebSocket moves the agent's command behind a Bridge. The bridge's
// agents carry a mark in their environment; once the client is closed
// and the bridge with it, none may be left.
func viaWebSocket(t *testing.T) func(*session, *acphost.ACPOptions) {
	b := make([]byte, 8)
	rand.Read(b)
	mark := "ACPHOST_INTEROP_MARK=" + hex.EncodeToString(b)
	token := hex.EncodeToString(b) + "-token"
	t.Cleanup(func() { noneLeft(t, mark, 20*time.Second) }) // after the bridge's Close, below
	return func(s *session, o *acphost.ACPOptions) {
		bridge := &websocket.Bridge{Command: o.Command, Args: o.Args, Env: append(o.Process.Env, mark), Dir: o.Dir, Token: token, Stderr: &s.stderr}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- websocket.Serve(ctx, ln, bridge) }()
		t.Cleanup(func() {
			cancel()
			if err := <-served; err != nil {
				t.Errorf("bridge: %v", err)
			}
		})
		o.Transport = &websocket.Transport{URL: "ws://" + ln.Addr().String() + websocket.DefaultPath, Token: token}
		o.Command, o.Args, o.Process.Env = "", nil, nil
		o.FS = nil // the host's files are not the served agent's to reach (they are here, but a link cannot know)
	}
}
