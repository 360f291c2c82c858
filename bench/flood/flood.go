// Package flood is a small ACP agent for benchmarks. It uses only the
// standard library.
//
// Each session/prompt plays one turn. Config gives the defaults. The
// prompt's text can override them with space-separated key=value fields:
//
//	n=200000 size=64 perm=1 permdone=1 interval=1ms forever=1 layout=ts escape=1 stamp=1 crash=1
//
// A turn streams n agent_message_chunk updates of size bytes of text each.
// With perm=1 it first sends one session/request_permission and waits for
// the answer; with permdone=1 (the default) it then reports that tool call
// completed. With interval set it flushes each chunk and pauses between
// chunks. With forever=1 it streams until session/cancel. n=0 answers at once.
//
// layout sets the key order of each chunk line: "ts" (the default, as the
// TypeScript ACP SDK writes it: jsonrpc, method, params; sessionUpdate
// before content; type before text), "sorted" (Go's json.Marshal of maps:
// keys sorted) or "params-first" (params, method, jsonrpc; content before
// sessionUpdate). escape=1 puts a newline, a tab and a quote in every
// chunk's text, so the JSON has escapes (as most real model output does).
//
// session/cancel stops the running turn (and any turn queued behind it).
// The turn then answers stopReason "cancelled" as soon as it sees the
// cancel, between two chunks. Turns run one at a time, in the order their
// prompts arrived, on a goroutine of their own while the reader keeps
// reading.
//
// stamp=1 starts every chunk's text with the wall-clock time it was written
// (unix nanoseconds, 19 digits; size must be at least 19), for measuring
// the delay to the client's consumer; each chunk is then encoded as it is
// written (into the same line: write copies it). crash=1 calls Config.Exit (floodagent: the process exits with
// status 3) instead of answering; without Exit the prompt is answered with
// an error.
//
// The prompt's result carries timings in _meta.flood (see [Meta]).
package flood

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the turn a prompt plays when its text overrides nothing.
type Config struct {
	N        int           // chunks per turn
	Size     int           // bytes of text per chunk
	Perm     bool          // one session/request_permission per turn
	PermDone bool          // report the permission's tool call completed
	Interval time.Duration // pause between chunks (each chunk is flushed)
	Forever  bool          // stream until cancelled
	Layout   string        // key order of chunk lines: "ts", "sorted", "params-first"
	Escape   bool          // escapes in every chunk's text
	Stamp    bool          // each chunk's text starts with its write time
	Crash    bool          // exit instead of answering (see Exit)
	// Exit ends the process for crash=1; nil: crash=1 is answered with an
	// error.
	Exit func(code int)
}

// DefaultConfig is one 64-byte chunk per turn with a completed tool call
// after each permission.
func DefaultConfig() Config { return Config{N: 1, Size: 64, PermDone: true, Layout: "ts"} }

// Override applies the key=value fields of a prompt's text. Unknown or
// malformed fields are errors.
func (c Config) Override(text string) (Config, error) {
	for _, f := range strings.Fields(text) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return c, fmt.Errorf("flood: field %q is not key=value", f)
		}
		var err error
		switch k {
		case "n":
			c.N, err = strconv.Atoi(v)
		case "size":
			c.Size, err = strconv.Atoi(v)
		case "perm":
			c.Perm, err = strconv.ParseBool(v)
		case "permdone":
			c.PermDone, err = strconv.ParseBool(v)
		case "interval":
			c.Interval, err = time.ParseDuration(v)
		case "forever":
			c.Forever, err = strconv.ParseBool(v)
		case "escape":
			c.Escape, err = strconv.ParseBool(v)
		case "stamp":
			c.Stamp, err = strconv.ParseBool(v)
		case "crash":
			c.Crash, err = strconv.ParseBool(v)
		case "layout":
			switch v {
			case "ts", "sorted", "params-first":
				c.Layout = v
			default:
				err = errors.New("unknown layout")
			}
		default:
			err = errors.New("unknown key")
		}
		if err != nil {
			return c, fmt.Errorf("flood: field %q: %v", f, err)
		}
	}
	return c, nil
}

// Meta is _meta.flood of a prompt result.
type Meta struct {
	// Sent is the number of chunks the turn wrote.
	Sent int `json:"sent"`
	// PermRTTNanos is the time from writing the permission request (flushed)
	// to reading its answer.
	PermRTTNanos int64 `json:"permRttNs,omitempty"`
	// CancelRecvUnixMicro is the wall-clock time the agent read session/cancel.
	CancelRecvUnixMicro int64 `json:"cancelRecvUnixMicro,omitempty"`
	// AnswerUnixMicro is the wall-clock time just before the answer was written.
	AnswerUnixMicro int64 `json:"answerUnixMicro"`
}

