//go:build unix

package container_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/container"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/linktest"
	"github.com/acphost/acphost/internal/testutil"
)

// TestExecCloseEndsAnAgentThatStoppedReading: Close must end an
// exec'd agent that stopped reading its stdin with input queued: it never
// sees the EOF, and Stop only kills the local engine client, which the
// engine does not pass on to the exec'd process; the watchdog ends it.
func TestExecCloseEndsAnAgentThatStoppedReading(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	tr := &container.Transport{Engine: engine, Container: devbox(t, engine)}
	m := fake(t, tr, fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}, fakeagent.Say(fakeagent.Text("wedged"))}},
	}})
	var written linktest.Counter
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: written.Transport(tr), Dir: "/", Timeouts: acphost.Timeouts{CloseGrace: 100 * time.Millisecond}})
	require.NoError(t, err)
	_, err = c.Generate(acphost.Request{Prompt: "wedge"})
	require.NoError(t, err)
	// (In a goroutine: a write to a Link cannot be abandoned by its ctx,
	// see TestCancelledWriteToALinkEnds.) The pipes, the engine's client and
	// its attach socket take some of it, then the write blocks: wait until
	// they hold more than the agent's own pipe could
	// (podman 4.3 takes 384 KiB here).
	before := written.Accepted()
	go c.Generate(acphost.Request{Prompt: strings.Repeat("x", 4<<20)})
	written.WaitAccepted(t, before+192<<10, 20*time.Second)
	t.Logf("the link took %d bytes the agent never read", written.Accepted()-before)
	testutil.Returns(t, 30*time.Second, "Close", func() { c.Close() })
	testutil.NoneLeft(t, m, 20*time.Second)
}
