package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/httpserve"
	"github.com/acphost/acphost/internal/httpserve/httpservetest"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/require"
)

// TestAttackTokenlessConnectionsCapped (issue 31.3): a local process
// without the token keeps 1000 connections open after one refused request
// each. web.Serve holds at most httpserve.DefaultMaxUntrusted of them, and
// the person's page (the shell, then the token's requests) is still
// served.
func TestAttackTokenlessConnectionsCapped(t *testing.T) {
	t.Parallel()
	srv, addr := serveOnLoopback(t)
	conns := httpservetest.OpenIdle(t, addr, "/api/sessions", 1000)
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held <= httpserve.DefaultMaxUntrusted, fmt.Sprintf("the server holds %d connections without a token", held)
	})
	c := &http.Client{Timeout: 10 * time.Second}
	for _, p := range []string{"/", "/api/sessions"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+p, nil)
		req.Header.Set("Authorization", "Bearer "+srv.Token())
		resp, err := c.Do(req)
		require.NoError(t, err, "the person's %s under the load", p)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
	}
}

// serveOnLoopback serves a web.Server on the fake agent at a loopback
// address with web.Serve, ended (and checked) at the test's end.
func serveOnLoopback(t *testing.T) (*web.Server, string) {
	t.Helper()
	path, args, env, err := fakeagent.Command(fakeagent.Script{})
	require.NoError(t, err)
	srv, err := web.New(context.Background(), web.Config{Agent: acphost.ACPOptions{Command: path, Args: args, Process: acphost.ProcessOptions{Env: env}}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- web.Serve(ctx, ln, srv) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	addr := ln.Addr().String()
	return srv, addr
}