// ParseMeta reads Meta from a prompt result's raw _meta object.
func ParseMeta(raw []byte) (Meta, error) {
	var m struct {
		Flood Meta `json:"flood"`
	}
	if len(raw) == 0 {
		return Meta{}, errors.New("flood: no _meta")
	}
	err := json.Unmarshal(raw, &m)
	return m.Flood, err
}

// envelope is the JSON-RPC frame the agent reads.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

type agent struct {
	cfg Config

	wmu sync.Mutex
	out *bufio.Writer

	mu       sync.Mutex
	waiting  map[string]chan envelope // our requests, by id
	turns    map[*turn]struct{}       // prompts not yet answered
	sessions int
	nextID   int64

	queue chan *turn
	done  chan struct{} // closed when the input ends
}

type turn struct {
	id      json.RawMessage
	session string
	cfg     Config
	cfgErr  error

	cancelled  atomic.Bool
	cancel     chan struct{}
	cancelOnce sync.Once
	cancelRecv atomic.Int64 // unix micros
}

func (t *turn) stop(at time.Time) {
	t.cancelOnce.Do(func() {
		t.cancelRecv.Store(at.UnixMicro())
		t.cancelled.Store(true)
		close(t.cancel)
	})
}

// Serve plays the agent over r and w until r ends. It returns nil at EOF.
func Serve(r io.Reader, w io.Writer, cfg Config) error {
	a := &agent{
		cfg:     cfg,
		out:     bufio.NewWriterSize(w, 64<<10),
		waiting: map[string]chan envelope{},
		turns:   map[*turn]struct{}{},
		queue:   make(chan *turn, 1024),
		done:    make(chan struct{}),
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for t := range a.queue {
			a.play(t)
		}
	}()
	err := a.read(r)
	close(a.done)
	close(a.queue)
	// Cancel what is left so the turn goroutine ends.
	a.mu.Lock()
	for t := range a.turns {
		t.stop(time.Now())
	}
	a.mu.Unlock()
	wg.Wait()
	return err
}

