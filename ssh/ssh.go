// Package ssh runs an agent on another machine over SSH, as an
// acphost.Transport:
//
//	t := &ssh.Transport{Addr: "devbox:22", User: "me",
//		Command: "npx", Args: []string{"-y", "@agentclientprotocol/claude-agent-acp"}}
//	c, err := acphost.Start(ctx, acphost.ACPOptions{Transport: t, Dir: "/home/me/project"})
//
// Each Dial opens one SSH connection with two sessions on it: the agent,
// whose environment carries a random mark every process it starts
// inherits, and a watchdog that reads a stdin the host never writes. When
// the watchdog's stdin ends — the host stopped the agent, the link
// dropped, the host died — it sends SIGTERM to every process carrying the
// mark on the remote host, and SIGKILL two seconds later, whatever became
// of the host and whatever the agent does with its own stdin. The remote
// host needs sh, /proc, tr, grep, sleep and kill (any Linux). The
// connection is checked with keepalives, so a link that stalls ends as a
// lost link, like one that drops.
//
// Host keys are verified against known_hosts files; an unknown host or a
// changed key refuses the dial (ErrUnknownHost, ErrHostKeyMismatch)
// unless InsecureIgnoreHostKey is set. Authentication uses private key
// files and an ssh-agent.
package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/remote"
)

// Errors of a dial, wrapped in the *acphost.LinkError it returns (Op
// "dial"). Match them with errors.Is.
var (
	// ErrUnknownHost: the host's key is in no known_hosts file.
	ErrUnknownHost = errors.New("ssh: host key unknown")
	// ErrHostKeyMismatch: the host presented a key other than the one
	// known_hosts has for it (or one that is revoked).
	ErrHostKeyMismatch = errors.New("ssh: host key mismatch")
	// ErrAuth: the server accepted none of the offered credentials, or
	// none could be loaded.
	ErrAuth = errors.New("ssh: authentication failed")
)

// Transport runs an agent on a remote host over SSH. Its fields are read
// at each Dial; do not change them while a client uses it. The zero value
// of every field but Addr and Command is a documented default.
type Transport struct {
	// Addr is the server: "host" or "host:port" (port 22 by default).
	Addr string
	// User logs in. Default: $USER.
	User string

	// Command and Args run the agent on the remote host, through the
	// login shell, after a prelude that sets Env (see the package doc).
	Command string
	Args    []string
	// Env is set for the agent ("KEY=value", one line each). It travels on
	// the session's stdin, not on the command line, so it does not show
	// in the remote process list.
	Env []string
	// Dir is where the agent process starts. Default: the login
	// directory. (ACPOptions.Dir is the session's directory, sent in
	// session/new; usually the same.)
	Dir string
	// SharedFiles says the remote host sees the host's files at the same
	// paths (the same machine, a shared home): the link then promises
	// HostFiles, so ACPOptions.FS and Terminal may serve the agent. Leave
	// it false for a machine of its own: fs/* would read and write the
	// host's files where the agent means its own.
	SharedFiles bool

	// IdentityFiles are private keys to offer (OpenSSH or PEM format,
	// unencrypted; keep encrypted keys in an agent).
	IdentityFiles []string
	// AgentSocket is an ssh-agent's socket whose keys are offered too.
	// Default: $SSH_AUTH_SOCK when it is set.
	AgentSocket string
	// KnownHostsFiles verify the host's key. Default: ~/.ssh/known_hosts.
	KnownHostsFiles []string
	// InsecureIgnoreHostKey accepts any host key: anyone on the path can
	// then pose as the host and read the session. For throwaway hosts.
	InsecureIgnoreHostKey bool

	// KeepAlive is the interval of keepalive requests; one not answered
	// within it ends the link with a *acphost.LinkError (Op "keepalive").
	// Default 15s; negative: none (a stalled link then goes unnoticed
	// until TCP gives up).
	KeepAlive time.Duration
	// DialTimeout bounds connecting and the SSH handshake. Default 15s.
	DialTimeout time.Duration

	containment remote.Containment // the last Dial's, under containmentMu
}

