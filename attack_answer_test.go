package acphost

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An answer whose error member is no JSON-RPC error object resolves the
// call it names with a typed error: it is a response (its id and version
// say so), and dropping it would leave the call waiting for its ctx, as a
// prompt answered the same way never did.
func TestAttackMalformedErrorAnswerEndsTheCall(t *testing.T) {
	c, h := connectHostile(t, ACPOptions{}, "session/set_mode")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Session().SetMode(ctx, "plan") }()
	call := <-h.calls
	h.send([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + `,"error":{"code":"x","message":7}}` + "\n"))
	err := <-done
	require.ErrorIs(t, err, ErrProtocol)
	assert.NoError(t, ctx.Err(), "the call waited for its ctx")
	go func() { h.reply(<-h.prompts, `{"stopReason":"end_turn"}`) }()
	_, err = c.Generate(Request{Prompt: "still warm?"})
	assert.NoError(t, err, "a malformed answer does not end the agent")
}
