//go:build unix

package websocket

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

// An answer to the agent that the link refuses to write (over the Link's
// MaxMessageBytes: a person's long answer to a form) still ends the
// agent's request with a defined answer, an error, instead of leaving the
// agent, and the turn, waiting for one that never comes.
func TestAnAnswerOverTheLinksBoundIsAnsweredWithAnError(t *testing.T) {
	t.Parallel()
	schema := []byte(`{"type":"object","properties":{"story":{"type":"string"}},"required":["story"]}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{turn(
		fakeagent.Elicit(fakeagent.FormElicitation("tell me", schema)),
		fakeagent.Say(fakeagent.Text("went on")),
	)}}
	s := serveFake(t, script, nil)
	tr := &Transport{URL: s.url(), Token: testToken, MaxMessageBytes: 16 << 10}
	c := start(t, tr, acphost.ACPOptions{
		Elicitation: acphost.ElicitationOptions{OnRequest: func(context.Context, *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
			return acphost.ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"story": strings.Repeat("x", 64<<10)}}, nil
		}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.GenerateCtx(ctx, acphost.Request{Prompt: "ask me"})
	require.NoError(t, err, "the agent never had an answer to its elicitation")
	require.Equal(t, "went on", resp.Text)
}
