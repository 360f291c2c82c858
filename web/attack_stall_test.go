package web_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/require"
)

// stalledTab asks for the event stream over a connection of its own and
// never reads it: a frozen background tab, a sleeping laptop, a paused
// debugger.
func (r *rig) stalledTab() net.Conn {
	r.t.Helper()
	c, err := net.Dial("tcp", r.hs.Listener.Addr().String())
	require.NoError(r.t, err)
	fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", r.hs.Listener.Addr(), r.srv.Token())
	r.t.Cleanup(func() { c.Close() })
	return c
}

// waitTurnEnd reads the event stream, raw, until the turn's end; a stream
// that ends (the tab was cut off) is opened again and resyncs from its
// replay. It keeps nothing it read.
func (r *rig) waitTurnEnd() {
	r.t.Helper()
	deadline := time.Now().Add(2 * waitFor)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.hs.URL+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+r.srv.Token())
		resp, err := r.hs.Client().Do(req)
		if err != nil {
			cancel()
			continue
		}
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		done := false
		for !done {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil {
				break
			}
			done = strings.HasPrefix(string(line), `data: {"type":"done"`)
		}
		resp.Body.Close()
		cancel()
		if done {
			return
		}
	}
	r.t.Fatal("the turn did not end")
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestAttackStalledTabsBounded (issue 31.1): tabs that stop reading while
// the agent floods. What each tab may hold is a small byte budget: past it
// the tab is cut off (its connection closed, its queue released) and comes
// back to the transcript's replay. Measured: the heap after the flood,
// with the stalled tabs still connected, stays within the transcript bound
// plus N × the budget (and a slack for the runtime), and each stalled tab's
// connection reaches its end. Not parallel: it measures the process's heap.
func TestAttackStalledTabsBounded(t *testing.T) {
	const (
		maxLog = 4 << 20
		maxTab = 1 << 20
		chunk  = 250 << 10
		chunks = 128 // 32 MiB
		tabs   = 3
		slack  = 8 << 20
	)
	steps := make([]fakeagent.Step, chunks)
	text := strings.Repeat("x", chunk)
	for i := range steps {
		steps[i] = fakeagent.Say(fakeagent.Text(text))
	}
	r := newRig(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: steps}}}, func(c *web.Config) { c.MaxLogBytes, c.MaxTabBytes = maxLog, maxTab })
	stalled := make([]net.Conn, tabs)
	for i := range stalled {
		stalled[i] = r.stalledTab()
	}
	before := heapInUse()
	r.post("/api/prompt", map[string]string{"text": "flood"}, http.StatusOK)
	r.waitTurnEnd()
	after := heapInUse()
	grown := int64(after) - int64(before)
	bound := int64(maxLog + tabs*(maxTab+256<<10) + slack)
	t.Logf("heap in use: %d MiB before the flood, %d MiB after it (%d stalled tabs; bound on the growth %d MiB)",
		before>>20, after>>20, tabs, bound>>20)
	if grown > bound {
		t.Errorf("the heap grew by %d MiB with %d stalled tabs, bound %d MiB", grown>>20, tabs, bound>>20)
	}
	for i, c := range stalled {
		c.SetReadDeadline(time.Now().Add(waitFor))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("stalled tab %d: its connection was not closed: %v", i, err)
		}
	}
}
