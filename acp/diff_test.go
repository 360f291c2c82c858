package acp

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func diffStrPtr(s string) *string { return &s }

// diffNumbered returns lines "<prefix><i>\n" for i in [from, to).
func diffNumbered(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

func TestUnifiedDiffCases(t *testing.T) {
	ten := diffNumbered("l", 1, 11) // l1..l10
	tests := []struct {
		name  string
		old   *string // nil: new file
		new   string
		opts  DiffOptions
		want  string
		stats DiffStats
	}{
		{
			name: "identical",
			old:  diffStrPtr("a\nb\n"),
			new:  "a\nb\n",
			want: "",
		},
		{
			name: "identical empty",
			old:  diffStrPtr(""),
			new:  "",
			want: "",
		},
		{
			name:  "trailing newline gives no phantom line",
			old:   diffStrPtr("a\nb\nc\n"),
			new:   "a\nB\nc\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "new file is all additions",
			old:   nil,
			new:   "x\ny\n",
			want:  "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n",
			stats: DiffStats{Added: 2},
		},
		{
			name:  "new file without final newline",
			old:   nil,
			new:   "x",
			want:  "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n",
			stats: DiffStats{Added: 1},
		},
		{
			name: "new empty file is headers only",
			old:  nil,
			new:  "",
			want: "--- /dev/null\n+++ b/f.txt\n",
		},
		{
			name:  "existing empty file filled",
			old:   diffStrPtr(""),
			new:   "x\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1 @@\n+x\n",
			stats: DiffStats{Added: 1},
		},
		{
			name: "edit in middle keeps 3 lines of context",
			old:  diffStrPtr(ten),
			new:  strings.Replace(ten, "l5\n", "five\n", 1),
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n" +
				" l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "add at end",
			old:   diffStrPtr(ten),
			new:   ten + "l11\nl12\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -8,3 +8,5 @@\n l8\n l9\n l10\n+l11\n+l12\n",
			stats: DiffStats{Added: 2},
		},
		{
			name: "add at end of file without final newline",
			old:  diffStrPtr("a\nb"),
			new:  "a\nb\nc\n",
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n a\n-b\n" +
				"\\ No newline at end of file\n+b\n+c\n",
			stats: DiffStats{Added: 2, Removed: 1},
		},
		{
			name: "final newline removed",
			old:  diffStrPtr("a\nb\n"),
			new:  "a\nb",
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n" +
				"\\ No newline at end of file\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "add at start",
			old:   diffStrPtr("a\nb\n"),
			new:   "z\na\nb\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n+z\n a\n b\n",
			stats: DiffStats{Added: 1},
		},
		{
			name:  "delete all",
			old:   diffStrPtr("a\nb\n"),
			new:   "",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +0,0 @@\n-a\n-b\n",
			stats: DiffStats{Removed: 2},
		},
		{
			name:  "CRLF text kept as is",
			old:   diffStrPtr("a\r\nb\r\nc\r\n"),
			new:   "a\r\nB\r\nc\r\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "line ending change only",
			old:   diffStrPtr("a\nb\n"),
			new:   "a\r\nb\n",
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n-a\n+a\r\n b\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name: "nearby changes share a hunk",
			old:  diffStrPtr(ten),
			// changes at l2 and l8: 5 unchanged lines between (≤ 2×3)
			new: strings.NewReplacer("l2\n", "two\n", "l8\n", "eight\n").Replace(ten),
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -1,10 +1,10 @@\n l1\n-l2\n+two\n" +
				" l3\n l4\n l5\n l6\n l7\n-l8\n+eight\n l9\n l10\n",
			stats: DiffStats{Added: 2, Removed: 2},
		},
		{
			name: "6 unchanged lines between changes still merge",
			old:  diffStrPtr(ten),
			new:  strings.NewReplacer("l2\n", "two\n", "l9\n", "nine\n").Replace(ten),
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -1,10 +1,10 @@\n l1\n-l2\n+two\n" +
				" l3\n l4\n l5\n l6\n l7\n l8\n-l9\n+nine\n l10\n",
			stats: DiffStats{Added: 2, Removed: 2},
		},
		{
			name: "distant changes get separate hunks",
			old:  diffStrPtr(diffNumbered("l", 1, 21)),
			new:  strings.NewReplacer("l2\n", "two\n", "l10\n", "ten\n").Replace(diffNumbered("l", 1, 21)),
			want: "--- a/f.txt\n+++ b/f.txt\n" +
				"@@ -1,5 +1,5 @@\n l1\n-l2\n+two\n l3\n l4\n l5\n" +
				"@@ -7,7 +7,7 @@\n l7\n l8\n l9\n-l10\n+ten\n l11\n l12\n l13\n",
			stats: DiffStats{Added: 2, Removed: 2},
		},
		{
			name:  "custom context",
			old:   diffStrPtr(ten),
			new:   strings.Replace(ten, "l5\n", "five\n", 1),
			opts:  DiffOptions{Context: 1},
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -4,3 +4,3 @@\n l4\n-l5\n+five\n l6\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name: "no context",
			old:  diffStrPtr(ten),
			new:  strings.NewReplacer("l5\n", "five\n", "l6\n", "", "l9\n", "l9\nnew\n").Replace(ten),
			opts: DiffOptions{Context: -1},
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -5,2 +5 @@\n-l5\n-l6\n+five\n" +
				"@@ -9,0 +9 @@\n+new\n",
			stats: DiffStats{Added: 2, Removed: 2},
		},
		{
			name: "guard degrades to replacement",
			old:  diffStrPtr("a\nb\nc\nd\n"),
			new:  "x\nb\nc\ny\n",
			opts: DiffOptions{MaxCells: 15}, // 4×4 = 16 cells
			want: "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-a\n-b\n-c\n-d\n" +
				"+x\n+b\n+c\n+y\n",
			stats: DiffStats{Added: 4, Removed: 4, Replaced: true},
		},
		{
			name:  "guard boundary is inclusive",
			old:   diffStrPtr("a\nb\nc\nd\n"),
			new:   "x\nb\nc\ny\n",
			opts:  DiffOptions{MaxCells: 16},
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n-a\n+x\n b\n c\n-d\n+y\n",
			stats: DiffStats{Added: 2, Removed: 2},
		},
		{
			name:  "guard counts only the region after trimming",
			old:   diffStrPtr("p\na\nb\ns\n"),
			new:   "p\nb\nc\ns\n",
			opts:  DiffOptions{MaxCells: 4}, // 2×2 after trimming p and s
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n p\n-a\n b\n+c\n s\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "replacement keeps the trimmed prefix and suffix as context",
			old:   diffStrPtr("p\na\nb\ns\n"),
			new:   "p\nb\nc\ns\n",
			opts:  DiffOptions{MaxCells: 3},
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1,4 +1,4 @@\n p\n-a\n-b\n+b\n+c\n s\n",
			stats: DiffStats{Added: 2, Removed: 2, Replaced: true},
		},
		{
			name: "cap cuts output and says how much",
			old:  diffStrPtr(ten),
			new:  strings.Replace(ten, "l5\n", "five\n", 1),
			opts: DiffOptions{MaxLines: 6},
			// 11 lines in full: 2 headers, 1 hunk header, 8 body lines.
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n l2\n l3\n... 6 more lines not shown\n",
			stats: DiffStats{Added: 1, Removed: 1, Truncated: true},
		},
		{
			name:  "cap equal to the length does not cut",
			old:   diffStrPtr(ten),
			new:   strings.Replace(ten, "l5\n", "five\n", 1),
			opts:  DiffOptions{MaxLines: 11},
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n",
			stats: DiffStats{Added: 1, Removed: 1},
		},
		{
			name:  "cap of one line",
			old:   diffStrPtr("a\n"),
			new:   "b\n",
			opts:  DiffOptions{MaxLines: 1},
			want:  "... 5 more lines not shown\n",
			stats: DiffStats{Added: 1, Removed: 1, Truncated: true},
		},
		{
			name: "cap counts no-newline markers",
			old:  diffStrPtr("a"),
			new:  "b",
			opts: DiffOptions{MaxLines: 5},
			// full: ---, +++, @@, -a, \, +b, \ = 7 lines
			want:  "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n... 3 more lines not shown\n",
			stats: DiffStats{Added: 1, Removed: 1, Truncated: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := FileDiff{Path: "f.txt", OldText: tt.old, NewText: tt.new}
			got, st := d.Unified(tt.opts)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.stats, st)
			if tt.opts == (DiffOptions{}) {
				assert.Equal(t, tt.want, UnifiedDiff(d))
			}
			if !st.Truncated && got != "" {
				applied, err := diffApply(tt.old, got)
				require.NoError(t, err)
				assert.Equal(t, tt.new, applied)
			}
		})
	}
}

