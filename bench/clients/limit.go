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
	"sync"

	"github.com/acphost/acphost/bench/flood"
)

// limitClient is the floor: one goroutine reads lines with a bufio.Reader
// from the same pipe and json.Unmarshals each into a minimal envelope; it
// answers permission requests inline. It keeps no state beyond counters.
type limitClient struct {
	r       *bufio.Reader
	w       io.Writer
	closer  io.Closer
	session string
	nextID  int64
	count   counter

	wmu  sync.Mutex
	long []byte // reused for lines longer than the reader's buffer
}

// Envelope is the minimal JSON-RPC frame the limit decodes per line.
type Envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
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
	return l, nil
}

func (l *limitClient) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

type request struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// call sends a request and reads until its answer, handling what comes
// before it. It returns the raw result.
func (l *limitClient) call(method string, params any) (json.RawMessage, error) {
	l.nextID++
	id := l.nextID
	if err := l.send(request{"2.0", id, method, params}); err != nil {
		return nil, err
	}
	return l.until(id)
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

// until reads lines until the response to id arrives.
func (l *limitClient) until(id int64) (json.RawMessage, error) {
	want := strconv.FormatInt(id, 10)
	for {
		line, err := l.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var env Envelope
		if err := json.Unmarshal(line, &env); err != nil || env.JSONRPC != "2.0" {
			continue
		}
		switch {
		case env.Method == "session/update":
			l.count.update()
		case env.Method == "session/request_permission":
			if err := l.answerPermission(env.ID, env.Params); err != nil {
				return nil, err
			}
		case env.Method != "":
			if len(env.ID) > 0 {
				if err := l.send(map[string]any{"jsonrpc": "2.0", "id": env.ID, "error": map[string]any{"code": -32601, "message": "method not found"}}); err != nil {
					return nil, err
				}
			}
		case string(env.ID) == want:
			if len(env.Error) > 0 {
				return nil, fmt.Errorf("limit: error answer: %s", env.Error)
			}
			return env.Result, nil
		}
	}
}

func (l *limitClient) answerPermission(id, params json.RawMessage) error {
	var p struct {
		Options []struct {
			OptionID string `json:"optionId"`
			Kind     string `json:"kind"`
		} `json:"options"`
	}
	_ = json.Unmarshal(params, &p)
	outcome := map[string]string{"outcome": "cancelled"}
	for _, o := range p.Options {
		if o.Kind == "allow_once" {
			outcome = map[string]string{"outcome": "selected", "optionId": o.OptionID}
			break
		}
	}
	// id is copied: it may point into the reader's buffer.
	return l.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(bytes.Clone(id)), "result": map[string]any{"outcome": outcome}})
}

func (l *limitClient) Turn(ctx context.Context, prompt string) (Result, error) {
	before := l.count.n.Load()
	l.nextID++
	id := l.nextID
	err := l.send(request{"2.0", id, "session/prompt", map[string]any{
		"sessionId": l.session,
		"prompt":    []map[string]string{{"type": "text", "text": prompt}},
	}})
	if err != nil {
		return Result{}, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if ctx.Done() != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				_ = l.send(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]string{"sessionId": l.session}})
			case <-stop:
			}
		}()
	}
	raw, err := l.until(id)
	close(stop)
	wg.Wait()
	res := Result{Updates: l.count.n.Load() - before}
	if err != nil {
		return res, err
	}
	var pr struct {
		StopReason string          `json:"stopReason"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &pr); err != nil {
		return res, err
	}
	res.StopReason = pr.StopReason
	if m, merr := flood.ParseMeta(pr.Meta); merr == nil {
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
