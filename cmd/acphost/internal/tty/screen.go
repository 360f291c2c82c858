// Package tty is acphost's terminal: the Screen that output streams share
// (styles, a status line, tool lines rewritten in place), the line Editor
// at an interactive prompt and the terminal mode it sets, the Inbox
// that hands out the lines of standard input to questions and the prompt
// loop, and the text conventions of what it shows (OneLine, ErrMsg, Ago).
package tty

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// SGR styles.
const (
	StyleBold   = "1"
	StyleDim    = "2"
	StyleThink  = "2;3" // dim italic
	StyleRed    = "31"
	StyleGreen  = "32"
	StyleYellow = "33"
	StyleCyan   = "36"
	StyleAsk    = "1;33" // bold yellow
)

// IsTerminal reports whether f is a terminal (not merely a character
// device: /dev/null is not one).
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// ColorAllowed reports whether f may get ANSI colors: a terminal, NO_COLOR
// unset or empty (https://no-color.org), and TERM not "dumb".
func ColorAllowed(f *os.File) bool {
	return IsTerminal(f) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// Screen is one output stream shared by the renderer, the approval prompt,
// the elapsed-time status line and diagnostics. It tracks whether the cursor
// is at the start of a line so blocks never run into each other. Every
// string given to it must already be safe to print (see acphost.SafeText).
type Screen struct {
	mu    sync.Mutex
	w     io.Writer
	color bool // ANSI colors
	live  bool // a terminal: transient status line and in-place rewrites

	col0     bool   // the cursor is at the start of a line
	status   bool   // the transient status line is showing
	paused   bool   // no status line (a prompt is waiting for the user)
	lastTool string // id of the tool line printed last, while it can be rewritten in place
	running  bool   // and that line says the tool is running (⋯)

	// The line editor, when there is one (see Editor): output goes
	// through its Terminal.Write.
	ed          *Editor
	editing     bool   // a line is being edited: it is drawn below the output
	editAsk     bool   // and it answers a question
	held        string // while editing: the end of an output line not shown yet
	want        string // the prompt of the line wanted next, "" for none
	wantHistory bool   // that line goes to the history (a prompt, not an answer)
	// marker is the prompt of a line the person starts typing unasked
	// (while a turn runs, a prompt to queue).
	marker func() string
	// dir is the session's directory: paths beneath it are shown
	// relative to it ("" : as they are).
	dir string
}

// ShownPath is an agent's path as the screen shows it: relative to the
// session's directory when beneath it, else as it is.
func (s *Screen) ShownPath(path string) string {
	if s.dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(s.dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// NewScreen returns a screen writing to w: with color, text is styled
// (see Style); live, it is a terminal (a status line, lines rewritten in
// place).
func NewScreen(w io.Writer, color, live bool) *Screen {
	return &Screen{w: w, color: color, live: live, col0: true}
}

// Style wraps text in an SGR sequence when colors are on.
func (s *Screen) Style(code, text string) string {
	if !s.color || code == "" || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// out writes b to the terminal: through the line editor when there is
// one. Caller holds mu.
func (s *Screen) out(b string) {
	if s.ed != nil {
		_, _ = s.ed.t.Write([]byte(b))
		return
	}
	_, _ = io.WriteString(s.w, b)
}

// putLocked writes text whose unstyled form is plain. Caller holds mu.
func (s *Screen) putLocked(styled, plain string) {
	if styled == "" {
		return
	}
	s.clearStatusLocked()
	s.col0 = strings.HasSuffix(plain, "\n")
	if s.editing {
		if s.showHeldLocked(styled) {
			s.col0 = true
		}
	} else {
		s.out(styled)
	}
	s.lastTool = ""
}

// showHeldLocked writes text above the line being edited: whole lines,
// and rows as wide as the terminal (which look the same as the terminal's
// own wrapping); the rest of a line waits in held. It reports whether
// nothing is held (the cursor is at the start of a row).
func (s *Screen) showHeldLocked(text string) bool {
	text = s.held + text
	var show string
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		show, text = cutStyled(text, i+1)
	}
	wrapped := false
	for w := s.ed.width(); w > 0; {
		i := visibleCut(text, w)
		if i < 0 {
			break
		}
		var row string
		row, text = cutStyled(text, i)
		show += row + "\n"
		wrapped = true
	}
	s.held = text
	if show != "" {
		s.out(show)
	}
	return wrapped && visibleCut(text, 1) < 0
}

// cutStyled splits s at byte i; an SGR style still on at the cut is
// turned off before it and on again after it.
func cutStyled(s string, i int) (head, tail string) {
	head, tail = s[:i], s[i:]
	open := ""
	for j := 0; j < len(head); j++ {
		if head[j] != 0x1b || j+1 >= len(head) || head[j+1] != '[' {
			continue
		}
		k := j + 2
		for k < len(head) && (head[k] == ';' || head[k] >= '0' && head[k] <= '9') {
			k++
		}
		if k < len(head) && head[k] == 'm' {
			if seq := head[j : k+1]; seq == "\x1b[0m" || seq == "\x1b[m" {
				open = ""
			} else {
				open = seq
			}
		}
		j = k
	}
	if open != "" {
		head += "\x1b[0m"
		tail = open + tail
	}
	return head, tail
}

// visibleCut is the byte index in s after its first n visible runes
// (escape sequences take no room), or -1 when s has fewer than n.
func visibleCut(s string, n int) int {
	seen := 0
	for i := 0; i < len(s); {
		if seen == n {
			return i
		}
		if s[i] == 0x1b {
			j := i + 1
			if j < len(s) && s[j] == '[' {
				j++
				for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
					j++
				}
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		seen++
	}
	if seen == n {
		return len(s)
	}
	return -1
}

func (s *Screen) breakLineLocked() {
	if !s.col0 {
		s.putLocked("\n", "\n")
	}
}

func (s *Screen) clearStatusLocked() {
	if s.status {
		s.out("\r\x1b[2K")
		s.status = false
	}
}

// Print prints a piece of running text (no line break added).
func (s *Screen) Print(code, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(s.Style(code, text), text)
}

// BreakLine ends the current line if it has text.
func (s *Screen) BreakLine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearStatusLocked()
	s.breakLineLocked()
}

// Block prints text (which may be styled and span lines) on lines of its
// own.
func (s *Screen) Block(text string) {
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

// Line prints one styled line of its own.
func (s *Screen) Line(code, text string) { s.Block(s.Style(code, text)) }

// Prompt prints a question on a line of its own and leaves the cursor
// after it (and a space). With the line editor, the question is the
// prompt of the line the answer is edited on.
func (s *Screen) Prompt(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakLineLocked()
	if s.ed != nil {
		s.editPromptLocked(text+" ", true)
		return
	}
	s.putLocked(text+" ", " ")
}

// ChatPrompt is the chat's prompt: "> ".
func (s *Screen) ChatPrompt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breakLineLocked()
	if s.ed != nil {
		s.editPromptLocked(s.Style(StyleBold, ">")+" ", false)
		return
	}
	s.putLocked(s.Style(StyleBold, ">")+" ", " ")
}

// editPromptLocked wants a line edited after prompt p: the line being
// edited gets it at once, else the next ReadLine starts with it.
func (s *Screen) editPromptLocked(p string, ask bool) {
	if s.editing {
		s.editAsk = ask
		s.ed.setPrompt(p, !ask)
		return
	}
	s.want, s.wantHistory = p, !ask
	s.ed.wake()
}

// Unprompt withdraws a question that got no answer (it was cancelled):
// a line being edited for it gets the prompt of an unasked line.
func (s *Screen) Unprompt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ed != nil {
		if s.editing && s.editAsk {
			s.editAsk = false
			s.ed.setPrompt(s.marker(), true)
		} else if !s.wantHistory {
			s.want = ""
		}
	}
	s.clearStatusLocked()
	s.breakLineLocked()
}

// wantsLine reports whether a line is wanted (a prompt waits for one).
func (s *Screen) wantsLine() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want != ""
}

// beginEdit readies the screen for a ReadLine: the status line goes, the
// line being written ends (its rest will follow on a row of its own), and
// the prompt is the one wanted or, for a line typed unasked, the marker.
func (s *Screen) beginEdit(e *Editor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearStatusLocked()
	if !s.col0 {
		s.out("\n")
		s.col0 = true
	}
	s.lastTool = ""
	s.editing = true
	e.size()
	p, hist := s.want, s.wantHistory
	if p == "" {
		p, hist = s.marker(), true
	}
	s.want = ""
	s.editAsk = !hist
	e.skipHistory.Store(!hist)
	e.t.SetPrompt(p)
}

// endEdit: the line was entered (the cursor is at the start of the row
// below it) or input ended; what was held is shown.
func (s *Screen) endEdit(eof bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.editing, s.editAsk = false, false
	if eof {
		// The Terminal still counts its prompt as drawn: leave it.
		s.ed = nil
		_, _ = io.WriteString(s.w, "\r\n")
	}
	if s.held != "" {
		s.out(s.held)
		s.held = ""
	}
}

// noEditor: the editor could not start; output goes straight out.
func (s *Screen) noEditor() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ed = nil
}

