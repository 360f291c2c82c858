//go:build unix

package websocket

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/httpserve/httpservetest"
	"github.com/acphost/acphost/internal/testutil"
)

// TestAttackTokenlessConnectionsCapped (issue 31.3): a local process
// without the token opens 1000 keep-alive connections, each after one
// refused request. The bridge holds at most maxUntrusted of them (the
// oldest let go first), and the person's own connection, with the token,
// is still served.
func TestAttackTokenlessConnectionsCapped(t *testing.T) {
	t.Parallel()
	const maxUntrusted = 64
	s := serveFake(t, fakeagent.Script{}, nil)
	conns := httpservetest.OpenIdle(t, s.addr, "/acp", 1000)
	testutil.Until(t, 10*time.Second, func() (bool, string) {
		held := httpservetest.Held(conns)
		return held <= maxUntrusted, fmt.Sprintf("the bridge holds %d connections without a token", held)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := (&Transport{URL: s.url(), Token: testToken}).DialLink(ctx)
	require.NoError(t, err, "the person's connection under the load")
	l.Stop(time.Second)
}
