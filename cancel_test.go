package acphost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askTurn is a turn that announces a tool call, asks permission for it and
// then reports the answer.
func askTurn(onCancel string) fakeagent.Turn {
	return fakeagent.Turn{OnCancel: onCancel, Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("t1", "rm -rf build", "execute")),
		fakeagent.Ask(fakeagent.PermissionParams("t1", "rm -rf build", "execute", fakeagent.StdOptions...)),
		fakeagent.Say(fakeagent.Text("answer={{answer}}")),
	}}
}

// humanWaits is an OnPermission that reports each ask and then waits for
// its ctx, as a human who never clicks would.
func humanWaits(asked chan<- *acp.PermissionRequest, ended chan<- error) func(context.Context, *acp.PermissionRequest) (string, error) {
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		asked <- req
		<-ctx.Done()
		ended <- ctx.Err()
		return "allow", nil // late: must be dropped
	}
}

type turnResult struct {
	resp Response
	err  error
}

func goGenerate(c *ACPClient, ctx context.Context, prompt string) <-chan turnResult {
	ch := make(chan turnResult, 1)
	go func() {
		resp, err := c.GenerateCtx(ctx, Request{Prompt: prompt})
		ch <- turnResult{resp, err}
	}()
	return ch
}

func TestCancelWhilePermissionOpen(t *testing.T) {
	for _, onCancel := range []string{"answer", "await_permission", "error", "end_turn", "cancel_request"} {
		t.Run(onCancel, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				asked, ended := make(chan *acp.PermissionRequest, 1), make(chan error, 1)
				rec := &recorder{}
				script := fakeagent.Script{Turns: []fakeagent.Turn{askTurn(onCancel), {Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("warm"))}}}}
				c, fa := connectFake(t, script, ACPOptions{OnPermission: humanWaits(asked, ended), OnUpdate: rec.onUpdate})
				ctx, cancel := context.WithCancel(context.Background())
				res := goGenerate(c, ctx, "clean")
				<-asked
				cancel()
				r := <-res
				require.ErrorIs(t, r.err, context.Canceled)
				assert.Equal(t, acp.StopCancelled, r.resp.StopReason)
				assert.ErrorIs(t, <-ended, context.Canceled, "the hook's ctx ends with the turn")
				assert.NotContains(t, r.resp.Text, "answer=allow", "the hook's late answer must be dropped")

				eventually(t, "the agent to read the answer", func() bool { return len(permissionAnswers(fa.Agent)) > 0 })
				perms := permissionAnswers(fa.Agent)
				require.Len(t, perms, 1, "answered exactly once")
				assert.JSONEq(t, `{"outcome":{"outcome":"cancelled"}}`, perms[0])
				assert.Len(t, received(fa.Agent, "session/cancel"), 1)

				// The agent and session stay warm.
				resp, err := c.GenerateCtx(context.Background(), Request{Prompt: "next"})
				require.NoError(t, err)
				assert.Equal(t, "warm", resp.Text)
			})
		})
	}
}

// permissionAnswers returns the results the client sent to permission requests.
func permissionAnswers(a *fakeagent.Agent) []string {
	var out []string
	for _, m := range responses(a) {
		if strings.Contains(string(m.Result), `"outcome"`) {
			out = append(out, string(m.Result))
		}
	}
	return out
}

func TestCancelDeliversFailedToolUpdates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan *acp.PermissionRequest, 1), make(chan error, 1)
		var events []StreamEvent
		c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{askTurn("answer")}}, ACPOptions{OnPermission: humanWaits(asked, ended)})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-asked; cancel() }()
		resp, err := c.GenerateStream(ctx, Request{Prompt: "x"}, func(ev StreamEvent) { events = append(events, ev) })
		require.ErrorIs(t, err, context.Canceled)
		<-ended
		require.Len(t, resp.ToolCalls, 1)
		assert.Equal(t, acp.StatusFailed, resp.ToolCalls[0].Status, "updates after the cancel are still applied")
		var types []EventType
		for _, ev := range events {
			types = append(types, ev.Type)
		}
		assert.Equal(t, []EventType{EventToolCall, EventPermission, EventPermissionAnswer, EventToolUpdate, EventToolResult, EventDone}, types,
			"a cancellation the agent confirmed ends with done")
		assert.ErrorIs(t, events[len(events)-1].Err, context.Canceled)
		assert.Equal(t, acp.StopCancelled, events[len(events)-1].StopReason)
		require.Len(t, events, 6)
		require.NotNil(t, events[2].Answer)
		assert.Equal(t, ReasonCancelled, events[2].Answer.Reason)
		assert.Equal(t, acp.StatusFailed, events[4].Status)
	})
}

func TestPermissionAfterCancelIsAnsweredCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		called := make(chan struct{}, 4)
		// The agent goes on after the cancel and asks once more.
		script := fakeagent.Script{Turns: []fakeagent.Turn{{OnCancel: "continue", Steps: []fakeagent.Step{
			fakeagent.Say(fakeagent.Text("working")),
			{WaitCancel: true},
			fakeagent.Ask(fakeagent.PermissionParams("t2", "late ask", "edit", fakeagent.StdOptions...)),
		}}, {}}}
		c, fa := connectFake(t, script, ACPOptions{
			OnPermission: func(context.Context, *acp.PermissionRequest) (string, error) {
				called <- struct{}{}
				return "allow", nil
			},
			Timeouts: Timeouts{CancelGrace: time.Second},
		})
		ctx, cancel := context.WithCancel(context.Background())
		res := goGenerate(c, ctx, "x")
		_, err := fa.WaitReceived(context.Background(), "session/prompt")
		require.NoError(t, err)
		cancel()
		r := <-res
		require.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, acp.StopCancelled, r.resp.StopReason, "end_turn after our cancel still counts as cancelled")
		require.Len(t, permissionAnswers(fa.Agent), 1)
		assert.JSONEq(t, `{"outcome":{"outcome":"cancelled"}}`, permissionAnswers(fa.Agent)[0])
		assert.Empty(t, called, "the hook is not asked during a cancelled turn")
		_, err = c.Generate(Request{Prompt: "next"})
		require.NoError(t, err)
	})
}

func TestCancelIgnoredRestartsSubprocess(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "hang", OnCancel: "ignore", Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("busy")), {WaitCancel: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("fresh"))}},
	}}
	started := make(chan struct{}, 1)
	c, err := startFake(t, script, ACPOptions{
		OnUpdate: func(u acp.Update) {
			if m, ok := u.(*acp.MessageChunk); ok && m.Content.Text == "busy" {
				started <- struct{}{}
			}
		},
		Timeouts: Timeouts{CancelGrace: 300 * time.Millisecond, CloseGrace: 300 * time.Millisecond},
	})
	require.NoError(t, err)
	oldPID := c.PID()
	go func() { <-started; c.Cancel() }()
	resp, err := c.Generate(Request{Prompt: "hang"})
	require.ErrorIs(t, err, ErrCancelUnconfirmed)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, acp.StopCancelled, resp.StopReason)
	assert.Equal(t, "busy", resp.Text, "what was gathered before the cancel is returned")

	var events []StreamEvent
	_, err = c.GenerateStream(context.Background(), Request{Prompt: "y"}, func(ev StreamEvent) { events = append(events, ev) })
	require.ErrorIs(t, err, ErrContextLost, "this agent cannot load sessions: the lost context is reported, never silent")
	var re *RestartError
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, re, ErrCancelUnconfirmed)
	require.NotEmpty(t, events)
	assert.Equal(t, EventRestart, events[0].Type)
	assert.NotEqual(t, oldPID, c.PID())
	assert.False(t, groupAlive(oldPID), "the zombie agent was ended")

	resp, err = c.Generate(Request{Prompt: "y"})
	require.NoError(t, err)
	assert.Equal(t, "fresh", resp.Text)
	assert.Equal(t, re.NewSessionID, c.Session().ID())
}

func TestExplicitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan *acp.PermissionRequest, 1), make(chan error, 1)
		c, _ := connectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{askTurn("answer")}}, ACPOptions{OnPermission: humanWaits(asked, ended)})
		c.Cancel() // between turns: nothing to stop
		res := goGenerate(c, context.Background(), "x")
		<-asked
		c.Cancel()
		r := <-res
		require.ErrorIs(t, r.err, context.Canceled)
		assert.Equal(t, acp.StopCancelled, r.resp.StopReason)
		<-ended
	})
}

func TestCancelWhileTurnIsStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
		s := c.Session()
		s.hold(true) // a turn has taken the session and is still starting
		c.Cancel()
		tt := c.agent().newTurn(s, Request{}, nil)
		s.setRunning(tt)
		select {
		case <-tt.stop:
		default:
			t.Fatal("a Cancel that came while the turn was starting was lost")
		}
		s.setRunning(nil)
		s.hold(false)
		c.Cancel() // between turns: nothing is kept for the next one
		next := c.agent().newTurn(s, Request{}, nil)
		s.hold(true)
		s.setRunning(next)
		select {
		case <-next.stop:
			t.Fatal("a Cancel between turns stopped the next turn")
		default:
		}
		s.setRunning(nil)
		s.hold(false)
	})
}

func TestCancelRequestEndsHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan *acp.PermissionRequest, 1), make(chan error, 1)
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Ask(fakeagent.PermissionParams("t1", "edit a.go", "edit", fakeagent.StdOptions...)),
			{Permission: nil, CancelRequest: true},
			{WaitAll: true},
			fakeagent.Say(fakeagent.Text("after={{answer}}")),
		}}}}
		script.Turns[0].Steps[0].NoWait = true
		c, fa := connectFake(t, script, ACPOptions{OnPermission: humanWaits(asked, ended)})
		resp, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		if len(asked) == 1 { // the hook may not have started before the withdrawal
			assert.ErrorIs(t, <-ended, context.Canceled)
		}
		assert.Equal(t, "after=cancelled", resp.Text)
		assert.Len(t, permissionAnswers(fa.Agent), 1)
	})
}

func TestTurnAndIdleTimeouts(t *testing.T) {
	cases := []struct {
		name string
		opts ACPOptions
		want error
	}{
		{"turn", ACPOptions{Timeouts: Timeouts{TurnTimeout: 10 * time.Second}}, ErrTurnTimeout},
		{"idle", ACPOptions{Timeouts: Timeouts{IdleTimeout: 3 * time.Second}}, ErrIdleTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("a")), {WaitCancel: true}}}}}
				c, fa := connectFake(t, script, tc.opts)
				start := time.Now()
				resp, err := c.Generate(Request{Prompt: "x"})
				require.ErrorIs(t, err, tc.want)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, acp.StopCancelled, resp.StopReason)
				assert.Len(t, received(fa.Agent, "session/cancel"), 1, "a watchdog ends the turn by cancelling it")
				assert.Less(t, time.Since(start), 15*time.Second)
			})
		})
	}
}

func TestIdleTimeoutPausesWhilePermissionWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{askTurn("answer")}}
		slowHuman := func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
			time.Sleep(time.Minute) // a human thinking, in fake time
			return "allow", nil
		}
		c, _ := connectFake(t, script, ACPOptions{OnPermission: slowHuman, Timeouts: Timeouts{IdleTimeout: 5 * time.Second}})
		resp, err := c.Generate(Request{Prompt: "x"})
		require.NoError(t, err)
		assert.Equal(t, "answer=allow", resp.Text)
	})
}

func TestCancelBeforeTurnStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, _ := connectFake(t, fakeagent.Script{}, ACPOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.GenerateCtx(ctx, Request{Prompt: "x"})
		require.True(t, errors.Is(err, context.Canceled))
	})
}

// An agent that stops reading its stdin can block the writes a cancel
// makes; the stop button must still finish within CancelGrace, with the
// same error whether or not the agent answers the prompt meanwhile.
func TestCancelFinishesWhenTheAgentStopsReading(t *testing.T) {
	for name, last := range map[string]fakeagent.Step{
		"agent keeps working": {WaitCancel: true},
		"agent answers":       {Delay: "500ms"},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				asked := make(chan *acp.PermissionRequest, 1)
				ended := make(chan error, 1)
				script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
					{Permission: fakeagent.PermissionParams("t1", "rm -rf build", "execute", fakeagent.StdOptions...), NoWait: true},
					{StopReading: true},
					last,
				}}}}
				c, _ := connectFake(t, script, ACPOptions{OnPermission: humanWaits(asked, ended), Timeouts: Timeouts{CancelGrace: time.Second}})
				ctx, cancel := context.WithCancel(context.Background())
				go func() { <-asked; synctest.Wait(); cancel() }()
				start := time.Now()
				resp, err := c.GenerateCtx(ctx, Request{Prompt: "x"})
				// session/cancel is the last line the wedged agent takes in; the
				// permission's "cancelled" answer after it blocks until abandoned.
				require.ErrorIs(t, err, ErrAgentNotReading)
				require.ErrorIs(t, err, ErrCancelUnconfirmed)
				require.ErrorIs(t, err, context.Canceled)
				assert.Equal(t, acp.StopCancelled, resp.StopReason)
				assert.Equal(t, time.Second, time.Since(start), "within CancelGrace (the bubble's clock is exact)")
				require.ErrorIs(t, <-ended, context.Canceled)
			})
		})
	}
}

