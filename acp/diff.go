package acp

import (
	"strconv"
	"strings"
)

// FileDiff is a proposed change to one file, as a tool call's diff content carries it.
type FileDiff struct {
	Path    string
	OldText *string // nil: the file is new
	NewText string
}

// DiffOptions tunes FileDiff.Unified.
type DiffOptions struct {
	// Context is the number of unchanged lines shown around each change;
	// 0 means 3, a negative value means none. Changes separated by at most
	// 2×Context unchanged lines share one hunk.
	Context int
	// MaxCells bounds the LCS table: when (old lines × new lines) of the
	// region left after trimming the common prefix and suffix exceeds it,
	// that region is rendered as a plain replacement. 0 means 1,000,000; a
	// negative value always replaces.
	MaxCells int
	// MaxLines caps the rendered output (headers, hunk headers, body and
	// "\ No newline at end of file" markers all count). 0 or negative means
	// no cap. When the output would be longer, its first MaxLines-1 lines are
	// kept and a final line "... N more lines not shown" replaces the rest,
	// so the result never has more than MaxLines lines.
	MaxLines int
}

// DiffStats describes a rendered diff.
type DiffStats struct {
	// Added and Removed count the '+' and '-' lines of the whole diff,
	// including any that truncation left out.
	Added, Removed int
	// Replaced reports that the size guard (DiffOptions.MaxCells) fired and
	// the changed region is shown as a whole replacement, not a minimal diff.
	Replaced bool
	// Truncated reports that DiffOptions.MaxLines cut the output.
	Truncated bool
}

const (
	diffDefaultContext  = 3
	diffDefaultMaxCells = 1_000_000
	diffNoNewline       = "\\ No newline at end of file\n"
)

// UnifiedDiff renders d as a unified diff with 3 lines of context and no
// line cap; it is d.Unified(DiffOptions{}) without the stats. See
// FileDiff.Unified for the format.
//
// Beyond the size guard (old lines × new lines after trimming the common
// prefix and suffix > 1,000,000 cells) it degrades to a whole replacement of
// the changed region (every old line of it removed, every new line added);
// FileDiff.Unified reports that via DiffStats.Replaced.
func UnifiedDiff(d FileDiff) string {
	s, _ := d.Unified(DiffOptions{})
	return s
}

// Unified renders d as a unified diff and describes the result.
//
// Format: a "--- a/<path>" and a "+++ b/<path>" header (the path with any
// leading "/" dropped, as git prints absolute paths; a path holding control
// characters, '"' or '\' is written as a Go-quoted string, as git quotes
// such names), then "@@ -l,s +l,s @@" hunks (",1" is omitted, as GNU diff and
// git do) whose lines start with ' ', '-' or '+'. A new file (OldText nil)
// has "--- /dev/null" and is all additions; a new empty file renders as the
// two headers alone. Identical texts give "".
//
// Lines end at "\n": a trailing newline does not produce an extra empty
// line, "\r" is kept as part of the line (CRLF text is shown as is), and a
// last line without a newline is followed by "\ No newline at end of file",
// as diff -u marks it. Every rendered line ends with "\n".
//
// The common prefix and suffix are trimmed first; the rest is diffed with an
// LCS table of O(n·m) memory, only while n·m stays within opts.MaxCells.
// Beyond it the changed region is shown as all its old lines removed followed
// by all its new lines added, and DiffStats.Replaced is set.
func (d FileDiff) Unified(opts DiffOptions) (string, DiffStats) {
	var st DiffStats
	oldText := ""
	if d.OldText != nil {
		oldText = *d.OldText
		if oldText == d.NewText {
			return "", st
		}
	}
	ctx := opts.Context
	switch {
	case ctx == 0:
		ctx = diffDefaultContext
	case ctx < 0:
		ctx = 0
	}
	maxCells := opts.MaxCells
	if maxCells == 0 {
		maxCells = diffDefaultMaxCells
	}

	a, b := diffSplitLines(oldText), diffSplitLines(d.NewText)
	blocks, replaced := diffBlocks(a, b, maxCells)
	st.Replaced = replaced

	w := diffWriter{max: opts.MaxLines}
	if d.OldText == nil {
		w.line("--- /dev/null\n")
	} else {
		w.line("--- " + diffHeaderPath("a/", d.Path) + "\n")
	}
	w.line("+++ " + diffHeaderPath("b/", d.Path) + "\n")

	for len(blocks) > 0 {
		// Group the blocks whose gaps are at most 2*ctx unchanged lines.
		n := 1
		for n < len(blocks) && blocks[n].a0-blocks[n-1].a1 <= 2*ctx {
			n++
		}
		group := blocks[:n]
		blocks = blocks[n:]

		first, last := group[0], group[n-1]
		pre := min(ctx, first.a0)
		post := min(ctx, len(a)-last.a1)
		a0, a1 := first.a0-pre, last.a1+post
		b0, b1 := first.b0-pre, last.b1+post
		w.line("@@ -" + diffRange(a0, a1-a0) + " +" + diffRange(b0, b1-b0) + " @@\n")

		w.lines(' ', a[a0:first.a0])
		for i, blk := range group {
			if i > 0 {
				w.lines(' ', a[group[i-1].a1:blk.a0])
			}
			w.lines('-', a[blk.a0:blk.a1])
			w.lines('+', b[blk.b0:blk.b1])
			st.Removed += blk.a1 - blk.a0
			st.Added += blk.b1 - blk.b0
		}
		w.lines(' ', a[last.a1:a1])
	}
	out, truncated := w.finish()
	st.Truncated = truncated
	return out, st
}