// containmentMu guards every Transport's containment (a Transport may be
// copied before its first Dial: a mutex of its own would be copied too).
var containmentMu sync.Mutex

// Containment says how the remote side held the agent of the last Dial
// that succeeded: "pid namespace" (the agent is the init of a PID
// namespace of its own: whatever it starts ends with it) or "mark" (its
// processes are found by the mark in their environment; one that drops
// it escapes); "" before any. See the package doc.
func (t *Transport) Containment() string {
	containmentMu.Lock()
	defer containmentMu.Unlock()
	return string(t.containment)
}

// promises: a remote process reached over one SSH session.
var promises = acphost.Promises{Transport: "ssh", Stderr: true, ExitStatus: true, GroupKill: true, Redial: true}

// Dial connects, authenticates, starts the watchdog and the agent and
// returns the agent's link. The whole dial is bounded by ctx and
// DialTimeout. Every failure is a *acphost.LinkError (Op "dial").
func (t *Transport) Dial(ctx context.Context) (acphost.Link, error) {
	if t.Command == "" {
		return nil, dialError(errors.New("Transport.Command is empty"))
	}
	cmds, err := remote.NewCommands(append([]string{t.Command}, t.Args...), t.Env, t.Dir)
	if err != nil {
		return nil, dialError(err)
	}
	ctx, cancel := context.WithTimeout(ctx, t.dialTimeout())
	defer cancel()
	client, err := t.connect(ctx)
	if err != nil {
		return nil, dialError(err)
	}
	// Until the link is handed over, ctx ending closes the connection,
	// which ends any step still waiting on the server.
	abandon := context.AfterFunc(ctx, func() { client.Close() })
	l, err := start(ctx, client, cmds)
	if !abandon() || err != nil {
		if l != nil {
			l.Stop(0)
		}
		client.Close()
		if err == nil || ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		return nil, dialError(err)
	}
	l.promises.HostFiles = t.SharedFiles
	l.keepAlive(t.keepAlive())
	containmentMu.Lock()
	t.containment = l.containment
	containmentMu.Unlock()
	return l, nil
}

func dialError(err error) error {
	return &acphost.LinkError{Transport: "ssh", Op: "dial", Err: err}
}

func (t *Transport) dialTimeout() time.Duration {
	if t.DialTimeout <= 0 {
		return 15 * time.Second
	}
	return t.DialTimeout
}

func (t *Transport) keepAlive() time.Duration {
	switch {
	case t.KeepAlive < 0:
		return 0
	case t.KeepAlive == 0:
		return 15 * time.Second
	}
	return t.KeepAlive
}

func (t *Transport) addr() string {
	if _, _, err := net.SplitHostPort(t.Addr); err == nil {
		return t.Addr
	}
	return net.JoinHostPort(t.Addr, "22")
}

// connect dials and runs the SSH handshake, bounded by ctx and
// DialTimeout. When the host is known by a key of another type than the
// one it offered first, it dials again asking for the known types.
func (t *Transport) connect(ctx context.Context) (*ssh.Client, error) {
	config, closeAgent, err := t.config()
	if err != nil {
		return nil, err
	}
	defer closeAgent() // the agent signs during the handshake, so only after it
	client, err := handshake(ctx, t.addr(), config)
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) && len(ke.Want) > 0 && config.HostKeyAlgorithms == nil {
		config.HostKeyAlgorithms = knownTypes(ke)
		client, err = handshake(ctx, t.addr(), config)
	}
	return client, hostKeyError(err)
}

