package hosttools_test

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/hosttools"
	"github.com/acphost/acphost/internal/httpserve"
	"github.com/acphost/acphost/internal/httpserve/httpservetest"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/require"
)

// hostAddr is the host:port of the session's endpoint as its agent was
// given it.
func hostAddr(t *testing.T, fa *fakeagent.Agent) string {
	t.Helper()
	u, err := url.Parse(lastEndpoint(t, fa).url)
	require.NoError(t, err)
	return u.Host
}

// TestAttackHostToolsIdleConnectionsClosed (issue 36): a local process
// without the token opens connections to a session's endpoint and holds
// them: some after one refused request (keep-alive), some without sending
// a byte. The endpoint closes all of them once its idle and read-header
// timeouts pass (short here), and the session's calls still work.
func TestAttackHostToolsIdleConnectionsClosed(t *testing.T) {
	defer hosttools.SetTimeouts(200*time.Millisecond, 200*time.Millisecond)()
	srv, log := newServer(nil)
	a := connect(t, fakeagent.Script{}, acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	addr := hostAddr(t, a.Agent)
	conns := httpservetest.OpenIdle(t, addr, "/mcp", 40)
	for range 20 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held == 0, fmt.Sprintf("the endpoint holds %d of %d connections without a token", held, len(conns))
	})
	ep := lastEndpoint(t, a.Agent)
	cs := sdkClient(t, ep.url, ep.auth)
	_, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, log.ran())
}

// TestAttackHostToolsTokenlessConnectionsCapped (issue 36): 300
// connections without the token, held open after one refused request:
// the endpoint holds at most httpserve.DefaultMaxUntrusted of them (the
// oldest go first), and the agent's own connection still gets its answer.
func TestAttackHostToolsTokenlessConnectionsCapped(t *testing.T) {
	srv, _ := newServer(nil)
	a := connect(t, fakeagent.Script{}, acphost.ACPOptions{HostTools: hosttools.New(srv, hosttools.Options{})})
	addr := hostAddr(t, a.Agent)
	conns := httpservetest.OpenIdle(t, addr, "/mcp", 300)
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held <= httpserve.DefaultMaxUntrusted, fmt.Sprintf("the endpoint holds %d connections without a token", held)
	})
	ep := lastEndpoint(t, a.Agent)
	cs := sdkClient(t, ep.url, ep.auth)
	_, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
}