// diffBlock is a maximal run of changes: old lines [a0,a1) are replaced by
// new lines [b0,b1). The lines between consecutive blocks are unchanged.
type diffBlock struct{ a0, a1, b0, b1 int }

// diffSplitLines splits s after each "\n". Each line keeps its "\n", so a
// last line without one compares unequal to the same text with one, and a
// trailing newline yields no empty last element.
func diffSplitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// diffBlocks computes the change blocks turning a into b. It trims the
// common prefix and suffix, then runs an LCS over the rest unless that
// needs more than maxCells cells, in which case the rest is one block and
// replaced is true.
func diffBlocks(a, b []string, maxCells int) (blocks []diffBlock, replaced bool) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	n, m := len(ma), len(mb)
	switch {
	case n == 0 && m == 0:
		return nil, false
	case n == 0 || m == 0:
		return []diffBlock{{p, p + n, p, p + m}}, false
	case maxCells < 0 || m > maxCells/n: // n*m > maxCells, without overflow
		return []diffBlock{{p, p + n, p, p + m}}, true
	}

	// Intern lines so the table fill compares ints, not strings.
	ids := make(map[string]int32, n+m)
	ia, ib := make([]int32, n), make([]int32, m)
	for i, l := range ma {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		ia[i] = id
	}
	for j, l := range mb {
		id, ok := ids[l]
		if !ok {
			id = int32(len(ids))
			ids[l] = id
		}
		ib[j] = id
	}

	// lcs[i*(m+1)+j] is the LCS length of ma[i:] and mb[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		row, next := lcs[i*w:], lcs[(i+1)*w:]
		for j := m - 1; j >= 0; j-- {
			switch {
			case ia[i] == ib[j]:
				row[j] = next[j+1] + 1
			case next[j] >= row[j+1]:
				row[j] = next[j]
			default:
				row[j] = row[j+1]
			}
		}
	}

	// Walk forward, preferring deletions, and collect change runs.
	open := false
	var cur diffBlock
	flush := func(i, j int) {
		if open {
			cur.a1, cur.b1 = p+i, p+j
			blocks = append(blocks, cur)
			open = false
		}
	}
	start := func(i, j int) {
		if !open {
			cur = diffBlock{a0: p + i, b0: p + j}
			open = true
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ia[i] == ib[j]:
			flush(i, j)
			i++
			j++
		case j >= m || (i < n && lcs[(i+1)*w+j] >= lcs[i*w+j+1]):
			start(i, j)
			i++
		default:
			start(i, j)
			j++
		}
	}
	flush(i, j)
	return blocks, false
}

// diffRange formats one side of a hunk header: "start,count", with ",1"
// omitted and, for an empty range, start being the line before it.
func diffRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

// diffHeaderPath is prefix+path for a ---/+++ header, the path's leading
// slashes dropped, quoted when it holds characters that would break the line.
func diffHeaderPath(prefix, path string) string {
	s := prefix + strings.TrimLeft(path, "/")
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\\' {
			return strconv.Quote(s)
		}
	}
	return s
}

// diffWriter accumulates output lines, keeping at most max of them (0: no
// cap) and counting the rest.
type diffWriter struct {
	buf  []byte
	max  int
	n    int // lines written or counted
	keep int // len(buf) after max-1 lines
}

func (w *diffWriter) line(s string) {
	w.n++
	if w.max <= 0 || w.n <= w.max {
		w.buf = append(w.buf, s...)
	}
	if w.max > 0 && w.n == w.max-1 {
		w.keep = len(w.buf)
	}
}

func (w *diffWriter) lines(prefix byte, ls []string) {
	for _, l := range ls {
		w.n++
		if w.max <= 0 || w.n <= w.max {
			w.buf = append(w.buf, prefix)
			w.buf = append(w.buf, l...)
			if !strings.HasSuffix(l, "\n") {
				w.buf = append(w.buf, '\n')
			}
		}
		if w.max > 0 && w.n == w.max-1 {
			w.keep = len(w.buf)
		}
		if !strings.HasSuffix(l, "\n") {
			w.line(diffNoNewline)
		}
	}
}

func (w *diffWriter) finish() (string, bool) {
	if w.max <= 0 || w.n <= w.max {
		return string(w.buf), false
	}
	kept := w.max - 1
	out := append(w.buf[:w.keep], "... "...)
	out = strconv.AppendInt(out, int64(w.n-kept), 10)
	out = append(out, " more lines not shown\n"...)
	return string(out), true
}
