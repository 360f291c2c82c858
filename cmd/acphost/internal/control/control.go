// Package control is the control socket of a running acphost chat: other
// acphost processes (acphost cancel, --resume ID -p TEXT --no-wait) reach
// it to cancel its turn or queue a prompt. The socket is a unix-domain
// socket in the private run directory under the state directory; the peer
// is not trusted (see Server).
package control

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/acphost/acphost/cmd/acphost/internal/state"
)

// The control socket lets other acphost processes reach a running chat:
// acphost cancel asks it to cancel its turn, acphost --resume ID -p TEXT
// --no-wait hands it a prompt to queue. It is a unix-domain socket in
// <state dir>/run (mode 0700, the user's own), named at random, its path
// kept in the session's record and removed at exit. The protocol is one
// JSON line each way per connection: a Request, then a
// Reply. The peer is not trusted: a request line is bounded, one
// request is read per connection, the whole exchange has a deadline, few
// connections are served at once, and on Linux a peer of another uid is
// refused (SO_PEERCRED) even though the directory already keeps others out.

// Control operations.
const (
	OpCancel = "cancel"
	OpPrompt = "prompt"
)

const (
	// MaxQueuedPrompt bounds a prompt handed over with --no-wait.
	MaxQueuedPrompt = 1 << 20
	// MaxLine bounds a request line: a prompt at its bound, JSON
	// escaped (at worst 6 bytes a byte), and the rest of the request.
	MaxLine = 6*MaxQueuedPrompt + 4096
	// controlConns is how many connections are served at once; more are
	// closed unanswered.
	controlConns = 4
	// Deadline bounds one exchange, on either side.
	Deadline = 10 * time.Second
)

// Request is what a client asks. Session is the session the client
// means: a chat that has moved on to another one refuses.
type Request struct {
	Op      string `json:"op"`
	Session string `json:"session"`
	Text    string `json:"text,omitempty"` // opPrompt
}