func handshake(ctx context.Context, addr string, config *ssh.ClientConfig) (*ssh.Client, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if !stop() {
		if err == nil {
			c.Close()
		}
		return nil, ctx.Err()
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

func knownTypes(ke *knownhosts.KeyError) []string {
	var types []string
	for _, k := range ke.Want {
		switch typ := k.Key.Type(); typ {
		case ssh.KeyAlgoRSA:
			types = append(types, ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA)
		default:
			types = append(types, typ)
		}
	}
	return types
}

// hostKeyError maps the host key checks' errors to ours.
func hostKeyError(err error) error {
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &ke) && len(ke.Want) == 0:
		return fmt.Errorf("%w: add it to known_hosts (ssh-keyscan) or set InsecureIgnoreHostKey", ErrUnknownHost)
	case errors.As(err, &ke), errors.As(err, &re):
		return fmt.Errorf("%w: %s", ErrHostKeyMismatch, hostKeyDetail(err))
	case err != nil && isAuthError(err):
		return fmt.Errorf("%w: %v", ErrAuth, err)
	}
	return err
}

func hostKeyDetail(err error) string {
	var ke *knownhosts.KeyError
	if errors.As(err, &ke) && len(ke.Want) > 0 {
		return "known_hosts has another key at " + ke.Want[0].Filename + ":" + strconv.Itoa(ke.Want[0].Line)
	}
	return err.Error()
}

func isAuthError(err error) bool {
	var se *ssh.ServerAuthError
	return errors.As(err, &se) || strings.Contains(err.Error(), "unable to authenticate")
}

// config is the client configuration; closeAgent ends the connection to
// the ssh-agent, once the handshake is over.
func (t *Transport) config() (config *ssh.ClientConfig, closeAgent func(), err error) {
	user := t.User
	if user == "" {
		user = os.Getenv("USER")
	}
	hostKey, err := t.hostKeyCallback()
	if err != nil {
		return nil, nil, err
	}
	auth, closeAgent, err := t.auth()
	if err != nil {
		return nil, nil, err
	}
	return &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: hostKey, ClientVersion: "SSH-2.0-acphost_" + acphost.Version}, closeAgent, nil
}

func (t *Transport) auth() ([]ssh.AuthMethod, func(), error) {
	var signers []ssh.Signer
	for _, f := range t.IdentityFiles {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrAuth, err)
		}
		s, err := ssh.ParsePrivateKey(pem)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: %v", ErrAuth, f, err)
		}
		signers = append(signers, s)
	}
	methods := []ssh.AuthMethod{}
	if len(signers) > 0 {
		methods = append(methods, ssh.PublicKeys(signers...))
	}
	closeAgent := func() {}
	sock := t.AgentSocket
	if sock == "" {
		sock = os.Getenv("SSH_AUTH_SOCK")
	}
	if sock != "" {
		// The agent's signers sign through this connection during the
		// handshake: it stays open until connect is done with it.
		var conn net.Conn
		methods = append(methods, ssh.PublicKeysCallback(func() ([]ssh.Signer, error) {
			c, err := net.Dial("unix", sock)
			if err != nil {
				return nil, err
			}
			conn = c
			return agent.NewClient(c).Signers()
		}))
		closeAgent = func() {
			if conn != nil {
				conn.Close()
			}
		}
	}
	if len(methods) == 0 {
		return nil, nil, fmt.Errorf("%w: no IdentityFiles and no ssh-agent (SSH_AUTH_SOCK)", ErrAuth)
	}
	return methods, closeAgent, nil
}

func (t *Transport) hostKeyCallback() (ssh.HostKeyCallback, error) {
	if t.InsecureIgnoreHostKey {
		return ssh.InsecureIgnoreHostKey(), nil
	}
	files := t.KnownHostsFiles
	if len(files) == 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%w: no KnownHostsFiles and no home directory", ErrUnknownHost)
		}
		files = []string{filepath.Join(home, ".ssh", "known_hosts")}
	}
	cb, err := knownhosts.New(files...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnknownHost, err)
	}
	return cb, nil
}

