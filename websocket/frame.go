package websocket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	ws "github.com/coder/websocket"

	"github.com/acphost/acphost/internal/proc"
)

// DefaultMaxMessageBytes bounds one message either way by default: the
// same as acphost's MaxLineBytes default.
const DefaultMaxMessageBytes = 64 << 20

// ErrMessageTooBig matches the error of a link or bridge connection that
// received a message over its MaxMessageBytes.
var ErrMessageTooBig = errors.New("websocket: message too big")

// ErrUnauthorized matches a dial the server refused with 401 or 403: a
// wrong or missing token, a refused origin.
var ErrUnauthorized = errors.New("websocket: refused by the server")

// ErrStopped is the cause in the *acphost.LinkError of a link ended by
// its own Stop.
var ErrStopped = errors.New("websocket: link stopped")

// CloseError is how the peer closed the connection: its close code
// (1000 normal, 1001 going away, 1002 protocol error, 1006 no close
// frame, 1008 policy, 1009 too big, 1011 internal error) and reason.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("websocket: closed with %d", e.Code)
	}
	return fmt.Sprintf("websocket: closed with %d (%q)", e.Code, e.Reason)
}

// HandshakeError is a refused upgrade: the server answered StatusCode
// instead of 101. 401 and 403 match ErrUnauthorized.
type HandshakeError struct {
	StatusCode int
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("websocket: the server answered the upgrade with HTTP %d", e.StatusCode)
}

func (e *HandshakeError) Is(target error) bool {
	return target == ErrUnauthorized && (e.StatusCode == 401 || e.StatusCode == 403)
}

// toLine makes a text frame one line: raw CR and LF (valid JSON has them
// only as whitespace) become spaces, in place, and a newline is appended.
func toLine(data []byte) []byte {
	for i, c := range data {
		if c == '\n' || c == '\r' {
			data[i] = ' '
		}
	}
	return append(data, '\n')
}

// readText reads frames until a text message that is not blank and
// returns it, read into buf's array (grown as needed), counting every
// frame in live (any frame proves the peer alive) and the binary ones,
// which are skipped, in binary (nil: not counted). A ctx that cannot end
// costs nothing per frame (the library arms a timer for any other); the
// caller then ends a read by dropping the connection.
func readText(ctx context.Context, conn *ws.Conn, live *liveness, binary *atomic.Int64, buf []byte) ([]byte, error) {
	for {
		typ, r, err := conn.Reader(ctx)
		if err != nil {
			return nil, err
		}
		live.frames.Add(1)
		if typ != ws.MessageText {
			if binary != nil {
				binary.Add(1)
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				return nil, err
			}
			continue
		}
		if buf, err = readInto(r, buf[:0]); err != nil {
			return nil, err
		}
		if !blank(buf) {
			return buf, nil
		}
	}
}

// readInto appends all of r to buf.
func readInto(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4<<10)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// closeWithin sends a close frame and waits up to d (or until also is
// closed) for the peer's. ok says the close handshake completed; if not,
// the caller drops the connection and then waits for closed, which is
// closed once conn.Close has returned.
func closeWithin(conn *ws.Conn, code ws.StatusCode, why string, d time.Duration, also <-chan struct{}) (closed <-chan struct{}, ok bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = conn.Close(code, why)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return done, true
	case <-also:
	case <-t.C:
	}
	return done, false
}

// blank reports whether b holds nothing but whitespace.
func blank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }

// exitReason is the close reason a Bridge sends for an agent's end:
// "exit N" or "signal NAME".
func exitReason(e proc.Exit) string {
	if e.Signaled {
		return "signal " + e.Signal.String()
	}
	return "exit " + strconv.Itoa(e.Code)
}

// parseExitReason reads exitReason's text: the code (-1 for a signal) and
// the signal's name.
func parseExitReason(reason string) (code int, signal string, ok bool) {
	kind, val, found := strings.Cut(reason, " ")
	if !found || val == "" {
		return 0, "", false
	}
	switch kind {
	case "exit":
		n, err := strconv.Atoi(val)
		if err != nil {
			return 0, "", false
		}
		return n, "", true
	case "signal":
		return -1, val, true
	}
	return 0, "", false
}
