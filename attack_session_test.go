package acphost

import (
	"context"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// An agent answers a second session/new with the id of the session already
// open on the connection ("s1", the default session). The host refuses it,
// and the default session keeps its record: its updates still reach its own
// hook, not the refused handle's. (Before, the new handle took the record
// over and the default session's updates went to it.)
func TestAttackNewSessionWithLiveIDIsRefused(t *testing.T) {
	defaultGot := make(chan acp.Update, 16)
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(u acp.Update) { defaultGot <- u }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	otherGot := make(chan acp.Update, 16)
	other, err := c.NewSession(ctx, SessionOptions{OnUpdate: func(u acp.Update) { otherGot <- u }})
	require.ErrorIs(t, err, ErrProtocol, "session/new answered with the id of a live session was accepted")
	require.Nil(t, other)

	id, done := startTurn(t, ctx, c.Session(), h, Request{Prompt: "hi"})
	h.update("s1", textChunk("for the default session"))
	h.reply([]byte(id), `{"stopReason":"end_turn"}`)
	o := <-done
	require.NoError(t, o.err)
	require.Equal(t, "for the default session", o.resp.Text)
	require.Len(t, defaultGot, 1, "the default session's hook got its update")
	require.Empty(t, otherGot, "the refused handle's hook got nothing")
}
