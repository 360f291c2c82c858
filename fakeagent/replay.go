package fakeagent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrReplayDiverged is wrapped by the error [Replay.Serve] returns when the host did not
// follow the recording: it sent a message the recording does not expect, or it closed its
// output before sending every message the recording expects.
var ErrReplayDiverged = errors.New("fakeagent: host diverged from the recording")

// Directions of a [RecordEntry].
const (
	DirSend   = "send"   // host → agent message, in Msg
	DirRecv   = "recv"   // agent → host message, in Msg
	DirStderr = "stderr" // a line the agent wrote to stderr, in Line
	DirSkip   = "skip"   // a line the agent wrote to stdout that is not JSON-RPC, in Line
)

// DefaultLookahead is how many recorded host messages ahead of the next expected one a
// [Replay] searches for a match when Replay.Lookahead is 0.
const DefaultLookahead = 16

// RecordEntry is one line of a wire recording.
type RecordEntry struct {
	Time time.Time       `json:"t"`
	Gen  int             `json:"gen"`            // agent process generation: 1, 2, … after restarts
	Dir  string          `json:"dir"`            // DirSend, DirRecv, DirStderr or DirSkip
	Msg  json.RawMessage `json:"msg,omitempty"`  // the whole JSON-RPC object (send, recv)
	Line string          `json:"line,omitempty"` // the text (stderr, skip)
}

// Recording is a wire recording: the entries of an NDJSON file, in file order.
type Recording struct {
	Entries []RecordEntry
}

// LoadRecording reads and parses the recording file at path; see [ParseRecording].
func LoadRecording(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fakeagent: %w", err)
	}
	defer f.Close()
	rec, err := ParseRecording(f)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return rec, nil
}

// ParseRecording parses a recording: one JSON [RecordEntry] object per line. Blank lines
// are skipped. A last line that is not terminated by a newline and is not valid JSON is
// taken to be cut short (the recorder died mid-write) and ignored. Any other line that is
// not a JSON object, and a send or recv entry without msg, is an error. Entries with an
// unknown dir are kept; a [Replay] ignores them.
func ParseRecording(r io.Reader) (*Recording, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	rec := &Recording{}
	for n := 1; ; n++ {
		line, err := readLine(br, maxLine)
		if err != nil && err != io.EOF {
			return rec, fmt.Errorf("fakeagent: recording line %d: %w", n, err)
		}
		t := bytes.TrimSpace(line)
		if len(t) > 0 {
			if err == io.EOF && !json.Valid(t) {
				return rec, nil // a truncated last line
			}
			if t[0] != '{' {
				return rec, fmt.Errorf("fakeagent: recording line %d: not a JSON object", n)
			}
			var e RecordEntry
			if err := json.Unmarshal(t, &e); err != nil {
				return rec, fmt.Errorf("fakeagent: recording line %d: %w", n, err)
			}
			if (e.Dir == DirSend || e.Dir == DirRecv) && !isSet(e.Msg) {
				return rec, fmt.Errorf("fakeagent: recording line %d: %s entry without msg", n, e.Dir)
			}
			rec.Entries = append(rec.Entries, e)
		}
		if err == io.EOF {
			return rec, nil
		}
	}
}

// Replay is an agent that plays a recording: it writes what the recorded agent wrote and
// answers the host's requests in the recorded order. Create it with [NewReplay] and run it
// with [Replay.Serve].
//
// The entries of one generation are walked in order. A recv entry is written as recorded,
// except that a response to a host request carries the id the host actually used for the
// matching request. A skip entry's line is written to the output and a stderr entry's line
// to Stderr, each followed by "\n". A send entry waits until the host has sent a matching
// message: a request or notification with the same method (params are not compared), or
// a response to the recorded agent request id (the agent's ids are replayed verbatim).
// Everything after a send entry waits for it; there is no other timing.
//
// Concurrent host messages may arrive in another order than recorded: a host message is
// matched to the first send entry it fits that no earlier host message took, among the
// Lookahead send entries starting at the next one expected, and kept until the replay
// reaches that entry. A host message that matches none of them has diverged: a
// request gets the error -32603 "replay diverged" at once, a notification or response is
// dropped, and the replay goes on. After the last entry the replay writes nothing more on
// its own and answers every request with that error until its input ends.
type Replay struct {
	// Stderr receives the lines of stderr entries and a note for each divergence. nil
	// discards them. Set it before calling Serve.
	Stderr io.Writer
	// Lookahead is how many recorded host messages, counted from the next one expected,
	// a host message may be matched against; 0 means [DefaultLookahead]. Set it before
	// calling Serve.
	Lookahead int

	steps []replayStep
	sends []int // indexes in steps of the send entries
	gen   int

	served atomic.Bool
	ctx    context.Context
	out    io.Writer
	wmu    sync.Mutex // serialises writes to out
	errMu  sync.Mutex // serialises writes to Stderr

	mu       sync.Mutex
	pos      int        // index in sends of the next send entry to play
	claims   []*Message // host message matched to each send entry, until it is played
	idMap    map[string]json.RawMessage
	eof      bool
	signal   chan struct{} // closed and replaced when claims or eof change
	diverged []string
}

