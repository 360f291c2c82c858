package fakeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// ErrExited is wrapped by the error [Agent.Serve] returns when a step exits the agent.
var ErrExited = errors.New("fakeagent: scripted exit")

// Agent is one running fake agent. Create it with [New] and run it with [Agent.Serve].
type Agent struct {
	// Stderr receives what the script writes to standard error (StderrLines and Stderr
	// steps). nil discards it. Set it before calling Serve. Subprocess agents use os.Stderr.
	Stderr io.Writer

	script  Script
	caps    sessionCaps
	history *history
	served  atomic.Bool
	exitFn  func(int) // os.Exit in subprocess mode

	stopReading atomic.Bool  // a StopReading step ran; set under readMu
	nextRun     atomic.Int64 // numbers the tool calls of Run steps

	readMu    sync.Mutex
	reading   bool          // a read of the client's input is in flight
	readOver  bool          // the read loop has returned
	readBegun chan struct{} // closed and replaced when a read begins or the loop returns

	// Set once by Serve before any goroutine starts.
	ctx    context.Context
	cancel context.CancelFunc
	w      io.Writer
	record *os.File

	// wlock serialises writes to w. It is a channel, not a mutex, so that
	// under testing/synctest a goroutine waiting behind a blocked write is
	// durably blocked and the bubble's clock can advance.
	wlock chan struct{}
	errMu sync.Mutex // serialises writes to Stderr

	exited   chan struct{}
	exitOnce sync.Once
	exitCode int

	mu         sync.Mutex
	received   []Message
	recvSignal chan struct{} // closed and replaced whenever a message is received
	pending    map[string]*call
	nextReq    int
	authed     bool
	// configOptions are the script's config options as set_config_option
	// left them (nil until the first one).
	configOptions []map[string]json.RawMessage
	// modes are the sessions' current modes, once set (see sessionMode).
	modes      map[string]string
	nSessions  int
	sessions   map[string]bool
	mcpServers map[string][]mcpServer // each session's, as last opened
	// systemPrompts are the sessions' system prompts, as last opened.
	sysPrompts map[string]SystemPrompt
	nTurns     int
	// turnNo counts each session's prompts, those of its history
	// included, for {{turn}}.
	turnNo map[string]int
	active map[string][]*turn
	closed bool
	wg     sync.WaitGroup
}

// New returns an agent that plays s. It does nothing until [Agent.Serve] is called.
func New(s Script) *Agent {
	var caps sessionCaps
	_ = json.Unmarshal(s.AgentCapabilities, &caps) // a bad value is reported by Serve
	return &Agent{
		script:     s,
		caps:       caps,
		history:    newHistory(s.HistoryFile, caps.LoadSession || isSet(caps.SessionCapabilities.List)),
		exited:     make(chan struct{}),
		recvSignal: make(chan struct{}),
		readBegun:  make(chan struct{}),
		wlock:      make(chan struct{}, 1),
		pending:    map[string]*call{},
		sessions:   map[string]bool{},
		turnNo:     map[string]int{},
		mcpServers: map[string][]mcpServer{},
		sysPrompts: map[string]SystemPrompt{},
		active:     map[string][]*turn{},
	}
}

// Serve speaks ACP as the agent, reading the client's messages from r and writing its own
// to w, until r reaches EOF (unless the script sets IgnoreEOF), ctx is done, or a step
// exits. It returns nil at EOF, ctx.Err() when ctx ends, an error wrapping [ErrExited]
// after an Exit step, and an error if the script is invalid or reading fails.
//
// Serve closes nothing it did not open. Before returning it stops the turns it started
// (a turn blocked writing to w holds Serve until w accepts or fails the write); a read
// from r that is still blocked ends when the caller closes r. Serve may be called once.
func (a *Agent) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if !a.served.CompareAndSwap(false, true) {
		return errors.New("fakeagent: Serve called twice")
	}
	if err := a.script.validate(); err != nil {
		return err
	}
	if err := a.openRecord(); err != nil {
		return err
	}
	defer a.closeRecord()
	a.ctx, a.cancel = context.WithCancel(ctx)
	defer a.cancel()
	a.w = w
	for _, l := range a.script.StderrLines {
		a.stderrLine(l)
	}
	readDone := make(chan error, 1)
	go func() { readDone <- a.readLoop(r) }()
	err := a.waitEnd(ctx, readDone)
	a.shutdown()
	return err
}