// A host→agent call (here session/new) cancelled while its write is
// blocked gives up after CancelGrace too; so does any call made after the
// writes were abandoned, without claiming a cancellation.
func TestBlockedCallWriteIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}}}}}
		c, _ := connectFake(t, script, ACPOptions{Timeouts: Timeouts{CancelGrace: time.Second}})
		_, err := c.Generate(Request{Prompt: "wedge"})
		require.NoError(t, err)
		newSession := func(d time.Duration) error {
			ctx, cancel := context.WithTimeout(context.Background(), d)
			defer cancel()
			_, err := c.NewSession(ctx, SessionOptions{})
			return err
		}
		// The first line after the wedge is still taken in (and never answered).
		go func() { _ = c.Session().SetMode(context.Background(), "taken-in") }()
		synctest.Wait()
		start := time.Now()
		err = newSession(time.Second)
		require.ErrorIs(t, err, ErrAgentNotReading)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 2*time.Second, time.Since(start), "the ctx, then CancelGrace")

		err = c.Session().SetMode(context.Background(), "any")
		require.ErrorIs(t, err, ErrAgentNotReading)
		assert.NotErrorIs(t, err, ErrCancelUnconfirmed, "this call was never cancelled")
		assert.NotContains(t, err.Error(), "%!")
	})
}

// A call abandoned by its ctx whose withdrawal ($/cancel_request) cannot
// be written, the agent having stopped reading, gives up after CancelGrace
// and says the agent is not reading.
func TestBlockedWithdrawalIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}}}}}
		c, _ := connectFake(t, script, ACPOptions{Timeouts: Timeouts{CancelGrace: time.Second}})
		_, err := c.Generate(Request{Prompt: "wedge"})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err = c.Session().SetMode(ctx, "taken-in") // its request is the last line read
		require.ErrorIs(t, err, ErrAgentNotReading)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 2*time.Second, time.Since(start), "the ctx, then CancelGrace")
	})
}

// With WriteTimeout, calls that are never cancelled do not wait forever on
// an agent that stopped reading: a blocked write ends every call pending on
// the agent, within WriteTimeout and a quarter.
func TestWriteTimeoutEndsCallsThatAreNeverCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}}}}}
		c, _ := connectFake(t, script, ACPOptions{Timeouts: Timeouts{WriteTimeout: time.Second}})
		_, err := c.Generate(Request{Prompt: "wedge"})
		require.NoError(t, err)
		start := time.Now()
		errs := make(chan error, 2)
		setMode := func() { errs <- c.Session().SetMode(context.Background(), "any") }
		go setMode() // taken in, never answered
		synctest.Wait()
		go setMode() // blocked writing
		for range 2 {
			err := <-errs
			require.ErrorIs(t, err, ErrWriteTimeout)
			require.ErrorIs(t, err, ErrAgentNotReading)
			assert.NotErrorIs(t, err, ErrCancelUnconfirmed, "nothing was cancelled")
		}
		took := time.Since(start)
		assert.True(t, took >= time.Second && took <= 1250*time.Millisecond, "took %v: the first check at or after WriteTimeout", took)
	})
}