// replayStep is one entry of the generation being replayed.
type replayStep struct {
	dir  string
	msg  Message // parsed Msg (send, recv)
	ok   bool    // msg is a JSON-RPC message
	raw  []byte  // Msg as recorded (recv)
	line string  // stderr, skip
}

// NewReplay returns an agent that plays generation gen of rec; gen 0 means the first
// generation that appears in the recording (normally 1). It does nothing until
// [Replay.Serve] is called.
func NewReplay(rec *Recording, gen int) *Replay {
	var entries []RecordEntry
	if rec != nil {
		entries = rec.Entries
	}
	if gen <= 0 && len(entries) > 0 {
		gen = entries[0].Gen
	}
	var steps []replayStep
	for _, e := range entries {
		if e.Gen != gen {
			continue
		}
		st := replayStep{dir: e.Dir, line: e.Line}
		switch e.Dir {
		case DirSend:
			if st.msg, st.ok = parseMessage(bytes.TrimSpace(e.Msg)); !st.ok {
				continue // nothing the host could send would match it
			}
		case DirRecv:
			st.raw = bytes.TrimSpace(e.Msg)
			st.msg, st.ok = parseMessage(st.raw)
		case DirStderr, DirSkip:
		default:
			continue
		}
		steps = append(steps, st)
	}
	steps = causalOrder(steps)
	r := &Replay{steps: steps, gen: gen, idMap: map[string]json.RawMessage{}, signal: make(chan struct{})}
	for i, st := range steps {
		if st.dir == DirSend {
			r.sends = append(r.sends, i)
		}
	}
	r.claims = make([]*Message, len(r.sends))
	return r
}

// causalOrder moves a response recorded before the request it answers to just after that
// request, so a recorder that logs a message after writing it cannot make the replay
// answer early or wait for an answer to a request it has not yet made.
func causalOrder(steps []replayStep) []replayStep {
	reqKey := func(st replayStep) string {
		if st.ok && st.msg.Method != "" && st.msg.ID != nil {
			return st.dir + " " + idKey(st.msg.ID)
		}
		return ""
	}
	// A response in one direction answers a request in the other.
	respKey := func(st replayStep) string {
		if !st.ok || st.msg.Method != "" || st.msg.ID == nil {
			return ""
		}
		other := DirSend
		if st.dir == DirSend {
			other = DirRecv
		}
		return other + " " + idKey(st.msg.ID)
	}
	later := map[string]int{} // request key → how many requests with it are still ahead
	for _, st := range steps {
		if k := reqKey(st); k != "" {
			later[k]++
		}
	}
	seen := map[string]bool{}
	held := map[string][]replayStep{}
	out := make([]replayStep, 0, len(steps))
	for _, st := range steps {
		if k := respKey(st); k != "" && !seen[k] && later[k] > 0 {
			held[k] = append(held[k], st)
			continue
		}
		out = append(out, st)
		if k := reqKey(st); k != "" {
			seen[k] = true
			later[k]--
			out = append(out, held[k]...)
			delete(held, k)
		}
	}
	return out
}

