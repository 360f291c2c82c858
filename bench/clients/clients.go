// Package clients drives the flood agent with three ACP clients that do the
// same work: acphost through its public API, the Go SDK
// github.com/coder/acp-go-sdk, and "the limit", a raw client that reads
// lines with a bufio.Reader and decodes only each JSON-RPC envelope.
//
// Per update every client counts it, optionally spins for Options.Spin (a
// slow consumer) and, for permission requests, answers the first
// allow_once option.
package clients

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/acphost/acphost/bench/flood"
)

// Names of the clients.
const (
	ACPHost = "acphost"
	SDK     = "sdk"
	Limit   = "limit"
)

// Names lists the clients in table order.
var Names = []string{ACPHost, SDK, Limit}

// Client is one warm client with an open session.
type Client interface {
	// Turn sends prompt and returns once the turn's answer (and, for the
	// libraries, every update before it) has been handled. When ctx ends
	// the client cancels the turn its own way.
	Turn(ctx context.Context, prompt string) (Result, error)
	// Close ends the agent.
	Close() error
}

// Result is what a turn produced.
type Result struct {
	StopReason string
	// Updates counts the session/update notifications handled during the
	// turn (message chunks and tool call updates).
	Updates int64
	// Text is the turn's answer text (acphost's Response.Text; the limit
	// keeps it too; the SDK client does not).
	Text string
	// Meta is the flood agent's _meta.flood, when the client saw the answer.
	Meta    flood.Meta
	HasMeta bool
}

// Options configure a client.
type Options struct {
	// Agent and Args start the agent as a subprocess (Start).
	Agent string
	Args  []string
	// Spin is busy work done per update, to make a slow consumer.
	Spin time.Duration
	// MaxQueuedUpdates is passed to acphost (0: its default).
	MaxQueuedUpdates int
}

// Start spawns the agent and returns the named client, initialized with a
// session open.
func Start(ctx context.Context, name string, opts Options) (Client, error) {
	switch name {
	case ACPHost:
		return startACPHost(ctx, opts)
	case SDK:
		p, err := spawn(opts)
		if err != nil {
			return nil, err
		}
		c, err := newSDK(ctx, p.stdout, p.stdin, p, opts)
		if err != nil {
			p.Close()
			return nil, err
		}
		return c, nil
	case Limit:
		p, err := spawn(opts)
		if err != nil {
			return nil, err
		}
		c, err := newLimit(ctx, p.stdout, p.stdin, p, opts)
		if err != nil {
			p.Close()
			return nil, err
		}
		return c, nil
	}
	return nil, errors.New("clients: unknown client " + name)
}

// Connect returns the named client over an agent that writes r and reads w
// (an in-process agent); Close closes closer.
func Connect(ctx context.Context, name string, r io.Reader, w io.Writer, closer io.Closer, opts Options) (Client, error) {
	switch name {
	case ACPHost:
		return connectACPHost(ctx, r, w, closer, opts)
	case SDK:
		return newSDK(ctx, r, w, closer, opts)
	case Limit:
		return newLimit(ctx, r, w, closer, opts)
	}
	return nil, errors.New("clients: unknown client " + name)
}

// counter counts updates; the handler goroutine adds, Turn reads.
type counter struct {
	n    atomic.Int64
	spin time.Duration
}

func (c *counter) update() {
	c.n.Add(1)
	if c.spin > 0 {
		Spin(c.spin)
	}
}

// Spin busy-waits for d.
func Spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

// proc is an agent subprocess for the SDK and the limit; exec drains its
// stderr.
type proc struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
}

func spawn(opts Options) (*proc, error) {
	cmd := exec.Command(opts.Agent, opts.Args...)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, io.Discard
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	inR.Close()
	outW.Close()
	return &proc{cmd: cmd, stdin: inW, stdout: outR}, nil
}

// Close closes stdin and stdout (an agent blocked writing to a client
// that stopped reading then fails), waits up to 2 s for the exit, then
// kills.
func (p *proc) Close() error {
	p.stdin.Close()
	p.stdout.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	return nil
}

// Kill ends the process at once (for a client whose connection failed).
func (p *proc) Kill() {
	p.cmd.Process.Kill()
}
