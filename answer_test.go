package acphost

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInflightAnsweredExactlyOnce: every way a request can be answered —
// its handler, a refusal, a cancelled turn's claim, the agent's
// $/cancel_request — racing on one request writes one answer, returns its
// share of the request budget once, and ends its turn's wait once.
func TestInflightAnsweredExactlyOnce(t *testing.T) {
	for round := range 50 {
		agentR, hostW := io.Pipe()
		hostR, agentW := io.Pipe()
		conn := wire.NewConn(hostR, hostW, wire.Options{MaxMessage: 1 << 20})
		conn.Start()
		var wg sync.WaitGroup
		q := newQueue(16, 1<<20)
		rp := &replier{conn: conn, log: slog.New(slog.DiscardHandler), wg: &wg, q: q}
		budget := newRequestBudget(4, 1<<20)
		require.NoError(t, budget.acquire(10))

		lines := make(chan string, 8)
		go func() {
			sc := bufio.NewScanner(agentR)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()

		in := rp.newInflight(json.RawMessage(`7`), budget, 10).cancellable(context.Background())
		tu := &turn{}
		in.askedIn(tu)
		var start sync.WaitGroup
		start.Add(1)
		var racers sync.WaitGroup
		claimed := make(chan bool, 2)
		for i := range 5 {
			racers.Go(func() {
				start.Wait()
				switch i {
				case 0:
					in.answer(map[string]string{"by": "handler"}, nil)
				case 1:
					in.goRefuse(acp.CodeInvalidParams, "refused")
				case 2:
					if in.claim(nil) {
						claimed <- true
						in.reply(map[string]string{"by": "claim"}, nil)
					}
				case 3:
					conn.CancelRequest(json.RawMessage(`{"requestId":7}`))
				case 4:
					in.goAnswer(struct{}{}, nil)
				}
			})
		}
		start.Done()
		racers.Wait()
		wg.Wait()
		assert.Error(t, in.ctx.Err(), "round %d: the request's ctx ends with its answer", round)
		assert.Equal(t, int32(0), tu.asking.Load(), "round %d: the turn's wait ended once", round)
		assert.Equal(t, 0, budget.n, "round %d: the share was returned", round)
		assert.Equal(t, 0, budget.bytes, "round %d: the share's bytes were returned", round)
		in.finish() // a second return is a no-op
		assert.Equal(t, 0, budget.n)

		conn.Halt()
		_ = agentW.Close()
		_ = hostW.Close()
		_ = agentR.Close()
		var answers []string
		for l := range lines {
			answers = append(answers, l)
		}
		require.Len(t, answers, 1, "round %d: one answer on the wire: %q", round, answers)
		assert.Contains(t, answers[0], `"id":7`)
		conn.Close(ErrClosed)
		<-conn.Done()
	}
}