// Serve plays the recording as the agent, reading the host's messages from in and writing
// the agent's to out, until in reaches EOF or ctx is done. After EOF the replay still
// writes the entries that do not wait for another host message (a write that blocks holds
// Serve until out accepts or fails it, or ctx ends), then Serve returns: nil
// if the host followed the recording, an error wrapping [ErrReplayDiverged] that lists
// what went wrong if it diverged or left recorded messages unsent. It returns ctx.Err()
// when ctx ends, and an error if reading fails. Write errors stop the replay but are not
// returned (the host may close its end first).
//
// Serve closes nothing it did not open; a read from in that is still blocked when ctx ends
// ends when the caller closes in. Serve may be called once.
func (r *Replay) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	if !r.served.CompareAndSwap(false, true) {
		return errors.New("fakeagent: Serve called twice")
	}
	if r.Lookahead <= 0 {
		r.Lookahead = DefaultLookahead
	}
	pctx := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx, r.out = ctx, out

	played := make(chan struct{})
	go func() {
		defer close(played)
		r.play()
	}()
	readDone := make(chan error, 1)
	go func() { readDone <- r.readLoop(in) }()

	var err error
	select {
	case err = <-readDone:
		r.mu.Lock()
		r.eof = true
		r.notify()
		r.mu.Unlock()
		select {
		case <-played:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
	cancel()
	<-played
	switch {
	case pctx.Err() != nil:
		return pctx.Err()
	case err != nil:
		return fmt.Errorf("fakeagent: read: %w", err)
	}
	return r.result()
}

// result reports the divergences seen, and the recorded host messages never received.
func (r *Replay) result() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	problems := r.diverged
	if r.pos < len(r.sends) {
		problems = append(problems[:len(problems):len(problems)], fmt.Sprintf(
			"input ended with %d recorded host messages not received, the next being %s",
			len(r.sends)-r.pos, describe(r.steps[r.sends[r.pos]].msg)))
	}
	if len(problems) == 0 {
		return nil
	}
	const show = 5
	s := strings.Join(problems[:min(len(problems), show)], "; ")
	if len(problems) > show {
		s += fmt.Sprintf("; and %d more", len(problems)-show)
	}
	return fmt.Errorf("%w (generation %d): %s", ErrReplayDiverged, r.gen, s)
}

// notify wakes the player. r.mu must be held.
func (r *Replay) notify() {
	close(r.signal)
	r.signal = make(chan struct{})
}

func (r *Replay) readLoop(in io.Reader) error {
	return readAllLines(in, func(line []byte) bool {
		if r.ctx.Err() != nil {
			return false
		}
		if m, ok := parseMessage(line); ok {
			r.arrive(m)
		}
		return true
	})
}

// arrive matches a host message to a send entry of the lookahead window, or answers it as
// a divergence.
func (r *Replay) arrive(m Message) {
	r.mu.Lock()
	for k := r.pos; k < len(r.sends) && k < r.pos+r.Lookahead; k++ {
		if r.claims[k] == nil && matches(r.steps[r.sends[k]].msg, m) {
			r.claims[k] = &m
			r.notify()
			r.mu.Unlock()
			return
		}
	}
	note := "unexpected " + describe(m) + ", "
	if r.pos < len(r.sends) {
		note += "expected " + describe(r.steps[r.sends[r.pos]].msg)
	} else {
		note += "after the end of the recording"
	}
	r.diverged = append(r.diverged, note)
	r.mu.Unlock()

	r.stderrLine("fakeagent: replay diverged: " + note)
	if m.Method != "" && m.ID != nil {
		_ = r.write(outMsg{JSONRPC: "2.0", ID: m.ID, Error: &rpcError{Code: codeInternal, Message: "replay diverged"}}, nil)
	}
}

// matches reports whether the host message m can stand for the recorded host message rec.
func matches(rec, m Message) bool {
	switch {
	case rec.Method != "":
		return m.Method == rec.Method && (m.ID != nil) == (rec.ID != nil)
	default:
		return m.Method == "" && m.ID != nil && idKey(m.ID) == idKey(rec.ID)
	}
}

// describe names a message for divergence reports.
func describe(m Message) string {
	switch {
	case m.Method != "" && m.ID != nil:
		return fmt.Sprintf("request %q (id %s)", m.Method, m.ID)
	case m.Method != "":
		return fmt.Sprintf("notification %q", m.Method)
	default:
		return fmt.Sprintf("response to id %s", m.ID)
	}
}

// play walks the steps until the end, until ctx ends, until a write fails, or until it
// needs a host message that can no longer come.
func (r *Replay) play() {
	for _, st := range r.steps {
		switch st.dir {
		case DirSend:
			m, ok := r.await()
			if !ok {
				return
			}
			if m.Method != "" && m.ID != nil {
				r.mu.Lock()
				r.idMap[idKey(st.msg.ID)] = m.ID
				r.mu.Unlock()
			}
		case DirRecv:
			b := st.raw
			if st.ok && st.msg.Method == "" && st.msg.ID != nil {
				r.mu.Lock()
				live, found := r.idMap[idKey(st.msg.ID)]
				r.mu.Unlock()
				if found {
					b = replaceID(b, live)
				}
			}
			if r.write(nil, b) != nil {
				return
			}
		case DirSkip:
			if r.write(nil, []byte(st.line)) != nil {
				return
			}
		case DirStderr:
			r.stderrLine(st.line)
		}
	}
}

