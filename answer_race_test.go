package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"testing/synctest"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/internal/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostilePermission is a session/request_permission line for session s1.
func hostilePermission(id int, tool string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"` + tool + `","title":"rm","kind":"execute"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}` + "\n")
}

// hostileElicitation is a form elicitation/create line for session s1.
func hostileElicitation(id int) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"elicitation/create","params":{"sessionId":"s1","mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}}` + "\n")
}

func hostileCancelRequest(id int) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":` + strconv.Itoa(id) + `}}` + "\n")
}

// Permissions and elicitations arriving before, during and after a
// streaming turn's cancel, some withdrawn by $/cancel_request, each
// racing its hook: every one is answered exactly once, its share of the
// request budget comes back, every hook's ctx ends, and the stream sees
// no event once GenerateStream has returned.
func TestAttackAnswersRaceACancelledStreamingTurn(t *testing.T) {
	for round := range 20 {
		var hooks sync.WaitGroup
		var entered atomic.Int32
		hook := func(ctx context.Context, i int) {
			entered.Add(1)
			if i%3 == 0 { // a quick human
				return
			}
			<-ctx.Done()
		}
		var n atomic.Int32
		opts := ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				hooks.Add(1)
				defer hooks.Done()
				hook(ctx, int(n.Add(1)))
				return "allow", nil
			},
			Timeouts: Timeouts{CancelGrace: time.Minute},
			Elicitation: ElicitationOptions{OnRequest: func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
				hooks.Add(1)
				defer hooks.Done()
				hook(ctx, int(n.Add(1)))
				return ElicitationAnswer{Action: acp.ElicitDecline}, nil
			}},
		}
		lines := make(chan json.RawMessage, 4096)
		c, h, err := tryConnectHostile(t, context.Background(), opts, func(h *hostileAgent) { h.lines = lines })
		require.NoError(t, err)

		var returned atomic.Bool
		var late atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		emit := func(ev StreamEvent) {
			if returned.Load() {
				late.Add(1)
			}
		}
		if round%4 >= 2 {
			emit = nil // no stream: permissions are opened on the read loop (openNow)
		}
		go func() {
			_, err := c.GenerateStream(ctx, Request{Prompt: "x"}, emit)
			returned.Store(true)
			done <- err
		}()
		pid := <-h.prompts
		const each = 12
		ids := map[int]bool{}
		send := func(i int) {
			id := 100 + i
			ids[id] = true
			if i%2 == 0 {
				h.send(hostilePermission(id, fmt.Sprintf("t%d", i)))
			} else {
				h.send(hostileElicitation(id))
			}
			if i%4 == 1 {
				h.send(hostileCancelRequest(id))
			}
		}
		for i := range each {
			send(i)
		}
		if round%2 == 0 {
			cancel()
		} else {
			c.Cancel()
		}
		for i := each; i < 2*each; i++ { // while the turn is being cancelled
			send(i)
		}
		// Answer the prompt once session/cancel arrived.
		answered := map[int]int{}
		sawCancel := false
		deadline := time.After(20 * time.Second)
		for !sawCancel || len(answered) < len(ids) {
			select {
			case l := <-lines:
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				require.NoError(t, json.Unmarshal(l, &m))
				if m.Method == "session/cancel" && !sawCancel {
					sawCancel = true
					h.reply(pid, `{"stopReason":"cancelled"}`)
				}
				if m.Method == "" && m.ID != nil {
					id, _ := strconv.Atoi(string(m.ID))
					answered[id]++
				}
			case <-deadline:
				t.Fatalf("round %d: answered %d of %d, session/cancel seen: %v", round, len(answered), len(ids), sawCancel)
			}
		}
		require.ErrorIs(t, <-done, context.Canceled)
		hooksDone := make(chan struct{})
		go func() { hooks.Wait(); close(hooksDone) }()
		select {
		case <-hooksDone:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: a hook's ctx never ended", round)
		}
		a := c.agent()
		testutil.Until(t, 10*time.Second, func() (bool, string) {
			a.requests.mu.Lock()
			defer a.requests.mu.Unlock()
			return a.requests.n == 0, fmt.Sprintf("%d shares of the request budget held", a.requests.n)
		})
		// A turn after: nothing of the first leaks into it.
		go func() { h.reply(<-h.prompts, `{"stopReason":"end_turn"}`) }()
		_, err = c.GenerateStream(context.Background(), Request{Prompt: "y"}, func(StreamEvent) {})
		require.NoError(t, err)
		require.NoError(t, c.Close())
		for len(lines) > 0 {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			require.NoError(t, json.Unmarshal(<-lines, &m))
			if m.Method == "" && m.ID != nil {
				id, _ := strconv.Atoi(string(m.ID))
				answered[id]++
			}
		}
		for id := range ids {
			assert.Equal(t, 1, answered[id], "round %d: request %d answered once", round, id)
		}
		assert.Zero(t, late.Load(), "round %d: events after GenerateStream returned", round)
	}
}