// A host whose OnUpdate is slow stops reading the agent's output; an agent
// that reads and writes on one goroutine then stops reading its input while
// it waits to write, and a prompt to it blocks. That is the host's doing:
// WriteTimeout lifts the update queue's bound while a write is blocked, and
// the agent is not stopped.
func TestWriteTimeoutDoesNotBlameASlowOnUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		slow := func(acp.Update) { once.Do(func() { <-release }) }
		toAgentR, toAgentW := io.Pipe()
		toClientR, toClientW := io.Pipe()
		go serveSynchronousAgent(toAgentR, toClientW, 5000)
		closer := closerFunc(func() error { toAgentW.Close(); return toClientR.Close() })
		c, err := Start(context.Background(),
			ACPOptions{Transport: &StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closer}, Dir: t.TempDir(), OnUpdate: slow, Timeouts: Timeouts{WriteTimeout: time.Second}, Limits: Limits{MaxQueuedUpdates: 16}})
		require.NoError(t, err)
		defer c.Close()
		other, err := c.NewSession(context.Background(), SessionOptions{})
		require.NoError(t, err)

		flood := goGenerate(c, context.Background(), "flood")
		synctest.Wait() // the agent is blocked writing updates, not reading
		second := make(chan error, 1)
		go func() { _, err := other.Generate(Request{Prompt: "hi"}); second <- err }()
		time.Sleep(3 * time.Second) // a slow consumer; in the bubble, virtual time well past WriteTimeout
		close(release)
		res := <-flood
		require.NoError(t, res.err)
		assert.Equal(t, acp.StopEndTurn, res.resp.StopReason)
		require.NoError(t, <-second)
	})
}