func (a *agent) read(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			a.handle(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (a *agent) handle(line []byte) {
	now := time.Now()
	var env envelope
	if json.Unmarshal(line, &env) != nil {
		return
	}
	if env.Method == "" {
		if len(env.ID) > 0 {
			a.mu.Lock()
			ch := a.waiting[string(env.ID)]
			delete(a.waiting, string(env.ID))
			a.mu.Unlock()
			if ch != nil {
				ch <- env
			}
		}
		return
	}
	switch env.Method {
	case "initialize":
		a.reply(env.ID, map[string]any{
			"protocolVersion":   1,
			"agentCapabilities": map[string]any{"loadSession": false, "promptCapabilities": map[string]any{}},
			"authMethods":       []any{},
			"agentInfo":         map[string]string{"name": "floodagent", "version": "1"},
		})
	case "session/new":
		a.mu.Lock()
		a.sessions++
		id := "flood-" + strconv.Itoa(a.sessions)
		a.mu.Unlock()
		a.reply(env.ID, map[string]string{"sessionId": id})
	case "session/prompt":
		var p struct {
			SessionID string `json:"sessionId"`
			Prompt    []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"prompt"`
		}
		_ = json.Unmarshal(env.Params, &p)
		var text strings.Builder
		for _, b := range p.Prompt {
			if b.Type == "text" {
				text.WriteString(b.Text)
				text.WriteByte(' ')
			}
		}
		t := &turn{id: env.ID, session: p.SessionID, cancel: make(chan struct{})}
		t.cfg, t.cfgErr = a.cfg.Override(text.String())
		a.mu.Lock()
		a.turns[t] = struct{}{}
		a.mu.Unlock()
		a.queue <- t
	case "session/cancel":
		var p struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(env.Params, &p)
		a.mu.Lock()
		for t := range a.turns {
			if t.session == p.SessionID {
				t.stop(now)
			}
		}
		a.mu.Unlock()
	default:
		if len(env.ID) > 0 && !bytes.Equal(env.ID, []byte("null")) {
			a.replyError(env.ID, -32601, "method not found: "+env.Method)
		}
	}
}

// write writes one line; flush pushes it (and anything buffered) out.
func (a *agent) write(line []byte, flush bool) error {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	if _, err := a.out.Write(line); err != nil {
		return err
	}
	if flush {
		return a.out.Flush()
	}
	return nil
}

func (a *agent) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.write(append(b, '\n'), true)
}

func (a *agent) reply(id json.RawMessage, result any) {
	_ = a.writeJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *agent) replyError(id json.RawMessage, code int, msg string) {
	_ = a.writeJSON(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

// chunkLine is one agent_message_chunk notification, newline included.
func chunkLine(session string, cfg Config) []byte {
	text := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"), cfg.Size/64+1)[:cfg.Size]
	if cfg.Escape && cfg.Size >= 8 {
		text[cfg.Size/4], text[cfg.Size/2], text[cfg.Size-1] = '"', '\t', '\n'
	}
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	t, sid := str(string(text)), str(session)
	var line string
	switch cfg.Layout {
	case "sorted":
		line = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + sid +
			`,"update":{"content":{"text":` + t + `,"type":"text"},"sessionUpdate":"agent_message_chunk"}}}`
	case "params-first":
		line = `{"params":{"update":{"content":{"text":` + t + `,"type":"text"},"sessionUpdate":"agent_message_chunk"},"sessionId":` + sid +
			`},"method":"session/update","jsonrpc":"2.0"}`
	default:
		line = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":` + sid +
			`,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":` + t + `}}}}`
	}
	return []byte(line + "\n")
}

// play runs one turn and answers its prompt.
func (a *agent) play(t *turn) {
	defer func() {
		a.mu.Lock()
		delete(a.turns, t)
		a.mu.Unlock()
	}()
	if t.cfgErr != nil {
		a.replyError(t.id, -32602, t.cfgErr.Error())
		return
	}
	cfg := t.cfg
	if cfg.Crash {
		if cfg.Exit != nil {
			a.wmu.Lock()
			a.out.Flush()
			cfg.Exit(3)
		}
		a.replyError(t.id, -32603, "crash=1 without Exit")
		return
	}
	var meta Meta
	if cfg.Perm && !t.cancelled.Load() {
		rtt, ok := a.askPermission(t)
		if !ok {
			return // input ended
		}
		meta.PermRTTNanos = rtt.Nanoseconds()
	}
	line := chunkLine(t.session, cfg)
	paced := cfg.Interval > 0
	var timer *time.Timer
	if paced {
		timer = time.NewTimer(cfg.Interval)
		defer timer.Stop()
	}
	stampAt := bytes.Index(line, []byte("abcdefghijklmnopqrs"))
	if cfg.Stamp && (cfg.Size < 19 || stampAt < 0) {
		a.replyError(t.id, -32602, "stamp=1 needs size>=19 and no escape")
		return
	}
	for i := 0; (cfg.Forever || i < cfg.N) && !t.cancelled.Load(); i++ {
		if cfg.Stamp {
			strconv.AppendInt(line[stampAt:stampAt], time.Now().UnixNano(), 10)
		}
		if a.write(line, paced) != nil {
			return
		}
		meta.Sent++
		if paced {
			timer.Reset(cfg.Interval)
			select {
			case <-timer.C:
			case <-t.cancel:
			case <-a.done:
				return
			}
		}
	}
	stop := "end_turn"
	if t.cancelled.Load() {
		stop = "cancelled"
		meta.CancelRecvUnixMicro = t.cancelRecv.Load()
	}
	meta.AnswerUnixMicro = time.Now().UnixMicro()
	a.reply(t.id, map[string]any{"stopReason": stop, "_meta": map[string]any{"flood": meta}})
}

// askPermission sends one session/request_permission and waits for its
// answer. It returns the round trip; ok is false if the input ended first.
func (a *agent) askPermission(t *turn) (rtt time.Duration, ok bool) {
	a.mu.Lock()
	a.nextID++
	n := a.nextID
	id := strconv.FormatInt(n, 10)
	ch := make(chan envelope, 1)
	a.waiting[id] = ch
	a.mu.Unlock()
	call := "call_" + id
	req := map[string]any{
		"jsonrpc": "2.0", "id": n, "method": "session/request_permission",
		"params": map[string]any{
			"sessionId": t.session,
			"toolCall":  map[string]any{"toolCallId": call, "title": "run ls", "kind": "execute", "status": "pending", "rawInput": map[string]string{"command": "ls"}},
			"options": []map[string]string{
				{"optionId": "allow-once", "name": "Allow", "kind": "allow_once"},
				{"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
			},
		},
	}
	start := time.Now()
	if a.writeJSON(req) != nil {
		return 0, false
	}
	select {
	case <-ch:
		rtt = time.Since(start)
	case <-a.done:
		return 0, false
	}
	if t.cfg.PermDone {
		_ = a.writeJSON(map[string]any{
			"jsonrpc": "2.0", "method": "session/update",
			"params": map[string]any{"sessionId": t.session, "update": map[string]any{
				"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "completed",
			}},
		})
	}
	return rtt, true
}
