package websocket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	ws "github.com/coder/websocket"
)

// DefaultPingInterval is how often each side pings by default.
const DefaultPingInterval = 15 * time.Second

// liveness is what a connection's keepalive needs to know: frames
// counts what arrived (any frame proves the peer alive); busy counts the
// waits that stop pongs from being read or pings from being written in
// time — the reader handing a message to a consumer that is behind, a
// data frame being written to a peer that is behind. Backpressure is not
// a dead peer, so it pauses the judgement.
type liveness struct {
	frames atomic.Uint64
	busy   atomic.Int32
}

func (l *liveness) enter() { l.busy.Add(1) }
func (l *liveness) leave() { l.busy.Add(-1) }

// busySince reports whether a frame arrived since before, or a wait is
// under way.
func (l *liveness) busySince(before uint64) bool {
	return l.busy.Load() > 0 || l.frames.Load() != before
}

// errNoPong is the keepalive's cause for a peer that stopped answering.
var errNoPong = errors.New("websocket: no pong within the ping interval")

// keepalive pings conn every interval until ctx ends, and calls fail once
// the peer has not answered a ping within the interval while nothing was
// busy, or the connection is gone. It runs on its own goroutine.
func keepalive(ctx context.Context, conn *ws.Conn, interval time.Duration, live *liveness, fail func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if live.busy.Load() > 0 {
			continue // a ping now would wait behind the backpressure
		}
		before := live.frames.Load() // frames during the ping count as life
		pctx, cancel := context.WithTimeout(ctx, interval)
		err := conn.Ping(pctx)
		cancel()
		switch {
		case err == nil:
			continue
		case ctx.Err() != nil:
			return
		case !errors.Is(err, net.ErrClosed) && live.busySince(before):
			continue
		}
		fail(fmt.Errorf("%w (%v): %v", errNoPong, interval, err))
		return
	}
}
