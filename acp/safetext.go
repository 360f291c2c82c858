package acp

import (
	"strings"
	"unicode/utf8"
)

// SafeText returns s made safe to print on a terminal: it removes C0
// control characters other than newline and tab (so also CR and BEL), DEL,
// C1 control characters (U+0080–U+009F, and the raw 8-bit bytes 0x80–0x9F),
// terminal escape sequences whole (CSI "ESC [ … final", OSC "ESC ] … BEL or
// ESC \" such as OSC 8 hyperlinks, DCS, SOS, PM and APC strings, other ESC
// sequences, and their 8-bit C1 forms), and invalid UTF-8. It also removes
// what a reader cannot see but a model or a terminal acts on: the Unicode
// bidirectional controls (overrides and isolates U+202A–U+202E,
// U+2066–U+2069, and the marks LRM, RLM and ALM, which can make text read
// differently from what it is), invisible characters (zero-width space,
// joiners and non-joiner, word joiner and invisible operators, BOM, soft
// hyphen, the combining grapheme joiner, Hangul fillers, the Mongolian vowel
// separator, deprecated format controls and interlinear annotation
// marks), the tag characters U+E0000–U+E007F (hidden ASCII), and variation
// selectors other than a single one right after a character (a run of
// them hides bytes). Line and paragraph separators (U+2028, U+2029) become
// newlines, so a line break is never invisible. Other text, including all
// printable Unicode, is kept (emoji built with joiners fall apart into
// their parts). A string sequence (OSC …) that is never terminated is
// removed to the end of s, as a terminal would swallow it. When there is
// nothing to remove, s itself is returned.
func SafeText(s string) string {
	if isSafeText(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	afterChar := false // the last rune kept may take a variation selector
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			afterChar = c >= 0x20 && c != 0x7f
			switch {
			case c == '\n' || c == '\t':
				b.WriteByte(c)
				i++
			case c == 0x1b:
				i = skipEscape(s, i+1)
			case c < 0x20 || c == 0x7f:
				i++
			default:
				b.WriteByte(c)
				i++
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if c <= 0x9f { // raw 8-bit C1 control
				i = skipC1(s, i+1, c)
			} else {
				i++
			}
		case r <= 0x9f:
			i = skipC1(s, i+size, byte(r))
		case r == 0x2028 || r == 0x2029:
			b.WriteByte('\n')
			afterChar = false
			i += size
		case variationSelector(r):
			if afterChar {
				b.WriteString(s[i : i+size])
			}
			afterChar = false
			i += size
		case bidiControl(r) || invisible(r):
			i += size
		default:
			b.WriteString(s[i : i+size])
			afterChar = true
			i += size
		}
	}
	return b.String()
}

// isSafeText reports whether SafeText has nothing to remove from s.
func isSafeText(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || r <= 0x9f || bidiControl(r) || invisible(r) || r == 0x2028 || r == 0x2029 {
			return false
		}
		if variationSelector(r) {
			if prev, _ := utf8.DecodeLastRuneInString(s[:i]); i == 0 || variationSelector(prev) || prev < 0x20 {
				return false
			}
		}
		i += size
	}
	return true
}

func bidiControl(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c
}

// invisible reports the characters SafeText removes because they show
// nothing: zero-width and joining controls, fillers, tags.
func invisible(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e,
		r == 0x3164, r == 0xfeff, r == 0xffa0:
		return true
	case r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r >= 0x206a && r <= 0x206f,
		r >= 0xfff9 && r <= 0xfffb, r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return false
}

// variationSelector reports U+FE00–U+FE0F and U+E0100–U+E01EF.
func variationSelector(r rune) bool {
	return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef)
}

// skipEscape skips an escape sequence whose ESC was just before s[i] and
// returns the index after it.
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_': // OSC, DCS, SOS, PM, APC
		return skipString(s, i+1)
	}
	// ESC, intermediate bytes 0x20–0x2F, final byte 0x30–0x7E.
	j := i
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2f {
		j++
	}
	if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7e {
		return j + 1
	}
	return j
}

// skipC1 skips what follows the C1 control c (0x80–0x9F), which ended
// just before s[i].
func skipC1(s string, i int, c byte) int {
	switch c {
	case 0x9b: // CSI
		return skipCSI(s, i)
	case 0x9d, 0x90, 0x98, 0x9e, 0x9f: // OSC, DCS, SOS, PM, APC
		return skipString(s, i)
	}
	return i
}

// skipCSI skips the parameter, intermediate and final bytes of a control
// sequence.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipString skips a control string up to and including its terminator:
// BEL, ESC \ or ST (0x9C, raw or as U+009C). Another ESC ends the string
// without being consumed. An unterminated string runs to the end of s. The
// payload is read rune by rune, so a UTF-8 continuation byte 0x9C inside a
// character does not end it.
func skipString(s string, i int) int {
	for i < len(s) {
		switch c := s[i]; {
		case c == 0x07:
			return i + 1
		case c == 0x1b:
			if i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
			return i
		case c < utf8.RuneSelf:
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0x9c || (r == utf8.RuneError && size == 1 && s[i] == 0x9c) {
			return i + size
		}
		i += size
	}
	return i
}

// blank reports whether s has nothing to show once sanitised.
func blank(s string) bool { return strings.TrimSpace(SafeText(s)) == "" }