// Reply answers a request: Error says why it was refused; Running
// (opCancel) whether a turn was running and is being cancelled; Queued
// (opPrompt) the prompt's place in the queue.
type Reply struct {
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
	Running bool   `json:"running,omitempty"`
	Queued  int    `json:"queued,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// Ending: the chat is ending and takes no more requests.
	Ending bool `json:"ending,omitempty"`
}

// ErrAgentPeer is the refusal of a control connection from a process that
// is not the person's: one an acphost agent runs, or one that cannot be
// told apart from one (Linux; see personPeer).
var ErrAgentPeer = errors.New("control socket: refused: the peer is not the person's process")

// Server serves a chat's control socket.
type Server struct {
	// Path is the socket's path, for the session's record.
	Path     string
	ln       net.Listener
	handle   func(Request) Reply
	deadline atomic.Int64 // time.Duration; tests shorten it
	sem      chan struct{}

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// RunDir is the directory of the control sockets, created private.
func RunDir(stateDir string) (string, error) {
	dir := filepath.Join(stateDir, "run")
	if err := state.PrivateDir(dir); err != nil {
		return "", err
	}
	if err := state.CheckPrivateDir(stateDir); err != nil {
		return "", err
	}
	return dir, nil
}

// Listen opens a control socket in stateDir's run directory, first
// removing the sockets there that nobody listens on any more, and serves
// it until Close. handle answers each request; it runs on a goroutine of
// the server's, one per connection, several at once.
func Listen(stateDir string, handle func(Request) Reply) (*Server, error) {
	dir, err := RunDir(stateDir)
	if err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	sweepStaleSockets(dir)
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("control socket: %w", err)
	}
	path := filepath.Join(dir, hex.EncodeToString(b[:])+".sock")
	var ln net.Listener
	err = viaDir(path, func(addr string) (err error) {
		ln, err = net.Listen("unix", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false) // Close removes Path: the bound address may name a descriptor closed since
	}
	_ = os.Chmod(path, 0o600) // the directory is what keeps others out
	s := &Server{Path: path, ln: ln, handle: handle,
		sem: make(chan struct{}, controlConns), conns: map[net.Conn]struct{}{}}
	s.deadline.Store(int64(Deadline))
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// staleSocketAge is how old a socket that refuses connections must be to
// be swept: a new one refuses them between its bind and its listen.
const staleSocketAge = time.Minute

// sweepStaleSockets removes the sockets in dir that refuse connections:
// those of acphost processes that ended without removing theirs.
func sweepStaleSockets(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sock") || e.Type()&fs.ModeSocket == 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < staleSocketAge {
			continue // perhaps bound a moment ago, and about to listen
		}
		c, err := dial(p, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			os.Remove(p)
		}
	}
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // EMFILE and the like: back off, not a synchronisation
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			c.Close() // too many at once
			continue
		}
		if !s.track(c) {
			<-s.sem
			c.Close()
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() { <-s.sem }()
			defer s.untrack(c)
			s.serveConn(c)
		}()
	}
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	c.Close()
}

// serveConn reads one request and answers it.
func (s *Server) serveConn(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(time.Duration(s.deadline.Load())))
	reply := func(r Reply) {
		r.PID = os.Getpid()
		b, _ := json.Marshal(r)
		_, _ = c.Write(append(b, '\n'))
	}
	peerErr := personPeer(c)
	if peerErr != nil && !errors.Is(peerErr, ErrAgentPeer) {
		return // another user's
	}
	line, err := readLine(c, MaxLine)
	if peerErr != nil {
		// The same user: say why (it may be the person after all), once
		// the request is in, so that the refusal is what the client reads.
		reply(Reply{Error: peerErr.Error()})
		return
	}
	if err != nil {
		if errors.Is(err, errLineTooLong) {
			reply(Reply{Error: fmt.Sprintf("request over %d bytes", MaxLine)})
		}
		return
	}
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		reply(Reply{Error: "malformed request"})
		return
	}
	if req.Op == OpPrompt && len(req.Text) > MaxQueuedPrompt {
		reply(Reply{Error: fmt.Sprintf("prompt over %d bytes", MaxQueuedPrompt)})
		return
	}
	reply(s.handle(req))
}

var errLineTooLong = errors.New("line too long")

// readLine reads up to and without the first newline, refusing a line of
// more than limit bytes without reading it all.
func readLine(r io.Reader, limit int) ([]byte, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, int64(limit)+1), 64<<10)
	line, err := br.ReadBytes('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case err == io.EOF && len(line) > limit:
		return nil, errLineTooLong
	case err == io.EOF && len(line) > 0:
		return line, nil // the peer closed its side after the request
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

// Close stops serving, ends the connections being served, waits for
// their goroutines and removes the socket.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.ln.Close()
	s.wg.Wait()
	os.Remove(s.Path)
}

// dial connects to the control socket at path, however long the path.
func dial(path string, timeout time.Duration) (c net.Conn, err error) {
	err = viaDir(path, func(addr string) error {
		c, err = net.DialTimeout("unix", addr, timeout)
		return err
	})
	return c, err
}

// ErrNoController is a control socket that is missing or that nobody
// listens on: the acphost that made it is gone.
var ErrNoController = errors.New("no acphost process is listening")

// Ask sends req to the control socket at path and returns the
// reply. It never signals anything: a socket that is gone, or refuses,
// is errNoController.
func Ask(path string, req Request) (Reply, error) {
	var rep Reply
	if path == "" {
		return rep, ErrNoController
	}
	dir := filepath.Dir(path)
	if err := state.CheckPrivateDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return rep, ErrNoController
		}
		return rep, err
	}
	c, err := dial(path, Deadline)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return rep, ErrNoController
		}
		return rep, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Deadline))
	if err := samePeer(c); err != nil {
		return rep, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return rep, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return rep, fmt.Errorf("control socket %s: %w", path, err)
	}
	line, err := readLine(c, 64<<10)
	if err != nil {
		return rep, fmt.Errorf("control socket %s: no answer: %w", path, err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("control socket %s: malformed answer", path)
	}
	if !rep.OK {
		if rep.Error == "" {
			rep.Error = "refused"
		}
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// Answers reports whether an acphost listens on the control socket
// path (in a private directory): a connection is made and closed.
func Answers(path string) bool {
	if state.CheckPrivateDir(filepath.Dir(path)) != nil {
		return false
	}
	c, err := dial(path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