// An elicitation a person takes a minute to answer keeps its turn from
// being idle; once it is answered the turn's wait has ended, and a silent
// agent is halted IdleTimeout later.
func TestIdleTimeoutPausesWhileElicitationWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
			fakeagent.Elicit(fakeagent.FormElicitation("m", colorSchema)),
			{Delay: "1h"},
		}}}}
		var answeredAt time.Time
		slowHuman := func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			time.Sleep(time.Minute) // a human thinking, in fake time
			answeredAt = time.Now()
			return ElicitationAnswer{Action: acp.ElicitDecline}, nil
		}
		c, _ := connectFake(t, script, ACPOptions{Timeouts: Timeouts{IdleTimeout: 5 * time.Second}, Elicitation: ElicitationOptions{OnRequest: slowHuman}})
		_, err := c.Generate(Request{Prompt: "x"})
		require.ErrorIs(t, err, ErrIdleTimeout)
		require.False(t, answeredAt.IsZero(), "halted while a person was asked")
		assert.Less(t, time.Since(answeredAt), 10*time.Second, "the turn's wait never ended")
	})
}

// A permission and an elicitation waiting for a person when their turn is
// cancelled are answered "cancelled" after session/cancel: an agent reading
// an answer first might go on with the turn.
func TestCancelledTurnAnswersItsAsksAfterSessionCancel(t *testing.T) {
	for round := range 10 {
		asked := make(chan struct{}, 2)
		opts := ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				asked <- struct{}{}
				<-ctx.Done()
				return "allow", nil
			},
			Timeouts: Timeouts{CancelGrace: time.Minute},
			Elicitation: ElicitationOptions{OnRequest: func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
				asked <- struct{}{}
				<-ctx.Done()
				return ElicitationAnswer{Action: acp.ElicitDecline}, nil
			}},
		}
		lines := make(chan json.RawMessage, 256)
		c, h, err := tryConnectHostile(t, context.Background(), opts, func(h *hostileAgent) { h.lines = lines })
		require.NoError(t, err)
		done := make(chan error, 1)
		var emit func(StreamEvent)
		if round%2 == 0 {
			emit = func(StreamEvent) {}
		}
		go func() {
			_, err := c.GenerateStream(context.Background(), Request{Prompt: "x"}, emit)
			done <- err
		}()
		pid := <-h.prompts
		h.send(hostilePermission(7, "t1"))
		h.send(hostileElicitation(8))
		<-asked
		<-asked
		c.Cancel()
		var order []string
		for len(order) < 3 {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			require.NoError(t, json.Unmarshal(<-lines, &m))
			switch {
			case m.Method == "session/cancel":
				order = append(order, "cancel")
				h.reply(pid, `{"stopReason":"cancelled"}`)
			case m.Method == "" && m.ID != nil:
				order = append(order, string(m.ID))
			}
		}
		assert.Equal(t, "cancel", order[0], "round %d: %v", round, order)
		require.ErrorIs(t, <-done, context.Canceled)
	}
}
