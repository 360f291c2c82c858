package sandbox

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unsafe"
)

// ReadText reads the file at p, confined to the roots. line is the 1-based
// first line to return (0 or 1: from the start) and limit the maximum number
// of lines (0: all). Lines keep their "\n"; a line past the end gives "".
// Only regular files are read; a final symlink is followed if its target is
// inside the roots. A missing file returns an *Error for which
// errors.Is(err, fs.ErrNotExist) holds.
//
// max bounds the bytes returned: content past it fails with ReasonTooLarge
// (errors.Is ErrTooLarge) without being read, or, for lines, as soon as the
// lines kept would exceed it. The file is streamed, so skipping lines
// costs no memory; ctx ending stops the read.
func (r *Roots) ReadText(ctx context.Context, p string, line, limit int, max int64) (string, error) {
	// A file replaced while it is opened (an atomic write racing the read)
	// reads as changed: the read is tried again, a few times, from the
	// start. A swap that keeps happening is refused.
	for attempt := 1; ; attempt++ {
		s, err := r.readText(ctx, p, line, limit, max)
		var e *Error
		if attempt == readAttempts || !errors.As(err, &e) || e.Reason != ReasonChanged {
			return s, err
		}
	}
}

// readAttempts bounds ReadText's tries when the file changes under it.
const readAttempts = 3

func (r *Roots) readText(ctx context.Context, p string, line, limit int, max int64) (string, error) {
	if line < 0 || limit < 0 {
		return "", &Error{Path: p, Reason: ReasonBadRange}
	}
	if err := checkFileName(p); err != nil {
		return "", err
	}
	_, rt, rel, err := r.resolve(p)
	if err != nil {
		return "", err
	}
	if rel == "." {
		return "", &Error{Path: p, Reason: ReasonNotRegular}
	}
	dirs, name := split(rel)
	dir, missing, err := walk(rt.dir, dirs)
	if err != nil {
		return "", fail(p, err)
	}
	defer dir.Close()
	if len(missing) > 0 {
		return "", &Error{Path: p, Reason: ReasonNotFound, Err: errNotExist(missing[0])}
	}
	f, fi, err := openRegular(dir, name, nil)
	if err != nil {
		return "", fail(p, err)
	}
	defer f.Close()
	if line <= 1 && limit == 0 && fi.Size() > max {
		return "", tooLarge(p, max)
	}
	s, err := readLines(ctx, f, line, limit, max)
	switch {
	case errors.Is(err, ErrTooLarge):
		return "", tooLarge(p, max)
	case err != nil:
		return "", &Error{Path: p, Reason: ReasonIO, Err: err}
	}
	return s, nil
}

func tooLarge(p string, max int64) error {
	return &Error{Path: p, Reason: ReasonTooLarge, Err: fmt.Errorf("more than %d bytes; read fewer lines (line, limit)", max)}
}

// Lines applies ReadText's line (1-based; 0 = from the start) and limit
// (0 = all) to content held in memory, such as an editor's unsaved buffer.
func Lines(content string, line, limit int) (string, error) {
	if line < 0 || limit < 0 {
		return "", &Error{Reason: ReasonBadRange}
	}
	return readLines(context.Background(), strings.NewReader(content), line, limit, -1)
}

// readLines returns up to limit lines (0: all) of rd starting at the 1-based
// line (0: 1), failing with ErrTooLarge once the result would exceed max
// bytes (negative: no bound). Memory beyond the result is one 64 KiB buffer.
func readLines(ctx context.Context, rd io.Reader, line, limit int, max int64) (string, error) {
	br := bufio.NewReaderSize(rd, 64<<10)
	for skip := line - 1; skip > 0; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		_, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			skip--
		case errors.Is(err, bufio.ErrBufferFull):
			// The same line continues.
		case errors.Is(err, io.EOF):
			return "", nil
		default:
			return "", err
		}
	}
	var buf []byte
	for n := 0; limit == 0 || n < limit; {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		chunk, err := br.ReadSlice('\n')
		if max >= 0 && int64(len(buf))+int64(len(chunk)) > max {
			return "", ErrTooLarge
		}
		buf = appendBounded(buf, chunk, max)
		switch {
		case err == nil:
			n++
		case errors.Is(err, bufio.ErrBufferFull):
			// The same line continues.
		case errors.Is(err, io.EOF):
			return bytesString(buf), nil
		default:
			return "", err
		}
	}
	return bytesString(buf), nil
}

// appendBounded appends chunk to buf, doubling its capacity when full but
// never past limit (negative: no bound), so that all the allocations for
// one result add up to less than twice the limit.
func appendBounded(buf, chunk []byte, limit int64) []byte {
	if cap(buf)-len(buf) < len(chunk) {
		c := int64(max(2*cap(buf), len(buf)+len(chunk)))
		if limit >= 0 && c > limit {
			c = limit
		}
		nb := make([]byte, len(buf), c)
		copy(nb, buf)
		buf = nb
	}
	return append(buf, chunk...)
}

// bytesString returns buf as a string without copying it; buf must not be
// used afterwards.
func bytesString(buf []byte) string {
	if len(buf) == 0 {
		return ""
	}
	return unsafe.String(&buf[0], len(buf))
}