func (a *Agent) waitEnd(parent context.Context, readDone chan error) error {
	for {
		select {
		case <-a.ctx.Done():
			select {
			case <-a.exited:
				return fmt.Errorf("%w with code %d", ErrExited, a.exitCode)
			default:
				return parent.Err()
			}
		case err := <-readDone:
			if err != nil || !a.script.IgnoreEOF {
				return err
			}
			readDone = nil
		}
	}
}

// shutdown stops every turn and waits for their goroutines.
func (a *Agent) shutdown() {
	a.cancel()
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.wg.Wait()
}

// spawn runs f on a goroutine that Serve waits for, unless Serve is already ending.
func (a *Agent) spawn(f func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
}

// exit ends the agent for an Exit step.
func (a *Agent) exit(code int) {
	if a.exitFn != nil {
		a.exitFn(code)
	}
	a.exitOnce.Do(func() {
		a.exitCode = code
		close(a.exited)
		a.cancel()
	})
}

func (a *Agent) readLoop(r io.Reader) error {
	defer a.endReads()
	err := readAllLines(wedgeable{r, a}, func(line []byte) bool {
		if a.stopReading.Load() {
			<-a.ctx.Done() // wedged: read nothing more
		}
		if a.ctx.Err() != nil {
			return false
		}
		a.handle(line)
		return true
	})
	if err != nil {
		return fmt.Errorf("fakeagent: read: %w", err)
	}
	return nil
}

// wedgeable stops reading from r, for good, once a StopReading step ran:
// the read in flight then still returns, and nothing more is read.
type wedgeable struct {
	r io.Reader
	a *Agent
}

func (w wedgeable) Read(p []byte) (int, error) {
	if !w.a.beginRead() {
		<-w.a.ctx.Done()
		return 0, w.a.ctx.Err()
	}
	defer w.a.endRead()
	return w.r.Read(p)
}

// beginRead reports whether a read may start, and marks it in flight.
func (a *Agent) beginRead() bool {
	a.readMu.Lock()
	defer a.readMu.Unlock()
	if a.stopReading.Load() {
		return false
	}
	a.reading = true
	a.signalRead()
	return true
}

func (a *Agent) endRead() {
	a.readMu.Lock()
	a.reading = false
	a.readMu.Unlock()
}

func (a *Agent) endReads() {
	a.readMu.Lock()
	a.readOver = true
	a.signalRead()
	a.readMu.Unlock()
}

// signalRead wakes wedge; the caller holds readMu.
func (a *Agent) signalRead() {
	close(a.readBegun)
	a.readBegun = make(chan struct{})
}

// wedge stops reading for good. It waits until a read is in flight, so
// that the client's next write is always the last one taken in, whatever
// the scheduling: a wedged agent behaves the same on every run.
func (a *Agent) wedge() result {
	for {
		a.readMu.Lock()
		if a.reading || a.readOver || a.stopReading.Load() { // wedged already: once is for good
			a.stopReading.Store(true)
			a.readMu.Unlock()
			return finished
		}
		begun := a.readBegun
		a.readMu.Unlock()
		select {
		case <-begun:
		case <-a.ctx.Done():
			return halted
		}
	}
}

// handle records one line from the client and acts on it.
func (a *Agent) handle(line []byte) {
	m, ok := parseMessage(line)
	a.addReceived(m)
	switch {
	case !ok:
	case m.Method != "" && m.ID != nil:
		a.handleRequest(m)
	case m.Method != "":
		a.handleNotification(m)
	default:
		a.handleResponse(m)
	}
}

func (a *Agent) addReceived(m Message) {
	if a.record != nil {
		if b, err := encodeLine(m); err == nil {
			_, _ = a.record.Write(b)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.received = append(a.received, m)
	close(a.recvSignal)
	a.recvSignal = make(chan struct{})
}

// Received returns a copy of every message received so far, in order. It is safe to call
// concurrently with Serve.
func (a *Agent) Received() []Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Message(nil), a.received...)
}

