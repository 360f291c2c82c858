package clients

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/acphost/acphost/bench/flood"
	"github.com/acphost/acphost/internal/fastjson"
)

// limitClient is the floor: the least an expert can write that does the
// observable work acphost does for the same turn. bench/README.md (The
// limit) argues each piece.
//
//   - One goroutine. Turn writes the prompt and then reads the agent's
//     lines itself until the prompt's answer: no read loop, no dispatcher,
//     no hand-off, no wake-up but the pipe's.
//   - Lines come from bufio.Reader.ReadSlice and are read in place in the
//     reader's buffer (copied only when longer than it): nothing is kept
//     past the next line, so nothing is copied.
//   - JSON is read with acphost's own single-pass reader
//     (internal/fastjson, validating as encoding/json does), so that the
//     ratio measures everything but the decoder. encoding/json, even into
//     reused structs, costs 18 allocations and about 1 KB per update
//     (BenchmarkStdlibLimitLine): the limit would be slower than acphost.
//   - A session/update is decoded into a reused typed update with the
//     fields a UI shows: the session, the kind, a chunk's content type and
//     text, a tool call's id, title, kind and status. Nothing is allocated
//     for a message chunk but the text kept: the answer's text is kept, as
//     acphost keeps Response.Text, in a strings.Builder.
//   - A permission request is decoded (its tool call and options) and
//     answered from that goroutine, the answer appended by hand into a
//     reused buffer; so are the prompt and session/cancel.
type limitClient struct {
	r       *bufio.Reader
	w       io.Writer
	closer  io.Closer
	session string
	rawSess []byte // session as its JSON string
	nextID  int64
	count   counter

	wmu  sync.Mutex
	wbuf []byte // reused for every line written (under wmu)
	long []byte // reused for lines longer than the reader's buffer

	env  Envelope
	upd  limitUpdate
	perm limitPermission
	text strings.Builder // the running turn's answer text
}

// Envelope is the JSON-RPC frame the limit reads of each line; every
// member is a slice of the line, valid until the next one is read.
type Envelope struct {
	JSONRPC []byte
	ID      []byte
	Method  []byte
	Params  []byte
	Result  []byte
	Error   []byte
}

// Read reads line's envelope; ok is false for a line that is not a
// JSON-RPC 2.0 object.
func (e *Envelope) Read(line []byte) bool {
	*e = Envelope{}
	c := fastjson.Cursor{B: line}
	ok := c.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "jsonrpc":
			e.JSONRPC, ok = c.StrBytes()
		case "method":
			e.Method, ok = c.StrBytes()
		case "id":
			e.ID, ok = c.Value()
		case "params":
			e.Params, ok = c.Value()
		case "result":
			e.Result, ok = c.Value()
		case "error":
			e.Error, ok = c.Value()
		default:
			_, ok = c.Value()
		}
		return ok
	})
	return ok && c.End() && string(e.JSONRPC) == "2.0"
}

// limitUpdate is what the limit reads of a session/update: what a UI needs
// to show a message chunk or a tool call. The chunk's fields point into
// the line; the tool call's strings are copies (a UI keeps them).
type limitUpdate struct {
	SessionID []byte
	Kind      []byte // sessionUpdate
	Type      []byte // a chunk's content type
	Text      []byte // a chunk's text
	ToolCall  limitToolCall
}

type limitToolCall struct {
	ID, Title, Kind, Status string
}

func (u *limitUpdate) read(params []byte) bool {
	*u = limitUpdate{}
	c := fastjson.Cursor{B: params}
	ok := c.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "sessionId":
			u.SessionID, ok = c.StrBytes()
		case "update":
			ok = c.Object(func(key []byte) bool {
				var ok bool
				switch string(key) {
				case "sessionUpdate":
					u.Kind, ok = c.StrBytes()
				case "content":
					if fastjson.First(c.B[c.I:]) != '{' {
						_, ok = c.Value() // a tool call's content: an array
						return ok
					}
					ok = c.Object(func(key []byte) bool {
						var ok bool
						switch string(key) {
						case "type":
							u.Type, ok = c.StrBytes()
						case "text":
							u.Text, ok = c.StrBytes()
						default:
							_, ok = c.Value()
						}
						return ok
					})
				default:
					ok = u.ToolCall.member(&c, key)
				}
				return ok
			})
		default:
			_, ok = c.Value()
		}
		return ok
	})
	return ok && c.End()
}

