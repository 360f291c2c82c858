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
	"github.com/acphost/acphost/internal/testutil"
)

// TestExecCloseEndsAnAgentThatStoppedReading: Close must end an
// exec'd agent that stopped reading its stdin with input queued. The
// relay inside blocks writing to the fifo and never sees the EOF that
// starts its ladder; Stop only kills the local engine client, which the
// engine does not pass on to the exec'd process.
func TestExecCloseEndsAnAgentThatStoppedReading(t *testing.T) {
	t.Parallel()
	engine := podman(t)
	tr := &container.Transport{Engine: engine, Container: devbox(t, engine)}
	m := fake(t, tr, fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}, fakeagent.Say(fakeagent.Text("wedged"))}},
	}})
	c, err := acphost.Start(context.Background(), acphost.ACPOptions{Transport: tr, Dir: "/", CloseGrace: 100 * time.Millisecond})
	require.NoError(t, err)
	_, err = c.Generate(acphost.Request{Prompt: "wedge"})
	require.NoError(t, err)
	// (In a goroutine: a write to a Link cannot be abandoned by its ctx,
	// see TestCancelledWriteToALinkEnds.)
	go c.Generate(acphost.Request{Prompt: strings.Repeat("x", 4<<20)})
	time.Sleep(2 * time.Second)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung")
	}
	testutil.NoneLeft(t, m, 20*time.Second)
}