// Methods returns the methods of the requests and notifications received so far, in order.
func (a *Agent) Methods() []string {
	var methods []string
	for _, m := range a.Received() {
		if m.Method != "" {
			methods = append(methods, m.Method)
		}
	}
	return methods
}

// WaitReceived blocks until a message with this method has been received and returns the
// first such message, or returns ctx.Err() when ctx ends first.
func (a *Agent) WaitReceived(ctx context.Context, method string) (Message, error) {
	return a.WaitReceivedFunc(ctx, func(m Message) bool { return m.Method == method })
}

// WaitReceivedFunc is WaitReceived for the first message match accepts.
func (a *Agent) WaitReceivedFunc(ctx context.Context, match func(Message) bool) (Message, error) {
	for i := 0; ; {
		a.mu.Lock()
		for ; i < len(a.received); i++ {
			if m := a.received[i]; match(m) {
				a.mu.Unlock()
				return m, nil
			}
		}
		signal := a.recvSignal
		a.mu.Unlock()
		select {
		case <-signal:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

func (a *Agent) openRecord() error {
	if a.script.RecordFile == "" {
		return nil
	}
	f, err := os.OpenFile(a.script.RecordFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("fakeagent: record file: %w", err)
	}
	a.record = f
	return nil
}

func (a *Agent) closeRecord() {
	if a.record != nil {
		_ = a.record.Close()
	}
}

// send writes one message as a line. Nothing is written once Serve is ending.
func (a *Agent) send(m outMsg) error {
	m.JSONRPC = "2.0"
	b, err := encodeLine(m)
	if err != nil {
		a.stderrLine("fakeagent: cannot encode a message: " + err.Error())
		return err
	}
	return a.writeLine(b)
}

func (a *Agent) writeLine(b []byte) error {
	a.wlock <- struct{}{}
	defer func() { <-a.wlock }()
	if err := a.ctx.Err(); err != nil {
		return err
	}
	_, err := a.w.Write(b)
	return err
}

func (a *Agent) reply(id json.RawMessage, result any) {
	_ = a.send(outMsg{ID: id, Result: mustJSON(result)})
}

func (a *Agent) replyError(id json.RawMessage, code int, msg string) {
	_ = a.send(outMsg{ID: id, Error: &rpcError{Code: code, Message: msg}})
}

func (a *Agent) notify(method string, params json.RawMessage) {
	_ = a.send(outMsg{Method: method, Params: params})
}

type updateParams struct {
	SessionID string          `json:"sessionId"`
	Update    json.RawMessage `json:"update"`
}

func (a *Agent) sendUpdate(sid string, u json.RawMessage) {
	a.history.add(historyEntry{SessionID: sid, Update: u})
	a.notify("session/update", mustJSON(updateParams{sid, u}))
}

func (a *Agent) stderrLine(s string) {
	a.errMu.Lock()
	defer a.errMu.Unlock()
	if a.Stderr != nil {
		_, _ = io.WriteString(a.Stderr, s+"\n")
	}
}

// call is one agent→client request.
type call struct {
	id       json.RawMessage
	method   string
	done     chan struct{} // closed when the answer has arrived
	onAnswer func(Message) // run by the reader before done is closed
}

func (c *call) answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// startCall sends a request and registers it so that handleResponse can complete it.
func (a *Agent) startCall(method string, params json.RawMessage, onAnswer func(Message)) (*call, error) {
	a.mu.Lock()
	n := a.nextReq
	a.nextReq++
	id := json.RawMessage(strconv.Itoa(n))
	if a.script.StringIDs {
		id = mustJSON("req-" + strconv.Itoa(n))
	}
	c := &call{id: id, method: method, done: make(chan struct{}), onAnswer: onAnswer}
	a.pending[idKey(id)] = c
	a.mu.Unlock()
	if err := a.send(outMsg{ID: id, Method: method, Params: params}); err != nil {
		a.mu.Lock()
		delete(a.pending, idKey(id))
		a.mu.Unlock()
		return nil, err
	}
	return c, nil
}

func (a *Agent) handleResponse(m Message) {
	key := idKey(m.ID)
	a.mu.Lock()
	c := a.pending[key]
	delete(a.pending, key)
	a.mu.Unlock()
	if c == nil {
		return
	}
	if c.onAnswer != nil {
		c.onAnswer(m)
	}
	close(c.done)
}