// member reads a tool call's member, skipping any other.
func (tc *limitToolCall) member(c *fastjson.Cursor, key []byte) bool {
	var dst *string
	switch string(key) {
	case "toolCallId":
		dst = &tc.ID
	case "title":
		dst = &tc.Title
	case "kind":
		dst = &tc.Kind
	case "status":
		dst = &tc.Status
	default:
		_, ok := c.Value()
		return ok
	}
	if c.Null() {
		return true
	}
	s, ok := c.Str()
	*dst = s
	return ok
}

// limitPermission is what the limit reads of a permission request: the
// tool call a prompt shows and the options to pick from.
type limitPermission struct {
	SessionID []byte
	ToolCall  limitToolCall
	Options   []limitOption
}

type limitOption struct {
	ID, Name, Kind []byte
}

func (p *limitPermission) read(params []byte) bool {
	p.SessionID, p.ToolCall, p.Options = nil, limitToolCall{}, p.Options[:0]
	c := fastjson.Cursor{B: params}
	ok := c.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "sessionId":
			p.SessionID, ok = c.StrBytes()
		case "toolCall":
			ok = c.Object(func(key []byte) bool { return p.ToolCall.member(&c, key) })
		case "options":
			ok = c.Array(func() bool {
				var o limitOption
				ok := c.Object(func(key []byte) bool {
					var ok bool
					switch string(key) {
					case "optionId":
						o.ID, ok = c.StrBytes()
					case "name":
						o.Name, ok = c.StrBytes()
					case "kind":
						o.Kind, ok = c.StrBytes()
					default:
						_, ok = c.Value()
					}
					return ok
				})
				p.Options = append(p.Options, o)
				return ok
			})
		default:
			_, ok = c.Value()
		}
		return ok
	})
	return ok && c.End()
}

func newLimit(ctx context.Context, r io.Reader, w io.Writer, closer io.Closer, opts Options) (*limitClient, error) {
	l := &limitClient{r: bufio.NewReaderSize(r, 64<<10), w: w, closer: closer}
	l.count.spin = opts.Spin
	if _, err := l.call("initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]string{"name": "bench-limit", "version": "1"},
	}); err != nil {
		return nil, err
	}
	wd, _ := os.Getwd()
	res, err := l.call("session/new", map[string]any{"cwd": wd, "mcpServers": []any{}})
	if err != nil {
		return nil, err
	}
	var s struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &s); err != nil || s.SessionID == "" {
		return nil, fmt.Errorf("limit: session/new: %s", res)
	}
	l.session = s.SessionID
	l.rawSess = fastjson.AppendString(nil, s.SessionID)
	return l, nil
}

// write sends one line built by build into the reused buffer.
func (l *limitClient) write(build func(b []byte) []byte) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.wbuf = append(build(l.wbuf[:0]), '\n')
	_, err := l.w.Write(l.wbuf)
	return err
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// call sends a request (set-up only: json.Marshal) and reads until its
// answer, handling what comes before it. It returns a copy of the result.
func (l *limitClient) call(method string, params any) (json.RawMessage, error) {
	l.nextID++
	id := l.nextID
	b, err := json.Marshal(request{"2.0", id, method, params})
	if err != nil {
		return nil, err
	}
	if err := l.write(func(w []byte) []byte { return append(w, b...) }); err != nil {
		return nil, err
	}
	if err := l.until(id); err != nil {
		return nil, err
	}
	return bytes.Clone(l.env.Result), nil
}

// readLine returns the next line; it may point into the reader's buffer.
func (l *limitClient) readLine() ([]byte, error) {
	line, err := l.r.ReadSlice('\n')
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	l.long = append(l.long[:0], line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = l.r.ReadSlice('\n')
		l.long = append(l.long, line...)
	}
	return l.long, err
}

