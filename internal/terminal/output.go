package terminal

import "unicode/utf8"

// output is the captured, merged stdout+stderr of one terminal.
//
// With a limit it keeps only the last limit bytes, never starting in the
// middle of a UTF-8 encoded character. Dropped bytes stay in buf (before
// start) until they outweigh the kept ones; then the kept tail is moved to
// the front. That keeps appends amortised O(1) per byte and memory below
// about twice the limit plus one read.
type output struct {
	buf       []byte
	start     int // kept output is buf[start:]
	limit     int // 0 = keep everything
	truncated bool
}

func (o *output) write(p []byte) {
	o.buf = append(o.buf, p...)
	if o.limit <= 0 || len(o.buf)-o.start <= o.limit {
		return
	}
	cut := len(o.buf) - o.limit
	// Skip continuation bytes so the kept output starts on a character.
	// A valid character has at most UTFMax-1 of them; more means the data
	// is not UTF-8 at that point and there is no boundary to find.
	for i := 0; i < utf8.UTFMax-1 && cut < len(o.buf) && !utf8.RuneStart(o.buf[cut]); i++ {
		cut++
	}
	o.start = cut
	o.truncated = true
	if o.start > o.limit {
		n := copy(o.buf, o.buf[o.start:])
		o.buf = o.buf[:n]
		o.start = 0
	}
}

func (o *output) String() string { return string(o.buf[o.start:]) }