// await returns the host message matched to the next send entry, waiting for it. ok is
// false if it can no longer come.
func (r *Replay) await() (m Message, ok bool) {
	for {
		r.mu.Lock()
		if c := r.claims[r.pos]; c != nil {
			r.claims[r.pos] = nil
			r.pos++
			r.mu.Unlock()
			return *c, true
		}
		eof, signal := r.eof, r.signal
		r.mu.Unlock()
		if eof {
			return Message{}, false
		}
		select {
		case <-signal:
		case <-r.ctx.Done():
			return Message{}, false
		}
	}
}

// write writes m, or b if m is nil, as one line. Nothing is written once Serve is ending.
func (r *Replay) write(m any, b []byte) error {
	if m != nil {
		var err error
		if b, err = encodeLine(m); err != nil {
			return err
		}
	} else {
		b = append(append(make([]byte, 0, len(b)+1), b...), '\n')
	}
	r.wmu.Lock()
	defer r.wmu.Unlock()
	if err := r.ctx.Err(); err != nil {
		return err
	}
	_, err := r.out.Write(b)
	return err
}

func (r *Replay) stderrLine(s string) {
	r.errMu.Lock()
	defer r.errMu.Unlock()
	if r.Stderr != nil {
		_, _ = io.WriteString(r.Stderr, s+"\n")
	}
}

// replaceID returns the JSON object msg with its top-level "id" value replaced by id,
// keeping every other byte.
func replaceID(msg []byte, id json.RawMessage) []byte {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return msg
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if t != "id" {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		if start < 0 || !bytes.Equal(msg[start:end], v) {
			break
		}
		out := make([]byte, 0, len(msg)-len(v)+len(id))
		return append(append(append(out, msg[:start]...), id...), msg[end:]...)
	}
	// Not reached for well-formed input; re-encode (key order is lost).
	var fields map[string]json.RawMessage
	if json.Unmarshal(msg, &fields) != nil {
		return msg
	}
	fields["id"] = id
	if b, err := encodeLine(fields); err == nil {
		return bytes.TrimSuffix(b, []byte("\n"))
	}
	return msg
}

// ReplayCommand returns the program, arguments and extra environment (to append to
// os.Environ) that start this same executable as a [Replay] of the recording file at
// recording, generation 1 (the first in the file). The executable must call [Main] at the
// start of main or TestMain. The recording is loaded once here, so that a missing or
// malformed file is reported to the caller, and its path is made absolute. To replay
// another generation, append ACPHOST_FAKEAGENT_REPLAY_GEN=<n> to env. The process writes
// stderr entries to its stderr and exits 0 at stdin EOF, or 1 (after listing the
// problems on stderr) if the host diverged from the recording. Like [Command], env sets
// GORACE=atexit_sleep_ms=0 unless GORACE is set.
func ReplayCommand(recording string) (path string, args []string, env []string, err error) {
	if os.Getenv(envMode) != "" {
		return "", nil, nil, errors.New("fakeagent: ReplayCommand called inside a fake agent process; call fakeagent.Main at the start of main or TestMain")
	}
	abs, err := filepath.Abs(recording)
	if err != nil {
		return "", nil, nil, fmt.Errorf("fakeagent: %w", err)
	}
	if _, err := LoadRecording(abs); err != nil {
		return "", nil, nil, err
	}
	path, err = os.Executable()
	if err != nil {
		return "", nil, nil, fmt.Errorf("fakeagent: %w", err)
	}
	env = []string{envMode + "=" + modeReplay, envRecording + "=" + abs}
	if os.Getenv("GORACE") == "" {
		env = append(env, "GORACE=atexit_sleep_ms=0")
	}
	return path, nil, env, nil
}

// runReplay serves the recording named in the environment and returns the exit code.
func runReplay() int {
	rec, err := LoadRecording(os.Getenv(envRecording))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	gen := 0
	if s := os.Getenv(envReplayGen); s != "" {
		if gen, err = strconv.Atoi(s); err != nil || gen <= 0 {
			fmt.Fprintf(os.Stderr, "fakeagent: bad generation in %s: %q\n", envReplayGen, s)
			return 2
		}
	}
	go keepAlive()
	r := NewReplay(rec, gen)
	r.Stderr = os.Stderr
	if err := r.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