func TestUnifiedDiffHeaders(t *testing.T) {
	old := "a\n"
	tests := []struct {
		path, old, new string
	}{
		{"/home/u/p/main.go", "--- a/home/u/p/main.go", "+++ b/home/u/p/main.go"},
		{"rel/x.txt", "--- a/rel/x.txt", "+++ b/rel/x.txt"},
		{"/dir/with space.txt", "--- a/dir/with space.txt", "+++ b/dir/with space.txt"},
		{"/x\ny", `--- "a/x\ny"`, `+++ "b/x\ny"`},
		{"/tab\there", `--- "a/tab\there"`, `+++ "b/tab\there"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got := UnifiedDiff(FileDiff{Path: tt.path, OldText: &old, NewText: "b\n"})
			lines := strings.Split(got, "\n")
			require.GreaterOrEqual(t, len(lines), 2)
			assert.Equal(t, tt.old, lines[0])
			assert.Equal(t, tt.new, lines[1])
		})
	}
	got := UnifiedDiff(FileDiff{Path: "/x\ny", NewText: "b\n"})
	assert.True(t, strings.HasPrefix(got, "--- /dev/null\n+++ \"b/x\\ny\"\n@@"), got)
}

// TestUnifiedDiffGuardDefault checks the default 1,000,000-cell guard: 1000
// changed lines on each side (10^6 cells) are diffed line by line, 1001 (just
// over) are replaced whole.
func TestUnifiedDiffGuardDefault(t *testing.T) {
	build := func(n int) (string, string) {
		var o, nw strings.Builder
		for i := range n {
			fmt.Fprintf(&o, "line %d\n", i)
			if i%2 == 0 {
				fmt.Fprintf(&nw, "changed %d\n", i)
			} else {
				fmt.Fprintf(&nw, "line %d\n", i)
			}
		}
		// Make the first and last lines differ so trimming leaves all n.
		return o.String(), nw.String() + "tail\n"
	}

	o, n := build(1000) // 1000 old × 1001 new > 10^6
	_, st := FileDiff{Path: "f", OldText: &o, NewText: n}.Unified(DiffOptions{})
	assert.True(t, st.Replaced)
	assert.Equal(t, DiffStats{Added: 1001, Removed: 1000, Replaced: true}, st)

	o, n = build(999) // 999 × 1000 ≤ 10^6
	out, st := FileDiff{Path: "f", OldText: &o, NewText: n}.Unified(DiffOptions{})
	assert.False(t, st.Replaced)
	assert.Equal(t, 500, st.Removed) // the even lines
	assert.Equal(t, 501, st.Added)
	applied, err := diffApply(&o, out)
	require.NoError(t, err)
	assert.Equal(t, n, applied)

	// A large file with one small edit stays within the guard thanks to
	// prefix/suffix trimming.
	big := diffNumbered("row ", 0, 200_000)
	edited := strings.Replace(big, "row 100000\n", "row 100000 edited\n", 1)
	out, st = FileDiff{Path: "f", OldText: &big, NewText: edited}.Unified(DiffOptions{})
	assert.Equal(t, DiffStats{Added: 1, Removed: 1}, st)
	assert.Equal(t, 11, strings.Count(out, "\n")) // 2 headers, @@, 3+1+1+3
}

func TestUnifiedDiffCap400(t *testing.T) {
	o := diffNumbered("old ", 0, 1000)
	n := diffNumbered("new ", 0, 1000)
	out, st := FileDiff{Path: "f", OldText: &o, NewText: n}.Unified(DiffOptions{MaxLines: 400})
	assert.True(t, st.Truncated)
	assert.Equal(t, 1000, st.Added)
	assert.Equal(t, 1000, st.Removed)
	lines := strings.SplitAfter(out, "\n")
	lines = lines[:len(lines)-1]
	assert.Len(t, lines, 400)
	// 2003 lines in full; 399 kept.
	assert.Equal(t, "... 1604 more lines not shown\n", lines[399])
	full := UnifiedDiff(FileDiff{Path: "f", OldText: &o, NewText: n})
	assert.True(t, strings.HasPrefix(full, strings.Join(lines[:399], "")))
}

var diffHunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@\n$`)

type diffTestHunk struct {
	oldStart, oldCount, newStart, newCount int
	lines                                  []string // with their ' ', '-', '+' prefix
}

// diffParse parses a unified diff as Unified renders it: two header lines,
// then hunks. A "\ No newline at end of file" marker removes the "\n" of
// the line before it.
func diffParse(diff string) (newFile bool, hunks []diffTestHunk, err error) {
	if diff == "" {
		return false, nil, nil
	}
	if !strings.HasSuffix(diff, "\n") {
		return false, nil, fmt.Errorf("diff does not end with a newline")
	}
	lines := strings.SplitAfter(diff, "\n")
	lines = lines[:len(lines)-1]
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "--- ") || !strings.HasPrefix(lines[1], "+++ ") {
		return false, nil, fmt.Errorf("bad headers")
	}
	newFile = lines[0] == "--- /dev/null\n"
	lines = lines[2:]
	atoi := func(s string, def int) int {
		if s == "" {
			return def
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	for len(lines) > 0 {
		m := diffHunkHeader.FindStringSubmatch(lines[0])
		if m == nil {
			return false, nil, fmt.Errorf("bad hunk header %q", lines[0])
		}
		h := diffTestHunk{atoi(m[1], 0), atoi(m[2], 1), atoi(m[3], 0), atoi(m[4], 1), nil}
		lines = lines[1:]
		for oc, nc := h.oldCount, h.newCount; oc > 0 || nc > 0; {
			if len(lines) == 0 {
				return false, nil, fmt.Errorf("hunk ends early")
			}
			l := lines[0]
			lines = lines[1:]
			if len(lines) > 0 && lines[0] == diffNoNewline {
				l = strings.TrimSuffix(l, "\n")
				lines = lines[1:]
			}
			switch l[0] {
			case ' ':
				oc--
				nc--
			case '-':
				oc--
			case '+':
				nc--
			default:
				return false, nil, fmt.Errorf("bad hunk line %q", l)
			}
			if oc < 0 || nc < 0 {
				return false, nil, fmt.Errorf("hunk longer than its header")
			}
			h.lines = append(h.lines, l)
		}
		hunks = append(hunks, h)
	}
	return newFile, hunks, nil
}

// diffApply applies a unified diff to old (nil: no file) and returns the
// new text. It checks context and removed lines against old.
func diffApply(old *string, diff string) (string, error) {
	newFile, hunks, err := diffParse(diff)
	if err != nil {
		return "", err
	}
	src := ""
	if old != nil {
		src = *old
	}
	if newFile != (old == nil) && diff != "" {
		return "", fmt.Errorf("new-file header mismatch")
	}
	in := strings.SplitAfter(src, "\n")
	if in[len(in)-1] == "" {
		in = in[:len(in)-1]
	}
	var out []string
	pos := 0
	for _, h := range hunks {
		start := h.oldStart - 1
		if h.oldCount == 0 {
			start = h.oldStart
		}
		if start < pos || start > len(in) {
			return "", fmt.Errorf("hunk at old line %d out of order or range", h.oldStart)
		}
		out = append(out, in[pos:start]...)
		pos = start
		wantNew := h.newStart - 1
		if h.newCount == 0 {
			wantNew = h.newStart
		}
		if len(out) != wantNew {
			return "", fmt.Errorf("hunk new start %d, have %d lines", h.newStart, len(out))
		}
		for _, l := range h.lines {
			kind, text := l[0], l[1:]
			if kind != '+' {
				if pos >= len(in) || in[pos] != text {
					return "", fmt.Errorf("line %d does not match %q", pos+1, text)
				}
				pos++
			}
			if kind != '-' {
				out = append(out, text)
			}
		}
	}
	out = append(out, in[pos:]...)
	return strings.Join(out, ""), nil
}

// diffLCSLen is a plain reference LCS length over lines.
func diffLCSLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case a[i] == b[j]:
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func FuzzUnifiedDiff(f *testing.F) {
	seeds := []struct{ old, new string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "x\ny\n"},
		{"a\nb", "a\nb\nc\n"},
		{"a\nb\n", ""},
		{"a\r\nb\r\n", "a\nb\r\n"},
		{diffNumbered("l", 1, 30), strings.NewReplacer("l3\n", "", "l20\n", "x\ny\n").Replace(diffNumbered("l", 1, 30))},
		{"x\n\n\ny", "\n\nx\ny\n"},
	}
	for i, s := range seeds {
		f.Add(s.old, s.new, i%3 == 0, int8(i), int16(i*7-5), uint16(i*3))
	}
	f.Fuzz(func(t *testing.T, old, new string, isNew bool, ctx int8, maxCells int16, maxLines uint16) {
		var oldp *string
		if !isNew {
			oldp = &old
		}
		opts := DiffOptions{Context: int(ctx) % 5, MaxCells: int(maxCells)}
		d := FileDiff{Path: "/p/f", OldText: oldp, NewText: new}
		out, st := d.Unified(opts)
		if isNew {
			old = ""
		}
		if !isNew && old == new {
			require.Empty(t, out)
			require.Equal(t, DiffStats{}, st)
			return
		}
		applied, err := diffApply(oldp, out)
		require.NoError(t, err, "diff:\n%s", out)
		require.Equal(t, new, applied, "diff:\n%s", out)
		require.False(t, st.Truncated)

		// Stats match the rendered lines.
		_, hunks, err := diffParse(out)
		require.NoError(t, err)
		added, removed := 0, 0
		ctxLines := opts.Context
		if ctxLines == 0 {
			ctxLines = 3
		} else if ctxLines < 0 {
			ctxLines = 0
		}
		prevChange := -1 // old index just past the previous hunk's last change
		for _, h := range hunks {
			for _, l := range h.lines {
				switch l[0] {
				case '+':
					added++
				case '-':
					removed++
				}
			}
			// Leading and trailing context are at most ctxLines, and the
			// changes of different hunks are more than 2×ctxLines apart.
			lead, trail := 0, 0
			for lead < len(h.lines) && h.lines[lead][0] == ' ' {
				lead++
			}
			for trail < len(h.lines) && h.lines[len(h.lines)-1-trail][0] == ' ' {
				trail++
			}
			require.LessOrEqual(t, lead, ctxLines)
			require.LessOrEqual(t, trail, ctxLines)
			require.Less(t, lead, len(h.lines), "hunk without changes")
			start := h.oldStart - 1
			if h.oldCount == 0 {
				start = h.oldStart
			}
			if prevChange >= 0 {
				require.Greater(t, start+lead-prevChange, 2*ctxLines)
			}
			prevChange = start + h.oldCount - trail
		}
		require.Equal(t, added, st.Added)
		require.Equal(t, removed, st.Removed)

		// Without the guard the diff is minimal.
		a, b := diffSplitLines(old), diffSplitLines(new)
		if !st.Replaced && len(a)*len(b) <= 10000 {
			require.Equal(t, len(a)+len(b)-2*diffLCSLen(a, b), added+removed)
		}

		// The cap keeps a prefix of the full output plus one note line.
		if maxLines > 0 {
			opts.MaxLines = int(maxLines % 64)
			capped, cst := d.Unified(opts)
			if opts.MaxLines == 0 {
				require.Equal(t, out, capped)
				return
			}
			full := strings.Count(out, "\n")
			require.Equal(t, full > opts.MaxLines, cst.Truncated)
			require.LessOrEqual(t, strings.Count(capped, "\n"), opts.MaxLines)
			if cst.Truncated {
				i := strings.LastIndex(capped[:len(capped)-1], "\n") + 1
				require.True(t, strings.HasPrefix(out, capped[:i]))
				require.Equal(t, fmt.Sprintf("... %d more lines not shown\n", full-opts.MaxLines+1), capped[i:])
			} else {
				require.Equal(t, out, capped)
			}
			cst.Truncated = false
			require.Equal(t, st, cst)
		}
	})
}

func BenchmarkUnifiedDiff(b *testing.B) {
	scattered := func(n int) (string, string) {
		var o, nw strings.Builder
		for i := range n {
			fmt.Fprintf(&o, "\tstatement number %d of the function\n", i)
			switch i % 10 {
			case 3:
				fmt.Fprintf(&nw, "\tedited statement %d\n", i)
			case 7:
				// deleted
			default:
				fmt.Fprintf(&nw, "\tstatement number %d of the function\n", i)
			}
		}
		return o.String(), nw.String()
	}
	o900, n900 := scattered(900)
	o5k, n5k := scattered(5000)
	big := diffNumbered("row ", 0, 100_000)
	bigEdit := strings.Replace(big, "row 50000\n", "row 50000 edited\n", 1)
	cases := []struct {
		name     string
		old, new string
	}{
		{"scattered-900-lines", o900, n900},
		{"beyond-guard-5000-lines", o5k, n5k},
		{"one-edit-100k-lines", big, bigEdit},
		{"new-file-5000-lines", "", n5k},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := FileDiff{Path: "/p/f.go", OldText: &c.old, NewText: c.new}
			if c.old == "" {
				d.OldText = nil
			}
			b.SetBytes(int64(len(c.old) + len(c.new)))
			b.ReportAllocs()
			for b.Loop() {
				d.Unified(DiffOptions{MaxLines: 400})
			}
		})
	}
}