// link is the agent's session and its watchdog's, on their own
// connection.
type link struct {
	client      *ssh.Client
	sess        *ssh.Session // the agent's
	watchdog    *ssh.Session
	watchIn     io.WriteCloser // its script and mark, then nothing; closing it ends the agent's tree
	containment remote.Containment
	stdin       io.WriteCloser
	stdout      io.Reader
	stderr      io.Reader

	done    chan struct{}
	endOnce sync.Once
	err     error

	// writes in flight and whether Stop began: x/crypto's CloseWrite must
	// not run while a Write is in flight (it writes the channel's EOF
	// state unguarded), so Stop then closes the session instead.
	wmu      sync.Mutex
	writing  int
	stopping bool

	quit     chan struct{} // stops the keepalive
	wg       sync.WaitGroup
	promises acphost.Promises

	fmu      sync.Mutex
	forwards map[string]string // ForwardHost: host address -> the remote one
}

// start opens the watchdog's session first (so that nothing the agent
// starts can outlive the link), then the agent's, held the way the
// watchdog found the remote side allows, and writes the agent's
// environment header.
func start(ctx context.Context, client *ssh.Client, cmds remote.Commands) (*link, error) {
	watchdog, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	watchIn, err := watchdog.StdinPipe()
	if err != nil {
		return nil, err
	}
	watchOut, err := watchdog.StdoutPipe()
	if err != nil {
		return nil, err
	}
	argv, input := cmds.HiddenWatchdog()
	if err := watchdog.Start(remote.CommandLine(argv)); err != nil {
		return nil, fmt.Errorf("starting the watchdog: %w", err)
	}
	if _, err := watchIn.Write(input); err != nil {
		return nil, fmt.Errorf("starting the watchdog: %w", err)
	}
	// The agent starts only once its watchdog waits.
	how, err := remote.AwaitContainment(ctx, watchOut)
	if err != nil {
		return nil, err
	}
	sess, err := client.NewSession()
	if err != nil {
		return nil, err
	}
	l := &link{client: client, sess: sess, watchdog: watchdog, watchIn: watchIn, containment: how,
		done: make(chan struct{}), quit: make(chan struct{}), promises: promises}
	if l.stdin, err = sess.StdinPipe(); err != nil {
		return nil, err
	}
	if l.stdout, err = sess.StdoutPipe(); err != nil {
		return nil, err
	}
	if l.stderr, err = sess.StderrPipe(); err != nil {
		return nil, err
	}
	if err := sess.Start(remote.CommandLine(cmds.ContainedAgent(how))); err != nil {
		return nil, err
	}
	l.wg.Add(2)
	go l.waitSession()
	go l.waitConnection()
	if _, err := l.stdin.Write(cmds.Header); err != nil {
		return l, err
	}
	return l, nil
}

// waitSession turns the session's end into the link's: an exit status
// is the agent's end; a session closed without one is the link's.
func (l *link) waitSession() {
	defer l.wg.Done()
	err := l.sess.Wait()
	var ee *ssh.ExitError
	switch {
	case err == nil:
		l.end(&acphost.ExitError{ExitCode: 0})
	case errors.As(err, &ee):
		e := &acphost.ExitError{ExitCode: ee.ExitStatus(), Err: errors.New(ee.Msg())}
		if ee.Signal() != "" {
			e.ExitCode, e.Signal = -1, ee.Signal()
		}
		l.end(e)
	default:
		l.end(&acphost.LinkError{Transport: "ssh", Op: "closed", Err: err})
	}
}

// waitConnection ends the link as soon as the connection does (a
// dropped TCP connection, a server that went away).
func (l *link) waitConnection() {
	defer l.wg.Done()
	err := l.client.Wait()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	l.end(&acphost.LinkError{Transport: "ssh", Op: "read", Err: err})
}

