package acphost

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Close from inside a callback cannot wait for that callback; it must not
// deadlock either.
func TestCloseFromOnPermission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c *ACPClient
		closed := make(chan error, 1)
		asked := 0
		c, _ = connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{askTurn("answer"), askTurn("answer")}}, ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				if asked++; asked == 1 {
					return req.Options[0].ID, nil
				}
				// The second request runs on the broker goroutine the first
				// one left idle: it must be known as a callback too.
				closed <- c.Close() // the "quit" button of an approval dialog
				return "", ctx.Err()
			},
		})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		_, err = c.Generate(Request{Prompt: "y"})
		require.ErrorIs(t, err, ErrClosed)
		require.NoError(t, <-closed)
	})
}

func TestTurnFromOnUpdateIsReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c *ACPClient
		nested := make(chan error, 2)
		c, _ = connectFake(t, fakeagent.Script{AgentCapabilities: raw(sessionCaps)}, ACPOptions{
			OnUpdate: func(u acp.Update) {
				if len(nested) == 0 {
					_, err := c.Generate(Request{Prompt: "nested"})
					nested <- err
					_, err = c.LoadSession(context.Background(), c.Session().ID(), SessionOptions{})
					nested <- err
				}
			},
		})
		_, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.ErrorIs(t, <-nested, ErrReentrant)
		assert.ErrorIs(t, <-nested, ErrReentrant)
	})
}

// Late updates of one turn are never counted in the next.
func TestLateUpdatesNotCountedInNextTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var late []fakeagent.Step
		for range 20 {
			late = append(late, fakeagent.Say(fakeagent.Text("late")))
		}
		// A request after the late updates: once it is answered, the client has
		// read (and queued) every late update before turn B starts.
		late = append(late, fakeagent.Step{Request: &fakeagent.Call{Method: "_probe", Params: raw(`{}`)}})
		script := fakeagent.Script{Turns: []fakeagent.Turn{
			{Prompt: "A", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("A"))}, After: late},
			{Prompt: "B", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("B"))}},
		}}
		gate := make(chan struct{})
		c, fa := connectFake(t, script, ACPOptions{OnUpdate: func(u acp.Update) {
			if m, ok := u.(*acp.MessageChunk); ok && m.Content.Text == "late" {
				<-gate // a slow consumer: late updates are still queued when turn B starts
			}
		}})
		resp, err := c.Generate(Request{Prompt: "A"})
		require.NoError(t, err)
		assert.Equal(t, "A", resp.Text)
		eventually(t, "the probe's answer", func() bool { return len(responses(fa.Agent)) == 1 })
		go func() { time.Sleep(time.Second); close(gate) }()
		resp, err = c.Generate(Request{Prompt: "B"})
		require.NoError(t, err)
		assert.Equal(t, "B", resp.Text)
	})
}

func TestStreamBodyPanicDoesNotWedgeTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Demo(), ACPOptions{})
		func() {
			defer func() { _ = recover() }()
			for range c.Session().Stream(context.Background(), Request{Prompt: "x"}) {
				panic("ui bug")
			}
		}()
		resp, err := c.Generate(Request{Prompt: "again"})
		require.NoError(t, err)
		assert.Equal(t, "picked allow", resp.Text)
	})
}

func TestStreamReportsATurnThatCannotStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Demo(), ACPOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var last StreamEvent
		var lastErr error
		for ev, err := range c.Session().Stream(ctx, Request{Prompt: "x"}) {
			last, lastErr = ev, err
		}
		assert.Equal(t, EventError, last.Type)
		assert.ErrorIs(t, lastErr, context.Canceled)
	})
}

func TestCloseAbandonsARestartInProgress(t *testing.T) {
	t.Parallel()
	c, err := startFake(t, crashing(`{}`, ""), ACPOptions{Recover: &RecoverOptions{Backoff: time.Hour}})
	require.NoError(t, err)
	_, err = c.Generate(Request{Prompt: "crash"})
	require.ErrorIs(t, err, ErrAgentExited)
	res := make(chan error, 1)
	go func() {
		_, err := c.Generate(Request{Prompt: "after"}) // waits out the backoff
		res <- err
	}()
	eventually(t, "the restart to begin", func() bool { return len(c.restartSem) == 1 })
	assert.ErrorIs(t, c.Close(), ErrAgentExited, "Close reports that the agent had died")
	select {
	case err := <-res:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the turn waiting on a restart did not end with Close")
	}
	assert.Equal(t, 0, livePID(c), "no agent was started after Close")
}

// livePID returns the current agent's pid if it is still running.
func livePID(c *ACPClient) int {
	if pid := c.PID(); pid != 0 && processRunning(pid) {
		return pid
	}
	return 0
}

