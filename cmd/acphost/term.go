package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// SGR styles.
const (
	styleBold   = "1"
	styleDim    = "2"
	styleThink  = "2;3" // dim italic
	styleRed    = "31"
	styleGreen  = "32"
	styleYellow = "33"
	styleCyan   = "36"
	styleAsk    = "1;33" // bold yellow
)

// isTerminal reports whether f is a terminal (not merely a character
// device: /dev/null is not one).
func isTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// colorAllowed reports whether f may get ANSI colors: a terminal, NO_COLOR
// unset or empty (https://no-color.org), and TERM not "dumb".
func colorAllowed(f *os.File) bool {
	return isTerminal(f) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// screen is one output stream shared by the renderer, the approval prompt,
// the elapsed-time status line and diagnostics. It tracks whether the cursor
// is at the start of a line so blocks never run into each other. Every
// string given to it must already be safe to print (see acphost.SafeText).
type screen struct {
	mu    sync.Mutex
	w     io.Writer
	color bool // ANSI colors
	live  bool // a terminal: transient status line and in-place rewrites

	col0     bool   // the cursor is at the start of a line
	status   bool   // the transient status line is showing
	paused   bool   // no status line (a prompt is waiting for the user)
	lastTool string // id of the tool line printed last, while it can be rewritten in place
}

func newScreen(w io.Writer, color, live bool) *screen {
	return &screen{w: w, color: color, live: live, col0: true}
}

// style wraps text in an SGR sequence when colors are on.
func (s *screen) style(code, text string) string {
	if !s.color || code == "" || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// putLocked writes text whose unstyled form is plain. Caller holds mu.
func (s *screen) putLocked(styled, plain string) {
	if styled == "" {
		return
	}
	s.clearStatusLocked()
	_, _ = io.WriteString(s.w, styled)
	s.col0 = strings.HasSuffix(plain, "\n")
	s.lastTool = ""
}

func (s *screen) breakLineLocked() {
	if !s.col0 {
		s.putLocked("\n", "\n")
	}
}

func (s *screen) clearStatusLocked() {
	if s.status {
		_, _ = io.WriteString(s.w, "\r\x1b[2K")
		s.status = false
	}
}

// write prints a piece of running text (no line break added).
func (s *screen) write(code, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(s.style(code, text), text)
}

// breakLine ends the current line if it has text.
func (s *screen) breakLine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearStatusLocked()
	s.breakLineLocked()
}

// block prints text (which may be styled and span lines) on lines of its
// own.
func (s *screen) block(text string) {
	if text == "" {
		return
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakLineLocked()
	s.putLocked(text, "\n")
}

// line prints one styled line of its own.
func (s *screen) line(code, text string) { s.block(s.style(code, text)) }

// prompt prints a question on a line of its own and leaves the cursor
// after it (and a space).
func (s *screen) prompt(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakLineLocked()
	s.putLocked(text+" ", " ")
}

// answered records that the user answered a prompt: a terminal echoed the
// line and its newline; piped input is echoed here for a readable
// transcript.
func (s *screen) answered(text string, echo bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if echo {
		s.putLocked(text+"\n", "\n")
		return
	}
	s.col0 = true
	s.lastTool = ""
}

// setPaused turns the status line off (and clears it) while a prompt waits.
func (s *screen) setPaused(p bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paused = p
	if p {
		s.clearStatusLocked()
	}
}

// maxRewritable is the longest tool line (in runes) rewritten in place; a
// longer one might wrap, and moving up one row would then hit the wrong
// line.
const maxRewritable = 72

// toolLine prints the line of tool call id, or rewrites it in place when
// it is still the last line printed on a terminal. It reports whether it
// rewrote.
func (s *screen) toolLine(id, styled, plain string, rewrite bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rewrite && s.live && s.lastTool == id && s.col0 {
		s.clearStatusLocked()
		_, _ = io.WriteString(s.w, "\x1b[1A\r\x1b[2K"+styled+"\n")
		return true
	}
	if rewrite {
		return false
	}
	s.breakLineLocked()
	s.putLocked(styled+"\n", "\n")
	if utf8.RuneCountInString(plain) <= maxRewritable {
		s.lastTool = id
	}
	return false
}

// showStatus draws the transient status line when the cursor is at the
// start of a line of a terminal and no prompt is waiting.
func (s *screen) showStatus(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live || !s.col0 || s.paused {
		return
	}
	_, _ = io.WriteString(s.w, "\r\x1b[2K"+s.style(styleDim, text))
	s.status = true
}

// forget makes the last line printed no longer rewritable in place:
// something else (stderr, a note) may have been written after it.
func (s *screen) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTool = ""
}

// spin shows text with a spinner and the elapsed time on the status line
// until the returned func is called.
func (s *screen) spin(text string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(ended)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		s.showStatus(fmt.Sprintf("%c %s", frames[0], text))
		for i := 1; ; i++ {
			select {
			case <-done:
				s.clearStatus()
				return
			case now := <-t.C:
				s.showStatus(fmt.Sprintf("%c %s %s", frames[i%len(frames)], text, fmtDuration(now.Sub(start))))
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// clearStatus removes the status line.
func (s *screen) clearStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearStatusLocked()
}

// fmtDuration formats an elapsed time for humans: 0.4s, 12.3s, 2m05s.
func fmtDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// oneLine collapses whitespace (line breaks included) and cuts s to max
// runes, for lines that must stay one line.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