// CloseEditor leaves the terminal to whoever comes next: the edited line
// is left behind on a row of its own.
func (s *Screen) CloseEditor() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ed == nil {
		return
	}
	if s.editing {
		s.ed.t.SetPrompt("")
		_, _ = s.ed.t.Write(nil)
		_, _ = io.WriteString(s.w, "\r\n")
	}
	if s.held != "" {
		_, _ = io.WriteString(s.w, s.held)
		s.held = ""
	}
	s.ed = nil
	s.editing = false
}

// viaEditor is a writer for another stream on the same terminal (stderr):
// its lines go above the line being edited.
type viaEditor struct {
	s *Screen
	w io.Writer
}

func (v viaEditor) Write(p []byte) (int, error) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	if v.s.ed != nil {
		return v.s.ed.t.Write(p)
	}
	return v.w.Write(p)
}

// Answered records that the user answered a prompt: a terminal echoed the
// line and its newline; piped input is echoed here for a readable
// transcript.
func (s *Screen) Answered(text string, echo bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if echo {
		s.putLocked(text+"\n", "\n")
		return
	}
	s.col0 = true
	s.lastTool = ""
}

// SetPaused turns the status line off (and clears it) while a prompt waits.
func (s *Screen) SetPaused(p bool) {
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

// ToolLine prints the line of tool call id, or rewrites it in place when
// it is still the last line printed on a terminal. It reports whether it
// rewrote.
func (s *Screen) ToolLine(id, styled, plain string, rewrite bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	running := strings.HasPrefix(plain, "  ⋯ ")
	if rewrite && s.live && s.lastTool == id && s.col0 && !s.editing {
		s.clearStatusLocked()
		s.out("\x1b[1A\r\x1b[2K" + styled + "\n")
		s.running = running
		return true
	}
	if rewrite {
		return false
	}
	s.breakLineLocked()
	s.putLocked(styled+"\n", "\n")
	if utf8.RuneCountInString(plain) <= maxRewritable {
		s.lastTool, s.running = id, running
	}
	return false
}

// DropRunningTool erases the last line printed when it is a tool's
// running line (⋯) a terminal can still reach: the turn is being
// cancelled, and the tool's final line (✗) follows the notice instead
// of leaving a stale running line above it.
func (s *Screen) DropRunningTool() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live && s.lastTool != "" && s.running && s.col0 && !s.editing {
		s.clearStatusLocked()
		s.out("\x1b[1A\r\x1b[2K")
		s.lastTool = ""
	}
}