// serveSynchronousAgent plays an agent that reads and writes on one
// goroutine, as simple agents do: while it writes, it reads nothing. Its
// first prompt streams n chunks before the answer; later ones answer at once.
func serveSynchronousAgent(r io.Reader, w io.Writer, n int) {
	br := bufio.NewReader(r)
	sessions, prompts := 0, 0
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				SessionID string `json:"sessionId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		result := `{}`
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":1,"agentCapabilities":{}}`
		case "session/new":
			sessions++
			result = fmt.Sprintf(`{"sessionId":"s%d"}`, sessions)
		case "session/prompt":
			if prompts++; prompts == 1 {
				for range n {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`+"\n", m.Params.SessionID)
				}
			}
			result = `{"stopReason":"end_turn"}`
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}

// An agent that dies (here of a line over MaxLineBytes) while a write to
// it is blocked ends that write at once, with the death as the error,
// whatever bounds the call has.
func TestDeathEndsABlockedWrite(t *testing.T) {
	for name, opts := range map[string]ACPOptions{
		"no bound":     {},
		"WriteTimeout": {Timeouts: Timeouts{WriteTimeout: 5 * time.Second}},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				script := fakeagent.Script{Turns: []fakeagent.Turn{{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}},
					After: []fakeagent.Step{{Delay: "2s"}, {HugeLine: 2 << 20}}}}}
				opts.Limits.MaxLineBytes = 1 << 20
				c, _ := connectFake(t, script, opts)
				_, err := c.Generate(Request{Prompt: "wedge"})
				require.NoError(t, err)
				start := time.Now()
				_, err = c.Generate(Request{Prompt: strings.Repeat("x", 4<<20)})
				require.ErrorIs(t, err, ErrLineTooLong)
				assert.Equal(t, 2*time.Second, time.Since(start), "when the agent died")
			})
		})
	}
}

// A write aborted because the agent died (here: Close) reports the death,
// even when the agent was poisoned earlier by an unconfirmed cancel.
func TestWriteAbortedByDeathReportsTheDeath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{{StopReading: true}, {Delay: "1h"}}}}}
		c, _ := connectFake(t, script, ACPOptions{Timeouts: Timeouts{CancelGrace: time.Second}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.GenerateCtx(ctx, Request{Prompt: "wedge"})
		require.ErrorIs(t, err, ErrCancelUnconfirmed)
		require.NotErrorIs(t, err, ErrAgentNotReading, "session/cancel was taken in")
		blocked := make(chan error, 1)
		go func() { blocked <- c.Session().SetMode(context.Background(), "any") }()
		synctest.Wait()
		require.NoError(t, c.Close())
		err = <-blocked
		require.ErrorIs(t, err, ErrClosed)
		assert.NotErrorIs(t, err, ErrAgentNotReading)
	})
}

// A prompt larger than the pipe written to an agent that stopped reading
// blocks; a cancel (ctx, Cancel) or a watchdog (TurnTimeout, IdleTimeout)
// abandons the write after CancelGrace, WriteTimeout without any cancel,
// and the agent is replaced before the next turn.
func TestBlockedPromptWriteIsAbandoned(t *testing.T) {
	t.Parallel()
	script := fakeagent.Script{Turns: []fakeagent.Turn{
		{Prompt: "wedge", Steps: []fakeagent.Step{{StopReading: true}}},
		{Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text("fresh"))}},
	}}
	huge := Request{Prompt: strings.Repeat("x", 4<<20)}
	// The cancels come a second in: long after the prompt's write began.
	for _, tc := range []struct {
		name  string
		opts  ACPOptions
		turn  func(c *ACPClient) error
		cause error
	}{
		{"ctx", ACPOptions{}, func(c *ACPClient) error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := c.GenerateCtx(ctx, huge)
			return err
		}, context.DeadlineExceeded},
		{"Cancel", ACPOptions{}, func(c *ACPClient) error {
			stop := time.AfterFunc(time.Second, c.Cancel)
			defer stop.Stop()
			_, err := c.Generate(huge)
			return err
		}, context.Canceled},
		{"TurnTimeout", ACPOptions{Timeouts: Timeouts{TurnTimeout: time.Second}}, func(c *ACPClient) error {
			_, err := c.Generate(huge)
			return err
		}, ErrTurnTimeout},
		{"IdleTimeout", ACPOptions{Timeouts: Timeouts{IdleTimeout: time.Second}}, func(c *ACPClient) error {
			_, err := c.Generate(huge)
			return err
		}, ErrIdleTimeout},
		{"WriteTimeout", ACPOptions{Timeouts: Timeouts{WriteTimeout: time.Second}}, func(c *ACPClient) error {
			_, err := c.Generate(huge) // never cancelled
			return err
		}, ErrWriteTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := tc.opts
			opts.Timeouts.CancelGrace, opts.Timeouts.CloseGrace = 200*time.Millisecond, 200*time.Millisecond
			c, err := startFake(t, script, opts)
			require.NoError(t, err)
			_, err = c.Generate(Request{Prompt: "wedge"})
			require.NoError(t, err)
			oldPID := c.PID()

			err = tc.turn(c)
			require.ErrorIs(t, err, ErrAgentNotReading)
			require.ErrorIs(t, err, tc.cause)

			_, err = c.Generate(Request{Prompt: "y"})
			var re *RestartError
			require.ErrorAs(t, err, &re)
			assert.ErrorIs(t, re, ErrAgentNotReading)
			assert.NotEqual(t, oldPID, c.PID())
			assert.False(t, groupAlive(oldPID), "the wedged agent was ended")
			resp, err := c.Generate(Request{Prompt: "y"})
			require.NoError(t, err)
			assert.Equal(t, "fresh", resp.Text)
		})
	}
}

// TestAbandonedCallSendsCancelRequest: a call whose ctx ends before its
// answer is withdrawn with one $/cancel_request naming its id; an answered
// call and a prompt (withdrawn by session/cancel) never get one.
func TestAbandonedCallSendsCancelRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked, ended := make(chan *acp.PermissionRequest, 1), make(chan error, 1)
		script := fakeagent.Script{NeverAnswer: []string{"session/set_mode"}, Turns: []fakeagent.Turn{askTurn("answer")}}
		c, fa := connectFake(t, script, ACPOptions{OnPermission: humanWaits(asked, ended)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- c.Session().SetMode(ctx, "plan") }()
		req, err := fa.WaitReceived(context.Background(), "session/set_mode")
		require.NoError(t, err)
		cancel()
		require.ErrorIs(t, <-done, context.Canceled)
		synctest.Wait()
		cancels := received(fa.Agent, "$/cancel_request")
		require.Len(t, cancels, 1, "one $/cancel_request for the abandoned call")
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		require.NoError(t, json.Unmarshal(cancels[0], &p))
		assert.JSONEq(t, string(req.ID), string(p.RequestID))

		tctx, tcancel := context.WithCancel(context.Background())
		res := goGenerate(c, tctx, "x")
		<-asked
		tcancel()
		require.ErrorIs(t, (<-res).err, context.Canceled)
		<-ended
		synctest.Wait()
		assert.Len(t, received(fa.Agent, "$/cancel_request"), 1, "a cancelled prompt is withdrawn by session/cancel alone")
		assert.NotEmpty(t, received(fa.Agent, "session/cancel"))
	})
}
