package tty

import (
	"io"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/term"
)

// Editor is the line editor at an interactive prompt: golang.org/x/term's
// Terminal (line editing, history, Tab completion), fed from standard input
// in the terminal mode rawMode sets, drawing on standard output.
//
// The Terminal draws its prompt when ReadLine starts, and cannot draw one
// later on an empty line; so a ReadLine starts only when a line is wanted
// (the chat's prompt, a question) or when the person starts typing (while a
// turn runs: a prompt to queue). All output goes through the screen, which
// writes it through Terminal.Write while a line is being edited: the edited
// line is erased, the output written above it and the line redrawn. Output
// that ends mid-line is held until its line ends (or fills a row), so that
// the edited line always starts a row of its own.
type Editor struct {
	t     *term.Terminal
	fd    int // standard input
	outFd int // standard output, for its size
	in    *os.File
	out   *os.File
	// interrupt is Ctrl-C read as a key (where the terminal mode cannot
	// keep it a signal): it acts as SIGINT would.
	interrupt func()

	kick   chan struct{} // a line is wanted: start a ReadLine
	chunks chan []byte   // read from standard input, not yet given to the Terminal
	keys   chan []byte   // keys the editor types itself (keyInterrupt), not from stdin
	alive  atomic.Bool   // run is editing lines: a key sent to keys is read
	// swallow: the run is ending; keys read from now on are dropped and
	// start no line (see Swallow).
	swallow atomic.Bool
	stash   []byte // taken from chunks, not yet read by the Terminal
	eof     bool

	// skipHistory: the line being edited answers a question (a
	// permission, a form field) and is not history.
	skipHistory atomic.Bool
	hist        History

	mu      sync.Mutex
	restore func() error // undoes rawMode; nil once done
}

// History is the prompts the line editor recalls with Up and Down, most
// recent last: Add records an entered line, At(0) is the last one.
type History interface {
	Add(line string)
	Len() int
	At(i int) string
}

// NewEditor returns the line editor of the terminal in and out, recalling
// hist (nil: none). interrupt is called, on the goroutine reading in, for
// a Ctrl-C read as a key. It touches the terminal's mode only once Run
// starts.
func NewEditor(in, out *os.File, hist History, interrupt func()) *Editor {
	e := &Editor{fd: int(in.Fd()), outFd: int(out.Fd()), in: in, out: out, interrupt: interrupt,
		kick: make(chan struct{}, 1), chunks: make(chan []byte), keys: make(chan []byte, 1), hist: hist}
	e.t = term.NewTerminal(e, "")
	e.t.History = e
	e.size()
	return e
}

// size tells the Terminal the terminal's width.
func (e *Editor) size() int {
	w, h, err := term.GetSize(e.outFd)
	if err != nil || w <= 0 {
		return 80
	}
	_ = e.t.SetSize(w, h)
	return w
}

// width is the terminal's width, for output held while a line is edited.
func (e *Editor) width() int {
	w, _, err := term.GetSize(e.outFd)
	if err != nil || w <= 0 {
		return 80
	}
	return w
}

// start puts the terminal in the editor's mode and reads standard input.
func (e *Editor) start() error {
	restore, err := rawMode(e.fd)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.restore = restore
	e.mu.Unlock()
	go e.pump()
	return nil
}

// Close restores the terminal's mode.
func (e *Editor) Close() {
	e.mu.Lock()
	restore := e.restore
	e.restore = nil
	e.mu.Unlock()
	if restore != nil {
		_ = restore()
	}
}

// pump reads standard input. Ctrl-C read as a key is taken out and acts
// as an interrupt.
func (e *Editor) pump() {
	defer close(e.chunks)
	buf := make([]byte, 4096)
	for {
		n, err := e.in.Read(buf)
		if n > 0 {
			b := make([]byte, 0, n)
			for _, c := range buf[:n] {
				if c == 3 { // Ctrl-C
					if e.interrupt != nil {
						e.interrupt()
					}
					continue
				}
				b = append(b, c)
			}
			if len(b) > 0 && !e.swallow.Load() {
				e.chunks <- b
			}
		}
		if err != nil {
			return
		}
	}
}