func (l *link) end(err error) {
	l.endOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// keepAlive sends keepalive@openssh.com every interval; a reply missing
// for an interval ends the link and closes the connection.
func (l *link) keepAlive(interval time.Duration) {
	if interval <= 0 {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-l.quit:
				return
			case <-l.done:
				return
			case <-tick.C:
			}
			if !l.ping(interval) {
				l.end(&acphost.LinkError{Transport: "ssh", Op: "keepalive", Err: fmt.Errorf("no keepalive reply within %v", interval)})
				l.client.Close()
				return
			}
		}
	}()
}

func (l *link) ping(within time.Duration) bool {
	reply := make(chan error, 1)
	l.wg.Add(1) // Stop closes the connection, which ends the request, then waits
	go func() {
		defer l.wg.Done()
		_, _, err := l.client.SendRequest("keepalive@openssh.com", true, nil)
		reply <- err
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case err := <-reply:
		return err == nil
	case <-t.C:
		return false
	case <-l.quit:
		return true
	}
}

func (l *link) Read(p []byte) (int, error) { return l.stdout.Read(p) }
func (l *link) Write(p []byte) (int, error) {
	l.wmu.Lock()
	if l.stopping {
		l.wmu.Unlock()
		return 0, errStopped
	}
	l.writing++
	l.wmu.Unlock()
	defer func() {
		l.wmu.Lock()
		l.writing--
		l.wmu.Unlock()
	}()
	return l.stdin.Write(p)
}

var errStopped = errors.New("ssh: link stopped")

func (l *link) Stderr() io.Reader     { return l.stderr }
func (l *link) Done() <-chan struct{} { return l.done }
func (l *link) Err() error            { return l.err }

func (l *link) Promises() acphost.Promises { return l.promises }

// Stop closes the agent's stdin (EOF) and waits up to grace for its end,
// asks the session for SIGTERM where the server honours signals, then
// closes the watchdog's stdin — which sends SIGTERM to every process of
// the agent's tree on the remote host and SIGKILL two seconds later —
// and closes the connection once the watchdog is done or a further grace
// has passed. A Write blocked meanwhile ends with the session.
func (l *link) Stop(grace time.Duration) {
	l.wmu.Lock()
	l.stopping = true
	inFlight := l.writing > 0
	l.wmu.Unlock()
	if inFlight {
		l.sess.Close() // a Write is blocked: the agent is not reading anyway
	} else {
		l.stdin.Close()
	}
	if !l.waitDone(grace) {
		_ = l.sess.Signal(ssh.SIGTERM)
	}
	l.watchIn.Close()
	watched := make(chan struct{})
	go func() {
		l.watchdog.Wait()
		close(watched)
	}()
	t := time.NewTimer(remote.WatchdogWait(grace))
	select {
	case <-watched:
	case <-t.C:
	}
	t.Stop()
	close(l.quit)
	l.sess.Close()
	l.client.Close()
	<-watched
	l.wg.Wait()
}

func (l *link) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-l.done:
		return true
	case <-t.C:
		return false
	}
}

// LoginDir connects as Dial does and returns the login directory of the
// remote user: a default for ACPOptions.Dir when the caller has none.
func (t *Transport) LoginDir(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, t.dialTimeout())
	defer cancel()
	client, err := t.connect(ctx)
	if err != nil {
		return "", dialError(err)
	}
	defer client.Close()
	// ctx ending closes the connection, which ends any step still waiting
	// on the server (the channel open included), as in Dial.
	stop := context.AfterFunc(ctx, func() { client.Close() })
	defer stop()
	sess, err := client.NewSession()
	if err != nil {
		return "", dialError(err)
	}
	defer sess.Close()
	out, err := sess.Output("pwd")
	if err != nil {
		return "", dialError(fmt.Errorf("pwd: %w", err))
	}
	dir := strings.TrimSpace(string(out))
	if !strings.HasPrefix(dir, "/") {
		return "", dialError(fmt.Errorf("pwd printed %q", dir))
	}
	return dir, nil
}
