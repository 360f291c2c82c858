package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
)

// inbox hands out the lines of standard input. A line goes to the question
// waiting for an answer (a permission, a form field) if there is one, else
// to the prompt loop. While a turn runs on a terminal, a line nobody asked
// for is queued as the next prompt (and onQueued is told); from a pipe, a
// line waits until someone takes it, so a script's lines keep their order.
// It starts reading on first use, so a run that never asks does not touch
// stdin.
type inbox struct {
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
	// onQueued is called, without mu held, on the reading goroutine, with
	// each line about to be queued and its place in the queue; it returns
	// whether to queue it (false: it was a command, acted on at once).
	onQueued func(line string, n int) bool
	// source, if set, reads the lines instead of read (the line editor);
	// it calls put for each and end at the end.
	source func(in *inbox)
}

func newInbox(r io.Reader) *inbox {
	in := &inbox{r: r}
	in.cond = sync.NewCond(&in.mu)
	return in
}

func (in *inbox) start() {
	in.once.Do(func() {
		if in.source != nil {
			go in.source(in)
			return
		}
		go in.read()
	})
}

func (in *inbox) read() {
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
func (in *inbox) end() {
	in.mu.Lock()
	in.eof = true
	in.cond.Broadcast()
	in.mu.Unlock()
}

// busy reports whether a turn runs (lines typed are queued).
func (in *inbox) busy() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.queueing
}

// put offers one line and returns once it was taken or queued.
func (in *inbox) put(line string) {
	in.mu.Lock()
	in.pending = append(in.pending, line)
	in.cond.Broadcast()
	for len(in.pending) > 0 {
		if in.queueing && in.askers == 0 {
			in.pending = nil
			f := in.onQueued
			in.mu.Unlock()
			if f == nil || f(line, in.queued()+1) {
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

// enqueue queues a prompt handed over from outside (acphost --no-wait)
// and returns its place in the queue.
func (in *inbox) enqueue(line string) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.queueClosed {
		return 0, errQueueClosed
	}
	in.queue = append(in.queue, line)
	in.cond.Broadcast()
	return len(in.queue), nil
}

// popQueued takes the first queued prompt, if any.
func (in *inbox) popQueued() (string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.queue) == 0 {
		return "", false
	}
	line := in.queue[0]
	in.queue = in.queue[1:]
	return line, true
}

// closeQueue refuses later handed-over prompts, unless some wait still:
// it reports whether the queue is now closed (and empty).
func (in *inbox) closeQueue() bool {
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
func (in *inbox) take(ctx context.Context, asker bool) (line string, queued, ok bool, err error) {
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

// ask waits for the answer to a question.
func (in *inbox) ask(ctx context.Context) (string, bool, error) {
	line, _, ok, err := in.take(ctx, true)
	return line, ok, err
}

// next waits for the next prompt: a queued one first; queued says it was.
func (in *inbox) next(ctx context.Context) (line string, queued, ok bool, err error) {
	return in.take(ctx, false)
}

// setQueueing turns queueing on while a turn runs on a terminal.
func (in *inbox) setQueueing(on bool) {
	in.mu.Lock()
	in.queueing = on
	in.cond.Broadcast()
	in.mu.Unlock()
}

// queued returns how many prompts wait.
func (in *inbox) queued() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.queue)
}