// until reads lines until the response to id arrives; it is then in
// l.env, valid until the next line is read.
func (l *limitClient) until(id int64) error {
	var want [20]byte
	wantID := strconv.AppendInt(want[:0], id, 10)
	env := &l.env
	for {
		line, err := l.readLine()
		if err != nil {
			return err
		}
		if !env.Read(line) {
			continue
		}
		switch method := string(env.Method); {
		case method == "session/update":
			l.update(env.Params)
		case method == "session/request_permission":
			if err := l.answerPermission(env.ID, env.Params); err != nil {
				return err
			}
		case method != "":
			if len(env.ID) > 0 && string(env.ID) != "null" {
				err := l.write(func(b []byte) []byte {
					b = append(b, `{"jsonrpc":"2.0","id":`...)
					b = append(b, env.ID...)
					return append(b, `,"error":{"code":-32601,"message":"method not found"}}`...)
				})
				if err != nil {
					return err
				}
			}
		case bytes.Equal(env.ID, wantID):
			if len(env.Error) > 0 && string(env.Error) != "null" {
				return fmt.Errorf("limit: error answer: %s", env.Error)
			}
			return nil
		}
	}
}

// update reads a session/update, keeps a message chunk's text and hands
// the update to the consumer (which counts it). A malformed update, or
// another session's, is skipped, as acphost skips it.
func (l *limitClient) update(params []byte) {
	u := &l.upd
	if !u.read(params) || string(u.SessionID) != l.session {
		return
	}
	if string(u.Kind) == "agent_message_chunk" && string(u.Type) == "text" {
		l.text.Write(u.Text)
	}
	l.count.update()
}

// answerPermission reads a permission request and answers it with the
// first allow_once option, from the reading goroutine.
func (l *limitClient) answerPermission(id, params []byte) error {
	p := &l.perm
	var option []byte
	if p.read(params) && string(p.SessionID) == l.session {
		for _, o := range p.Options {
			if string(o.Kind) == "allow_once" {
				option = o.ID
				break
			}
		}
	}
	return l.write(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = append(b, id...)
		if option == nil {
			return append(b, `,"result":{"outcome":{"outcome":"cancelled"}}}`...)
		}
		b = append(b, `,"result":{"outcome":{"outcome":"selected","optionId":`...)
		b = fastjson.AppendString(b, string(option))
		return append(b, `}}}`...)
	})
}

func (l *limitClient) Turn(ctx context.Context, prompt string) (Result, error) {
	before := l.count.n.Load()
	l.text.Reset()
	l.nextID++
	id := l.nextID
	err := l.write(func(b []byte) []byte {
		b = append(b, `{"jsonrpc":"2.0","id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `,"method":"session/prompt","params":{"sessionId":`...)
		b = append(b, l.rawSess...)
		b = append(b, `,"prompt":[{"type":"text","text":`...)
		b = fastjson.AppendString(b, prompt)
		return append(b, `}]}}`...)
	})
	if err != nil {
		return Result{}, err
	}
	var stop chan struct{}
	var wg sync.WaitGroup
	if ctx.Done() != nil {
		// Only a turn that can be cancelled has a second goroutine: it
		// writes session/cancel while this one keeps reading.
		stop = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				_ = l.write(func(b []byte) []byte {
					b = append(b, `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":`...)
					b = append(b, l.rawSess...)
					return append(b, `}}`...)
				})
			case <-stop:
			}
		}()
	}
	err = l.until(id)
	if stop != nil {
		close(stop)
		wg.Wait()
	}
	res := Result{Updates: l.count.n.Load() - before}
	if err != nil {
		return res, err
	}
	var stopReason string
	var meta []byte
	c := fastjson.Cursor{B: l.env.Result}
	ok := c.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "stopReason":
			stopReason, ok = c.Str()
		case "_meta":
			meta, ok = c.Value()
		default:
			_, ok = c.Value()
		}
		return ok
	})
	if !ok || !c.End() {
		return res, fmt.Errorf("limit: prompt result: %s", l.env.Result)
	}
	res.StopReason = stopReason
	res.Text = l.text.String()
	if m, merr := flood.ParseMeta(meta); merr == nil {
		res.Meta, res.HasMeta = m, true
	}
	if ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, nil
}

func (l *limitClient) Close() error {
	if l.closer != nil {
		return l.closer.Close()
	}
	return nil
}

// LimitLine returns the limit's per-line work for a line outside a turn
// (for benchmarks): the envelope and, for a session/update of session, the
// typed update and the text kept. It reports the text kept so far.
func LimitLine(session string) func(line []byte) (int, error) {
	l := &limitClient{session: session}
	return func(line []byte) (int, error) {
		if !l.env.Read(line) || string(l.env.Method) != "session/update" {
			return 0, errors.New("limit: not an update")
		}
		l.update(l.env.Params)
		return l.text.Len(), nil
	}
}