func TestRestartForOneSessionEndsOthersWithErrClosed(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "hang", OnCancel: "ignore", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("busy")), {WaitCancel: true}}},
		{Prompt: "slow", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("working")), {Delay: "1h"}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("ok"))}},
	}}
	started := make(chan struct{}, 4)
	c, err := startFake(t, script, ACPOptions{
		OnUpdate: func(u acp.Update) {
			if m, ok := u.(*acp.MessageChunk); ok && (m.Content.Text == "busy" || m.Content.Text == "working") {
				started <- struct{}{}
			}
		},
		Timeouts: Timeouts{CancelGrace: 200 * time.Millisecond, CloseGrace: 200 * time.Millisecond},
	})
	require.NoError(t, err)
	other, err := c.NewSession(context.Background(), SessionOptions{})
	require.NoError(t, err)
	otherRes := make(chan error, 1)
	go func() { _, err := other.Generate(Request{Prompt: "slow"}); otherRes <- err }()
	<-started
	go func() { <-started; c.Session().Cancel() }()
	_, err = c.Generate(Request{Prompt: "hang"})
	require.ErrorIs(t, err, ErrCancelUnconfirmed)
	_, err = c.Generate(Request{Prompt: "next"}) // restarts the agent
	require.ErrorIs(t, err, ErrContextLost)
	err = <-otherRes
	assert.ErrorIs(t, err, ErrClosed, "the other session's turn ends with ErrClosed")
	assert.False(t, errors.Is(err, ErrCancelUnconfirmed), "and not with the other session's reason")
}

func TestPromptAnswerWithNullErrorIsAResult(t *testing.T) {
	out := promptOutcomeOf(raw(`{"stopReason":"end_turn"}`), raw(`null`))
	require.NoError(t, out.err)
	assert.Equal(t, acp.StopEndTurn, out.res.StopReason)
	out = promptOutcomeOf(nil, raw(`{"code":-32603,"message":"boom"}`))
	assert.ErrorIs(t, out.err, &RPCError{Code: acp.CodeInternalError})
	out = promptOutcomeOf(raw(`"x"`), nil)
	assert.ErrorIs(t, out.err, ErrProtocol)
}

func TestUnencodablePromptFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
		start := time.Now()
		_, err := c.Generate(Request{Content: []acp.ContentBlock{{Type: "future", Raw: raw(`{not json`)}}})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "encoding the prompt")
		assert.Less(t, time.Since(start), time.Second, "no wait for a death that will not come")
		resp, err := c.Generate(Request{Prompt: "fine"})
		require.NoError(t, err, "the session stays usable")
		assert.Equal(t, "ok", resp.Text)
	})
}

// A turn of the same session started from OnPermission would wait for the
// running turn, which waits for that very callback: it fails at once. A
// turn of another session may run from there.
func TestTurnFromOnPermissionOfTheSameSessionIsReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ask := askTurn("answer")
		ask.Prompt = "ask"
		script := fakeagent.Script{Turns: []fakeagent.Turn{ask, {Prompt: "other", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("from the other session"))}}}}
		var c *ACPClient
		var other *Session
		var same, fromOther error
		var otherText string
		c, _ = connectFake(t, script, ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				_, same = c.Generate(Request{Prompt: "other"})
				var resp Response
				resp, fromOther = other.Generate(Request{Prompt: "other"})
				otherText = resp.Text
				return req.Options[0].ID, nil
			},
		})
		var err error
		other, err = c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		resp, err := c.Generate(Request{Prompt: "ask"})
		require.NoError(t, err)
		assert.Equal(t, "answer=allow", resp.Text)
		assert.ErrorIs(t, same, ErrReentrant)
		require.NoError(t, fromOther)
		assert.Equal(t, "from the other session", otherText)
	})
}

// Stream runs its turn on a goroutine of its own, on behalf of its caller:
// a Stream of the same session from that session's OnPermission is
// recognised all the same.
func TestStreamFromOnPermissionOfTheSameSessionIsReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ask := askTurn("answer")
		script := fakeagent.Script{Turns: []fakeagent.Turn{ask}}
		var c *ACPClient
		var streamErr error
		c, _ = connectFake(t, script, ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				for _, err := range c.Session().Stream(ctx, Request{Prompt: "again"}) {
					if err != nil {
						streamErr = err
					}
				}
				return req.Options[0].ID, nil
			},
		})
		resp, err := c.Generate(Request{Prompt: "ask"})
		require.NoError(t, err)
		assert.Equal(t, "answer=allow", resp.Text)
		assert.ErrorIs(t, streamErr, ErrReentrant)
	})
}

// A cycle through two sessions: S's OnPermission runs a turn of T, whose
// OnPermission runs a turn of S. S's turn waits for its callback, which
// waits for T's turn, which waits for its callback: the turn of S fails at
// once with ErrReentrant instead of waiting for ever, and both turns end.
func TestTurnCycleThroughTwoSessionsIsReentrant(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		askS, askT := askTurn("answer"), askTurn("answer")
		askS.Prompt, askT.Prompt = "s", "t"
		script := fakeagent.Script{Turns: []fakeagent.Turn{askS, askT, {Prompt: "back", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("never"))}}}}
		var c *ACPClient
		var other *Session
		var tText string
		var tErr, back error
		c, _ = connectFake(t, script, ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				if req.SessionID == other.ID() {
					_, back = c.Generate(Request{Prompt: "back"})
				} else {
					var resp Response
					resp, tErr = other.Generate(Request{Prompt: "t"})
					tText = resp.Text
				}
				return req.Options[0].ID, nil
			},
		})
		var err error
		other, err = c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)
		resp, err := c.Generate(Request{Prompt: "s"})
		require.NoError(t, err)
		assert.Equal(t, "answer=allow", resp.Text)
		require.NoError(t, tErr)
		assert.Equal(t, "answer=allow", tText)
		assert.ErrorIs(t, back, ErrReentrant)
	})
}
