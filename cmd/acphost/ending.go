package main

import "sync"

// ending is how a run ends early: a signal, or /quit, asks it to (begin),
// and the run waits until the agent is closed (closed, wait) before it
// exits with the code begin was given. Any goroutine may call its methods.
type ending struct {
	once sync.Once
	quit chan struct{} // closed when a signal (or /quit) asks to exit
	done chan struct{} // closed once that signal has closed the agent
	code int           // the exit status, set before quit is closed
}

func newEnding() *ending { return &ending{quit: make(chan struct{}), done: make(chan struct{})} }

// begin starts the ending with exit status code; false when it had begun.
func (e *ending) begin(code int) bool {
	begun := false
	e.once.Do(func() {
		e.code, begun = code, true
		close(e.quit)
	})
	return begun
}

// quitting reports whether the ending has begun.
func (e *ending) quitting() bool {
	select {
	case <-e.quit:
		return true
	default:
		return false
	}
}

// begun is closed once the ending has begun.
func (e *ending) begun() <-chan struct{} { return e.quit }

// exitCode is the exit status begin was given; only once quitting.
func (e *ending) exitCode() int { return e.code }

// closed notes that the agent is closed, once begin has been.
func (e *ending) closed() { close(e.done) }

// wait waits until the agent is closed, if the ending has begun.
func (e *ending) wait() {
	if e.quitting() {
		<-e.done
	}
}
