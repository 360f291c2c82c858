package acphost

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// wireLine is what the order tests read of a line the client wrote.
type wireLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result struct {
		Outcome struct {
			Outcome string `json:"outcome"`
		} `json:"outcome"`
		Action string `json:"action"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

// cancelledAnswer reports whether l answers a request with nothing the
// agent may act on: a permission "cancelled", an elicitation "cancel", or
// the -32800 of a request the agent withdrew itself.
func (l wireLine) cancelled() bool {
	switch {
	case l.Error != nil:
		return l.Error.Code == acp.CodeRequestCancelled
	case l.Result.Outcome.Outcome != "":
		return l.Result.Outcome.Outcome == "cancelled"
	default:
		return l.Result.Action == string(acp.ElicitCancel)
	}
}

// orderRace is one variant of the stop-button race: how the permission is
// decided and what else happens at the moment of the cancel.
type orderRace struct {
	name     string
	hook     bool // OnPermission asks a person who answers at the moment of the cancel; else the request arrives then and the default answers it at once
	stream   bool // the turn streams, and the person answers from the stream's permission event
	withdraw bool // the agent withdraws its permission request ($/cancel_request) around the cancel
	ctx      bool // the turn is stopped by its ctx instead of Cancel
}

// The stop button and a late answer: the person presses Stop while an
// approval and a form are open, and the hooks (a person, a policy, the
// default) answer allow and accept at that very moment. An agent reads
// what the client writes in order; once it has read session/cancel, no
// answer to a request of that turn may be anything but "cancelled" /
// "cancel" — ACP's rule, which an agent acting on a late allow breaks by
// running the tool after the user stopped the turn. Thousands of turns,
// the hooks' return and the cancel shuffled against each other.
func TestAttackNoAnswerButCancelledFollowsSessionCancel(t *testing.T) {
	turns := 1500
	if testing.Short() {
		turns = 200
	}
	for _, v := range []orderRace{
		{name: "hook", hook: true},
		{name: "stream", hook: true, stream: true},
		{name: "ctx", hook: true, ctx: true},
		{name: "default", hook: false},
		{name: "withdraw", hook: true, withdraw: true},
	} {
		t.Run(v.name, func(t *testing.T) {
			bad := v.run(t, turns)
			require.Zero(t, bad, "%d of %d turns: an answer other than cancelled followed session/cancel", bad, turns)
		})
	}
}

// run plays turns turns and returns how many broke the order.
func (v orderRace) run(t *testing.T, turns int) (bad int) {
	asked := make(chan chan struct{}, 4)
	person := func(ctx context.Context) {
		r := make(chan struct{})
		asked <- r
		select { // the answer comes at the moment of the cancel, not for it
		case <-r:
		case <-time.After(time.Minute):
		}
	}
	opts := ACPOptions{
		Timeouts: Timeouts{CancelGrace: time.Minute},
		Elicitation: ElicitationOptions{OnRequest: func(ctx context.Context, req *acp.ElicitationRequest) (ElicitationAnswer, error) {
			person(ctx)
			return ElicitationAnswer{Action: acp.ElicitAccept, Content: map[string]any{"a": "yes"}}, nil
		}},
	}
	if v.hook {
		opts.OnPermission = func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
			person(ctx)
			return "allow", nil
		}
	}
	lines := make(chan json.RawMessage, 1024)
	c, h, err := tryConnectHostile(t, context.Background(), opts, func(h *hostileAgent) { h.lines = lines })
	require.NoError(t, err)
	for turn := range turns {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			var err error
			if v.stream {
				_, err = c.GenerateStream(ctx, Request{Prompt: "x"}, func(StreamEvent) {})
			} else {
				_, err = c.GenerateCtx(ctx, Request{Prompt: "x"})
			}
			done <- err
		}()
		pid := <-h.prompts
		perm, elicit := 1000+2*turn, 1001+2*turn
		askPerm := func() { h.send(hostilePermission(perm, "t"+strconv.Itoa(turn))) }
		h.send(hostileElicitation(elicit))
		var release []chan struct{}
		if v.hook {
			askPerm()
			release = append(release, <-asked)
		}
		release = append(release, <-asked)
		stop := func() {
			if v.ctx {
				cancel()
			} else {
				c.Cancel()
			}
		}
		answer := func() {
			if !v.hook { // the default answers as the request arrives
				askPerm()
			}
			for _, r := range release {
				close(r)
			}
			if v.withdraw {
				h.send(hostileCancelRequest(perm))
			}
		}
		shuffle(stop, answer)
		bad += readTurnOrder(t, turn, lines, h, pid, perm, elicit)
		require.Error(t, <-done)
		cancel()
	}
	return bad
}

// shuffle runs a and b at about the same moment, in an order and with a
// spacing that vary from call to call.
func shuffle(a, b func()) {
	if rand.IntN(2) == 0 {
		a, b = b, a
	}
	spin := rand.IntN(4)
	started := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		close(started)
		for range spin {
			runtime.Gosched()
		}
		b()
		close(finished)
	}()
	<-started
	a()
	<-finished
}

// readTurnOrder reads what the client writes until session/cancel and the
// answers to perm and elicit have all been read, answering the prompt
// "cancelled" at session/cancel; it returns 1 when an answer other than
// cancelled followed session/cancel.
func readTurnOrder(t *testing.T, turn int, lines chan json.RawMessage, h *hostileAgent, pid json.RawMessage, perm, elicit int) int {
	t.Helper()
	var sawCancel bool
	var order []string
	answered := map[int]bool{}
	bad := 0
	deadline := time.After(30 * time.Second)
	for !sawCancel || len(answered) < 2 {
		var raw json.RawMessage
		select {
		case raw = <-lines:
		case <-deadline:
			t.Fatalf("turn %d: read %v; session/cancel seen: %v", turn, order, sawCancel)
		}
		var l wireLine
		require.NoError(t, json.Unmarshal(raw, &l))
		if l.Method == "session/cancel" && !sawCancel {
			sawCancel = true
			order = append(order, "session/cancel")
			h.reply(pid, `{"stopReason":"cancelled"}`)
			continue
		}
		id, err := strconv.Atoi(string(l.ID))
		if l.Method != "" || err != nil || id != perm && id != elicit {
			continue
		}
		answered[id] = true
		order = append(order, string(raw))
		if sawCancel && !l.cancelled() {
			bad = 1
		}
	}
	if bad > 0 {
		logBadOrder(t, turn, order)
	}
	return bad
}

// logBadOrder logs the first few turns that broke the order.
func logBadOrder(t *testing.T, turn int, order []string) {
	t.Helper()
	if badLogged.Add(1) <= 3 {
		t.Logf("turn %d: the agent read %v", turn, order)
	}
}

var badLogged atomic.Int32

// Stop decides: once Cancel has returned, a person's allow arriving for
// the turn's open approval — however soon — is sent "cancelled", after
// session/cancel. In a bubble, every goroutine settles before the agent
// reads, so the whole transcript is fixed.
func TestStopDecidesTheAnswerOfAnOpenApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		asked := make(chan struct{}, 1)
		opts := ACPOptions{
			OnPermission: func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
				asked <- struct{}{}
				<-release // a person who never saw the Stop: the click lands after it
				return "allow", nil
			},
			Timeouts: Timeouts{CancelGrace: time.Minute},
		}
		lines := make(chan json.RawMessage, 64)
		c, h, err := tryConnectHostile(t, context.Background(), opts, func(h *hostileAgent) { h.lines = lines })
		require.NoError(t, err)
		done := make(chan error, 1)
		go func() {
			_, err := c.Generate(Request{Prompt: "x"})
			done <- err
		}()
		pid := <-h.prompts
		h.send(hostilePermission(7, "t1"))
		<-asked
		c.Cancel()
		close(release)
		synctest.Wait()
		var order []string
		for len(lines) > 0 {
			var l wireLine
			raw := <-lines
			require.NoError(t, json.Unmarshal(raw, &l))
			switch {
			case l.Method == "session/cancel":
				order = append(order, "session/cancel")
			case l.Method == "" && string(l.ID) == "7":
				order = append(order, fmt.Sprintf("7 cancelled=%v", l.cancelled()))
			}
		}
		require.Equal(t, []string{"session/cancel", "7 cancelled=true"}, order)
		h.reply(pid, `{"stopReason":"cancelled"}`)
		require.ErrorIs(t, <-done, errCancelCalled)
		require.NoError(t, c.Close())
	})
}
