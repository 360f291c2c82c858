package tty

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
)

// Inbox hands out the lines of standard input. A line goes to the question
// waiting for an answer (a permission, a form field) if there is one, else
// to the prompt loop. While a turn runs on a terminal, a line nobody asked
// for is queued as the next prompt (and onQueued is told); from a pipe, a
// line waits until someone takes it, so a script's lines keep their order.
// It starts reading on first use, so a run that never asks does not touch
// stdin.
type Inbox struct {
	r    io.Reader
	once sync.Once

	mu       sync.Mutex
	cond     *sync.Cond
	pending  []string // read, not taken yet (at most one)
	eof      bool
	askers   int      // questions waiting for a line
	queueing bool     // a turn runs on a terminal: unasked lines are queued
	queue    []string // prompts typed while a turn ran, or handed over (--no-wait)
	// queueClosed refuses handed-over prompts: the run is ending.
	queueClosed bool
	// OnQueued is called, without mu held, on the reading goroutine, with
	// each line about to be queued and its place in the queue; it returns
	// whether to queue it (false: it was a command, acted on at once).
	// Set it before the inbox is first used.
	OnQueued func(line string, n int) bool
	// OnQuit, if set, is what /quit (or /exit) typed as the answer to a
	// question does: the question ends with ErrQuit instead of taking it
	// as its answer, and OnQuit runs on a goroutine of its own (quitting
	// closes the agent, which waits for the question's hook to return).
	// Set it before the inbox is first used.
	OnQuit func()
	// Source, if set, reads the lines instead of read: Editor.Run, which
	// puts each line and ends the input at its end. It runs on a goroutine
	// of its own from the first use on; set it before that.
	Source func(in *Inbox)
}

// NewInbox returns the inbox of the lines of r; it reads nothing before
// the first question or prompt.
func NewInbox(r io.Reader) *Inbox {
	in := &Inbox{r: r}
	in.cond = sync.NewCond(&in.mu)
	return in
}

func (in *Inbox) start() {
	in.once.Do(func() {
		if in.Source != nil {
			go in.Source(in)
			return
		}
		go in.read()
	})
}

func (in *Inbox) read() {
	br := bufio.NewReader(in.r)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			in.put(strings.TrimRight(s, "\r\n"))
		}
		if err != nil {
			in.end()
			return
		}
	}
}

// end marks the end of input.
func (in *Inbox) end() {
	in.mu.Lock()
	in.eof = true
	in.cond.Broadcast()
	in.mu.Unlock()
}

// Busy reports whether a turn runs (lines typed are queued).
func (in *Inbox) Busy() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.queueing
}

// put offers one line and returns once it was taken or queued.
func (in *Inbox) put(line string) {
	in.mu.Lock()
	in.pending = append(in.pending, line)
	in.cond.Broadcast()
	for len(in.pending) > 0 {
		if in.queueing && in.askers == 0 {
			in.pending = nil
			f := in.OnQueued
			in.mu.Unlock()
			if f == nil || f(line, in.Queued()+1) {
				in.mu.Lock()
				in.queue = append(in.queue, line)
				in.cond.Broadcast()
				in.mu.Unlock()
			}
			return
		}
		in.cond.Wait()
	}
	in.mu.Unlock()
}

// errQueueClosed refuses a prompt handed over to a run that is ending.
var errQueueClosed = errors.New("this acphost is ending and takes no more prompts")

// Enqueue queues a prompt handed over from outside (acphost --no-wait)
// and returns its place in the queue.
func (in *Inbox) Enqueue(line string) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.queueClosed {
		return 0, errQueueClosed
	}
	in.queue = append(in.queue, line)
	in.cond.Broadcast()
	return len(in.queue), nil
}

// PopQueued takes the first queued prompt, if any.
func (in *Inbox) PopQueued() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queue) == 0 {
		return "", false
	}
	line := in.queue[0]
	in.queue = in.queue[1:]
	return line, true
}

// CloseQueue refuses later handed-over prompts, unless some wait still:
// it reports whether the queue is now closed (and empty).
func (in *Inbox) CloseQueue() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queue) > 0 {
		return false
	}
	in.queueClosed = true
	return true
}

// take waits for a line until ctx ends. ok is false at end of input;
// queued says the line came from the queue.
func (in *Inbox) take(ctx context.Context, asker bool) (line string, queued, ok bool, err error) {
	in.start()
	stop := context.AfterFunc(ctx, func() {
		in.mu.Lock()
		in.cond.Broadcast()
		in.mu.Unlock()
	})
	defer stop()
	in.mu.Lock()
	defer in.mu.Unlock()
	if asker {
		in.askers++
		defer func() { in.askers-- }()
	}
	for {
		switch {
		case !asker && len(in.queue) > 0:
			line, in.queue = in.queue[0], in.queue[1:]
			return line, true, true, nil
		case ctx.Err() != nil:
			return "", false, false, ctx.Err()
		case len(in.pending) > 0:
			line, in.pending = in.pending[0], in.pending[1:]
			in.cond.Broadcast()
			if asker && in.OnQuit != nil && IsQuit(line) {
				go in.OnQuit()
				return "", false, false, ErrQuit
			}
			return line, false, true, nil
		case in.eof:
			if !asker {
				in.queueClosed = true // the chat ends: nothing takes a later prompt
			}
			return "", false, false, nil
		}
		in.cond.Wait()
	}
}

// ErrQuit ends a question answered with /quit: the run is ending.
var ErrQuit = errors.New("quitting: /quit is not an answer")

// IsQuit reports whether line is the /quit (or /exit) command.
func IsQuit(line string) bool {
	switch strings.TrimSpace(line) {
	case "/quit", "/exit":
		return true
	}
	return false
}

// Ask waits for the answer to a question; /quit is not one (see OnQuit).
func (in *Inbox) Ask(ctx context.Context) (string, bool, error) {
	line, _, ok, err := in.take(ctx, true)
	return line, ok, err
}

// Next waits for the next prompt: a queued one first; queued says it was.
func (in *Inbox) Next(ctx context.Context) (line string, queued, ok bool, err error) {
	return in.take(ctx, false)
}

// SetQueueing turns queueing on while a turn runs on a terminal.
func (in *Inbox) SetQueueing(on bool) {
	in.mu.Lock()
	in.queueing = on
	in.cond.Broadcast()
	in.mu.Unlock()
}

// Queued returns how many prompts wait.
func (in *Inbox) Queued() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queue)
}
