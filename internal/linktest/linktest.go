// Package linktest watches what a host writes into an acphost.Link, so a
// test can wait for "the agent has this much input queued" instead of
// sleeping.
package linktest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/testutil"
)

// piece is how much one inner Write is handed, so Accepted advances while a
// big Write is still blocked.
const piece = 64 << 10

// Counter counts the bytes the links it wraps have accepted.
type Counter struct {
	accepted atomic.Int64
}

// Accepted is the number of bytes the wrapped links' Writes took so far.
func (c *Counter) Accepted() int64 { return c.accepted.Load() }

// WaitAccepted polls (with a deadline, failing t) until at least n bytes
// were accepted.
func (c *Counter) WaitAccepted(t testing.TB, n int64, within time.Duration) {
	t.Helper()
	testutil.Until(t, within, func() (bool, string) {
		got := c.Accepted()
		return got >= n, fmt.Sprintf("the link accepted %d bytes, want %d", got, n)
	})
}

// Transport wraps tr so that every link it dials counts into c.
func (c *Counter) Transport(tr acphost.Transport) acphost.Transport {
	return transport{tr, c}
}

// Link wraps l so that it counts into c; a MessageLink stays one (each
// message counts its bytes and a newline, as the same message written as
// a line would).
func (c *Counter) Link(l acphost.Link) acphost.Link {
	if ml, ok := l.(acphost.MessageLink); ok {
		return messageLink{link{l, c}, ml}
	}
	return link{l, c}
}

type transport struct {
	acphost.Transport
	c *Counter
}

func (t transport) Dial(ctx context.Context) (acphost.Link, error) {
	l, err := t.Transport.Dial(ctx)
	if err != nil {
		return nil, err
	}
	return t.c.Link(l), nil
}

type link struct {
	acphost.Link
	c *Counter
}

func (l link) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := l.Link.Write(p[done:min(len(p), done+piece)])
		done += n
		l.c.accepted.Add(int64(n))
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

type messageLink struct {
	link
	ml acphost.MessageLink
}

func (l messageLink) ReadMessage() ([]byte, error) { return l.ml.ReadMessage() }

func (l messageLink) WriteMessage(msg []byte) error {
	err := l.ml.WriteMessage(msg)
	if err == nil {
		l.c.accepted.Add(int64(len(msg)) + 1)
	}
	return err
}
