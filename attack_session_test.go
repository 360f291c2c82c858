package acphost

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An agent answers a second session/new with the id of the session already
// open on the connection ("s1", the default session). The host must refuse
// it; instead the new handle takes over the default session's record: the
// default session's updates reach the new handle's OnUpdate, and closing
// the new handle makes the default session's own updates foreign.
func TestAttackNewSessionWithLiveIDHijacksRecord(t *testing.T) {
	defaultGot := make(chan Update, 16)
	c, _ := connectHostile(t, ACPOptions{OnUpdate: func(u Update) { defaultGot <- u }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	otherGot := make(chan Update, 16)
	other, err := c.NewSession(ctx, SessionOptions{OnUpdate: func(u Update) { otherGot <- u }})
	require.ErrorIs(t, err, ErrProtocol, "session/new answered with the id of a live session was accepted")
	require.Nil(t, other)
}

// Same attack, showing the consequence: updates of the default session go
// to the new handle's hook.
func TestAttackNewSessionWithLiveIDStealsUpdates(t *testing.T) {
	defaultGot := make(chan Update, 16)
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(u Update) { defaultGot <- u }})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	otherGot := make(chan Update, 16)
	other, err := c.NewSession(ctx, SessionOptions{OnUpdate: func(u Update) { otherGot <- u }})
	if err != nil {
		return // refused: fine
	}
	require.Equal(t, "s1", other.ID())
	id, done := startTurn(t, ctx, c.Session(), h, Request{Prompt: "hi"})
	h.update("s1", textChunk("for the default session"))
	h.reply([]byte(id), `{"stopReason":"end_turn"}`)
	o := <-done
	require.NoError(t, o.err)
	select {
	case <-defaultGot:
	case u := <-otherGot:
		t.Fatalf("the default session's update reached the other session's OnUpdate (%T)", u)
	}
}
