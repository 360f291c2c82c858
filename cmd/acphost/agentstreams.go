package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// agentStreams is where the agent's stderr and its wire (--record) go.
// open sets it up before the agent starts; the library's goroutines write
// to it, and any goroutine reads its tail and whether the recording was
// cut.
type agentStreams struct {
	tail      stderrTail        // the agent's stderr, last bytes, when it goes nowhere else (no --stderr)
	log       io.Writer         // where --stderr - sends the agent's stderr when not os.Stderr (a background acphost's bounded log)
	recording *boundedRecording // --record's file, nil without it
}

// open opens what --stderr and --record name (stderrPath "" keeps the
// tail; "-" is this process's stderr) and returns the writers for
// ACPOptions.Process.Stderr and Record (nil without --record), and what closes
// the files, once the agent is closed.
func (s *agentStreams) open(stderrPath, recordPath string) (stderr, record io.Writer, closer io.Closer, err error) {
	switch stderrPath {
	case "":
		stderr = &s.tail
	case "-":
		stderr = os.Stderr
		if s.log != nil {
			stderr = s.log
		}
	default:
		f, err := state.OpenOutput(stderrPath, true)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("--stderr: %w", err)
		}
		stderr, closer = f, f
	}
	if recordPath != "" {
		f, err := openRecording(recordPath)
		if err != nil {
			if closer != nil {
				closer.Close()
			}
			return nil, nil, nil, fmt.Errorf("--record: %w", err)
		}
		s.recording = &boundedRecording{w: f, left: maxRecordBytes}
		record = s.recording
		closer = closers{closer, f}
	}
	return stderr, record, closer, nil
}

// recordingCut reports whether --record stopped at its bound.
func (s *agentStreams) recordingCut() bool {
	r := s.recording
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// openRecording opens --record's file: created 0600, no link followed,
// and, when it exists, only a regular file of the user's own (made 0600),
// never another user's or a FIFO (whose open would wait for a reader).
func openRecording(path string) (*os.File, error) { return state.OpenOutput(path, false) }

// maxRecordBytes bounds a --record file: a flooding agent must not fill
// the disk.
const maxRecordBytes = 1 << 30

// boundedRecording is the --record file: whole entries (one per Write, as
// the library writes them) until max bytes, then nothing, so what is kept
// still replays.
type boundedRecording struct {
	mu   sync.Mutex
	w    io.Writer
	left int64
	cut  bool
}

func (r *boundedRecording) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cut || int64(len(p)) > r.left {
		r.cut = true
		return len(p), nil
	}
	r.left -= int64(len(p))
	return r.w.Write(p)
}

// closers closes each of its non-nil members.
type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
