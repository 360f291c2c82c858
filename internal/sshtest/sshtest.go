//go:build unix

// Package sshtest runs a real OpenSSH sshd on loopback for tests: fresh
// host and user keys in a temporary directory, a free port, public key
// login for the user running the tests.
//
// Without sshd installed the tests that need one skip, saying so — unless
// ACPHOST_REQUIRE_SSHD=1 (as CI sets it), which makes that a failure.
package sshtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/acphost/acphost/internal/testutil"
)

// Server is one sshd listening on 127.0.0.1.
type Server struct {
	Addr       string // 127.0.0.1:port
	User       string // the user the tests run as, who may log in
	Identity   string // the user's private key file
	KnownHosts string // a known_hosts file with the server's key
	HostKey    ssh.PublicKey
	Dir        string

	cmd *exec.Cmd
}

// Start starts an sshd for the test and stops it at the test's end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := sshdPath()
	if bin == "" {
		if os.Getenv("ACPHOST_REQUIRE_SSHD") == "1" {
			t.Fatal("sshd is not installed, and ACPHOST_REQUIRE_SSHD=1 requires it (apt-get install openssh-server)")
		}
		t.Skip("SKIPPED, NOT PASSED: sshd is not installed (apt-get install openssh-server); CI sets ACPHOST_REQUIRE_SSHD=1")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{User: u.Username, Dir: t.TempDir()}
	hostKey := s.writeKey(t, "host_ed25519")
	userKey := s.writeKey(t, "id_ed25519")
	s.HostKey = hostKey
	s.Identity = filepath.Join(s.Dir, "id_ed25519")
	write(t, filepath.Join(s.Dir, "authorized_keys"), ssh.MarshalAuthorizedKey(userKey))
	if os.Geteuid() == 0 {
		// sshd's privilege separation needs its directory.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 0; ; attempt++ {
		port := freePort(t)
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		err := s.run(t, bin, port)
		if err == nil {
			break
		}
		if attempt == 4 {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(s.Dir, "known_hosts"), []byte(knownLine(s.Addr, hostKey)))
	s.KnownHosts = filepath.Join(s.Dir, "known_hosts")
	return s
}

func sshdPath() string {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	return ""
}

// run starts sshd on port and waits (bounded) until it accepts.
func (s *Server) run(t testing.TB, bin string, port int) error {
	config := strings.Join([]string{
		"Port " + strconv.Itoa(port),
		"ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(s.Dir, "host_ed25519"),
		"AuthorizedKeysFile " + filepath.Join(s.Dir, "authorized_keys"),
		"PidFile " + filepath.Join(s.Dir, "sshd.pid"),
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		"StrictModes no",
		"UsePAM no",
		"MaxStartups 200",
		"MaxSessions 200",
		"LogLevel ERROR",
	}, "\n") + "\n"
	cfg := filepath.Join(s.Dir, "sshd_config")
	write(t, cfg, []byte(config))
	cmd := exec.Command(bin, "-D", "-e", "-f", cfg)
	cmd.Stderr = &logWriter{t: t}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("sshd exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("sshd did not listen on %d within 10s", port)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.cmd = cmd
	t.Cleanup(func() {
		s.CutConnections()
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			s.cmd.Process.Kill()
			<-exited
		}
	})
	return nil
}

// CutConnections kills, with SIGKILL, every sshd process serving a
// connection (the listener's descendants named sshd), as a crashed
// server or a dropped network would end them: the sessions' own
// processes are left to what happens to their pipes. It returns how many
// it killed.
func (s *Server) CutConnections() int {
	n := 0
	for _, pid := range testutil.Descendants(s.cmd.Process.Pid) {
		if testutil.Comm(pid) == "sshd" {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}

// Stop kills the listener and every connection: the host is gone.
func (s *Server) Stop() {
	s.cmd.Process.Signal(syscall.SIGSTOP) // accept nothing more meanwhile
	s.CutConnections()
	s.cmd.Process.Kill()
}

// WithEnv lists the running processes (not zombies) whose environment
// has entry ("KEY=value"): how a test finds what it started on the
// "remote" host, wherever it was reparented. (testutil.WithEnv, kept here
// for the tests that reach it through this package.)
func WithEnv(entry string) []int { return testutil.WithEnv(entry) }

func (s *Server) writeKey(t testing.TB, name string) ssh.PublicKey {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir, name)
	write(t, path, pem.EncodeToMemory(block))
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	write(t, path+".pub", ssh.MarshalAuthorizedKey(key))
	return key
}

// KnownLine is a known_hosts line for addr's key.
func knownLine(addr string, key ssh.PublicKey) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(key))
}

// KnownHostsWith writes a known_hosts file that has key for s's address
// (to test a mismatch) and returns its path.
func (s *Server) KnownHostsWith(t testing.TB, key ssh.PublicKey) string {
	path := filepath.Join(t.TempDir(), "known_hosts")
	write(t, path, []byte(knownLine(s.Addr, key)))
	return path
}

// NewKey returns a fresh public key (not the server's).
func NewKey(t testing.TB) ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func write(t testing.TB, path string, b []byte) {
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

type logWriter struct{ t testing.TB }

func (w *logWriter) Write(p []byte) (int, error) {
	w.t.Logf("sshd: %s", strings.TrimSpace(string(p)))
	return len(p), nil
}

// PrivateKeyPEM is a fresh private key in OpenSSH format.
func PrivateKeyPEM(t testing.TB) []byte {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(block)
}
