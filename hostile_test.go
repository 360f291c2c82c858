package acphost

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hostileAgent is an ACP agent written by hand for attack tests, served
// in-process over pipes: it answers initialize and session/new (session
// "s1") itself, unless told not to, and hands each session/prompt to the
// test's attack on a goroutine of its own. Everything else it reads is
// ignored. Deaf stops it reading what the client writes, for good.
type hostileAgent struct {
	t        testing.TB
	wmu      sync.Mutex
	w        *io.PipeWriter
	deaf     chan struct{}
	deafOnce sync.Once
	noAnswer map[string]bool      // methods it never answers
	session  string               // the id session/new answers; default "s1"
	prompts  chan json.RawMessage // the ids of the prompts it does not end itself (see endPrompts)
	// endPrompts: it answers every prompt end_turn itself.
	endPrompts atomic.Bool
	calls      chan hostileCall     // requests it does not answer itself
	answers    chan json.RawMessage // the client's responses to its requests
	// lines, if set (in setup), gets every line the client writes, in
	// order: notifications included.
	lines chan json.RawMessage
}

type hostileCall struct {
	ID     json.RawMessage
	Method string
}

// connectHostile connects a client to a hostile agent. The agent's own
// goroutines end when the client closes.
func connectHostile(t testing.TB, opts ACPOptions, noAnswer ...string) (*ACPClient, *hostileAgent) {
	t.Helper()
	c, h, err := tryConnectHostile(t, context.Background(), opts, func(*hostileAgent) {}, noAnswer...)
	require.NoError(t, err)
	return c, h
}

// tryConnectHostile is connectHostile with setup run before Start (to
// start an attack during the handshake).
func tryConnectHostile(t testing.TB, ctx context.Context, opts ACPOptions, setup func(*hostileAgent), noAnswer ...string) (*ACPClient, *hostileAgent, error) {
	toAgentR, toAgentW := io.Pipe()
	toClientR, toClientW := io.Pipe()
	h := &hostileAgent{t: t, w: toClientW, deaf: make(chan struct{}), noAnswer: map[string]bool{},
		session: "s1", prompts: make(chan json.RawMessage, 16), calls: make(chan hostileCall, 64), answers: make(chan json.RawMessage, 1024)}
	for _, m := range noAnswer {
		h.noAnswer[m] = true
	}
	done := make(chan struct{})
	setup(h)
	go func() {
		defer close(done)
		h.serve(toAgentR)
	}()
	closer := closerFunc(func() error {
		toAgentW.Close()
		toClientR.Close()
		toClientW.CloseWithError(io.ErrClosedPipe)
		toAgentR.CloseWithError(io.ErrClosedPipe)
		return nil
	})
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	opts.Transport = &StreamTransport{Reader: toClientR, Writer: toAgentW, Closer: closer}
	c, err := Start(ctx, opts)
	if err != nil {
		closer.Close()
		<-done
		return nil, nil, err
	}
	t.Cleanup(func() {
		c.Close()
		closer.Close()
		<-done
	})
	return c, h, nil
}

func (h *hostileAgent) serve(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	for sc.Scan() {
		select {
		case <-h.deaf:
			return
		default:
		}
		if h.lines != nil {
			h.lines <- append(json.RawMessage(nil), sc.Bytes()...)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
			continue
		}
		if m.Method == "" {
			select {
			case h.answers <- append(json.RawMessage(nil), sc.Bytes()...):
			default:
			}
			continue
		}
		switch {
		case h.noAnswer[m.Method]:
			h.calls <- hostileCall{ID: m.ID, Method: m.Method}
		case m.Method == "initialize":
			h.reply(m.ID, `{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}`)
		case m.Method == "session/new":
			h.reply(m.ID, `{"sessionId":`+strconv.Quote(h.session)+`}`)
		case m.Method == "session/prompt" && h.endPrompts.Load():
			h.reply(m.ID, `{"stopReason":"end_turn"}`)
		case m.Method == "session/prompt":
			h.prompts <- m.ID
		default:
			h.reply(m.ID, `{}`)
		}
	}
}

// stopReading makes the agent deaf: it reads nothing more, so the client's
// writes block once the pipe holds one.
func (h *hostileAgent) stopReading() { h.deafOnce.Do(func() { close(h.deaf) }) }

// send writes one line; it reports false once the client is gone.
func (h *hostileAgent) send(line []byte) bool {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, err := h.w.Write(line)
	return err == nil
}

func (h *hostileAgent) reply(id json.RawMessage, result string) bool {
	return h.send([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n"))
}

// update sends a session/update notification for session.
func (h *hostileAgent) update(session, update string) bool {
	return h.send([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + strconv.Quote(session) + `,"update":` + update + "}}\n"))
}

// textChunk is an agent_message_chunk update carrying text.
func textChunk(text string) string {
	b, _ := json.Marshal(text)
	return `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + string(b) + `}}`
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// peakHeap samples the heap while f runs and returns the highest live
// heap seen above base, in MiB.
func peakHeap(base uint64, f func()) float64 {
	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		tick := time.NewTicker(2 * time.Millisecond) // a sampling rate, not synchronisation
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				sampled <- peak
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	peak := max(<-sampled, heapInUse())
	if peak < base {
		return 0
	}
	return float64(peak-base) / (1 << 20)
}
