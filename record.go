package acphost

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
	"time"
)

// wireRecorder writes a client's wire to ACPOptions.Debug.Record as NDJSON, one entry
// per line: {"t":time,"gen":n,"dir":"send"|"recv","msg":{...}} for messages
// and {"t":…,"gen":n,"dir":"stderr"|"skip","line":"…"} for stderr lines and
// skipped stdout lines. gen counts agent processes (1, then 2 after a
// restart). fakeagent.ReplayCommand plays such a recording as the agent.
type wireRecorder struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func newWireRecorder(w io.Writer) *wireRecorder {
	if w == nil {
		return nil
	}
	return &wireRecorder{w: w}
}

// message records a JSON-RPC message (already valid JSON).
func (r *wireRecorder) message(gen int, dir string, msg []byte) {
	r.entry(gen, dir, func(b []byte) []byte {
		b = append(b, `,"msg":`...)
		return append(b, msg...)
	})
}

// line records a text line.
func (r *wireRecorder) line(gen int, dir string, line []byte) {
	quoted, _ := json.Marshal(string(line))
	r.entry(gen, dir, func(b []byte) []byte {
		b = append(b, `,"line":`...)
		return append(b, quoted...)
	})
}

func (r *wireRecorder) entry(gen int, dir string, body func([]byte) []byte) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := append(r.buf[:0], `{"t":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","gen":`...)
	b = strconv.AppendInt(b, int64(gen), 10)
	b = append(b, `,"dir":"`...)
	b = append(b, dir...)
	b = append(b, '"')
	b = body(b)
	b = append(b, "}\n"...)
	_, _ = r.w.Write(b)
	r.buf = b
}

// stderrLines splits stderr chunks into lines for the wireRecorder.
type stderrLines struct {
	rec     *wireRecorder
	gen     int
	partial []byte
}

func (s *stderrLines) Write(p []byte) (int, error) {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		s.rec.line(s.gen, "stderr", bytes.TrimRight(s.partial[:i], "\r"))
		s.partial = s.partial[i+1:]
	}
}