// ShowStatus draws the transient status line when the cursor is at the
// start of a line of a terminal and no prompt is waiting.
func (s *Screen) ShowStatus(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.live || !s.col0 || s.paused || s.editing {
		return
	}
	s.out("\r\x1b[2K" + s.Style(StyleDim, text))
	s.status = true
}

// Forget makes the last line printed no longer rewritable in place:
// something else (stderr, a note) may have been written after it.
func (s *Screen) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastTool = ""
}

// Spin shows text with a spinner and the elapsed time on the status line
// until the returned func is called.
func (s *Screen) Spin(text string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(ended)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		s.ShowStatus(fmt.Sprintf("%c %s", frames[0], text))
		for i := 1; ; i++ {
			select {
			case <-done:
				s.ClearStatus()
				return
			case now := <-t.C:
				s.ShowStatus(fmt.Sprintf("%c %s %s", frames[i%len(frames)], text, FormatDuration(now.Sub(start))))
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// ClearStatus removes the status line.
func (s *Screen) ClearStatus() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clearStatusLocked()
}

// FormatDuration formats an elapsed time for humans: 0.4s, 12.3s, 2m05s.
func FormatDuration(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
}

// IsLive reports whether the screen is a terminal: a transient status line
// and lines rewritten in place.
func (s *Screen) IsLive() bool { return s.live }

// HasColor reports whether the screen uses ANSI colors.
func (s *Screen) HasColor() bool { return s.color }

// SetDir sets the session's directory, beneath which paths are shown
// relative to it (see ShownPath). Call it before output starts.
func (s *Screen) SetDir(dir string) {
	s.mu.Lock()
	s.dir = dir
	s.mu.Unlock()
}

// UseEditor sends the output through the line editor e; marker is the
// prompt of a line the person starts typing unasked. Call it before e
// runs.
func (s *Screen) UseEditor(e *Editor, marker func() string) {
	s.mu.Lock()
	s.ed, s.marker = e, marker
	s.mu.Unlock()
}

// Above is a writer for another stream w on the same terminal (stderr):
// its lines go above the line being edited.
func (s *Screen) Above(w io.Writer) io.Writer { return viaEditor{s: s, w: w} }

// Raw writes text as it is, styled already: no line is ended before it.
func (s *Screen) Raw(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out(text)
}