// Read is the Terminal's input.
func (e *Editor) Read(p []byte) (int, error) {
	if len(e.stash) == 0 {
		if e.eof {
			return 0, io.EOF
		}
		select {
		case b, ok := <-e.chunks:
			if !ok {
				e.eof = true
				return 0, io.EOF
			}
			e.stash = b
		case b := <-e.keys:
			e.stash = b
		}
	}
	n := copy(p, e.stash)
	e.stash = e.stash[n:]
	return n, nil
}

// Write is the Terminal's output: the edited line, as the Terminal draws
// it. It must not take the screen's lock (the Terminal holds its own).
func (e *Editor) Write(p []byte) (int, error) { return e.out.Write(p) }

// wake asks for a ReadLine: a line is wanted.
func (e *Editor) wake() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Run edits lines for in until standard input ends: each ReadLine starts
// when the screen wants a line or a key arrives.
func (e *Editor) Run(in *Inbox, s *Screen) {
	if err := e.start(); err != nil {
		s.noEditor()
		in.read() // the plain line reader
		return
	}
	e.alive.Store(true)
	defer e.alive.Store(false)
	for {
		if len(e.stash) == 0 && !e.eof {
			select {
			case <-e.kick:
				if !s.wantsLine() {
					continue
				}
			case b, ok := <-e.chunks:
				if !ok {
					e.eof = true
				} else if e.swallow.Load() {
					continue // read before Swallow, typed after the last line
				} else {
					e.stash = b
				}
			case b := <-e.keys:
				e.stash = b
			}
		}
		if e.swallow.Load() && !e.eof {
			e.stash = nil
			continue
		}
		s.beginEdit(e)
		line, err := e.t.ReadLine()
		if err == term.ErrPasteIndicator {
			err = nil
		}
		s.endEdit(err != nil)
		if err != nil {
			in.end()
			return
		}
		in.put(line)
	}
}

// Swallow makes the editor drop every key read from now on, Ctrl-C
// excepted (it still interrupts): no line is edited any more, so what a
// person types while the run ends (an agent slow to exit) neither shows on
// a prompt nor reaches the shell afterwards. Any goroutine may call it.
func (e *Editor) Swallow() { e.swallow.Store(true) }

// KeyInterrupt is the key the editor types itself for a Ctrl-C between
// turns (Ctrl-\, which the terminal keeps a signal, so a person cannot
// type it): the Terminal hands it to AutoCompleteCallback with the line
// being edited, which clears a line with text or quits at an empty one.
const KeyInterrupt = 0x1c

// InterruptLine types keyInterrupt into the line being edited and reports
// whether it will be read (false once the editor has stopped).
func (e *Editor) InterruptLine() bool {
	if !e.alive.Load() {
		return false
	}
	select {
	case e.keys <- []byte{KeyInterrupt}:
	default: // one is on its way already
	}
	return true
}

// setPrompt changes the prompt of the line being edited and redraws it.
// The caller holds the screen's lock.
func (e *Editor) setPrompt(p string, history bool) {
	e.skipHistory.Store(!history)
	e.t.SetPrompt(p)
	_, _ = e.t.Write(nil)
}

// Add, Len and At are the Terminal's History: the person's prompts, not
// their answers to questions.

// Add records an entered line, unless it answers a question.
func (e *Editor) Add(line string) {
	if e.skipHistory.Load() || e.hist == nil {
		return
	}
	e.hist.Add(line)
}

// Len is the length of the history.
func (e *Editor) Len() int {
	if e.hist == nil {
		return 0
	}
	return e.hist.Len()
}

// At is the i-th most recent line of the history (0: the last).
func (e *Editor) At(i int) string { return e.hist.At(i) }

// SetHistory sets the history Up and Down recall (nil: none). Call it
// on the goroutine that runs the editor, before run.
func (e *Editor) SetHistory(h History) { e.hist = h }

// SetComplete sets the Tab completion (and keyInterrupt's handler): the
// Terminal's AutoCompleteCallback, run on the editor's goroutine.
func (e *Editor) SetComplete(f func(line string, pos int, key rune) (newLine string, newPos int, ok bool)) {
	e.t.AutoCompleteCallback = f
}
