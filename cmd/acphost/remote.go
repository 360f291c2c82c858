package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/token"
	"github.com/acphost/acphost/ssh"
	"github.com/acphost/acphost/websocket"
)

// remoteFlags are the flags that reach an agent on another machine.
type remoteFlags struct {
	ssh           string   // [user@]host[:port]
	sshIdentity   []string // --ssh-identity FILE (repeatable)
	sshKnownHosts string
	sshInsecure   bool
	url           string // ws:// or wss://: an agent served over WebSocket
	token         string // --token, --token-file, a ?token= in --url, else $ACPHOST_TOKEN
	tokenFile     string // --token-file FILE ("-": stdin)
	kube          state.KubePlace
}

func (r remoteFlags) remote() bool { return r.ssh != "" || r.url != "" || r.kube.Set() }

// checkRemote refuses what a remote agent cannot have: the built-in agent
// (it is this executable, on this machine), confinement and host files.
func checkRemote(cfg *config, stderr io.Writer) error {
	if cfg.remote.url == "" && (cfg.remote.token != "" || cfg.remote.tokenFile != "") {
		return errors.New("--token and --token-file are the bearer token for --url")
	}
	if !cfg.remote.remote() {
		if cfg.remote.sshInsecure || cfg.remote.sshKnownHosts != "" || len(cfg.remote.sshIdentity) > 0 {
			return errors.New("--ssh-identity, --ssh-known-hosts and --ssh-insecure need --ssh")
		}
		return nil
	}
	if cfg.remote.url != "" {
		return checkURL(cfg, stderr)
	}
	if cfg.remote.kube.Set() {
		return checkKube(cfg)
	}
	switch {
	case len(cfg.agent) == 0:
		return errors.New("--ssh runs the agent command given after --, on the remote host")
	case len(cfg.writable) > 0:
		return errors.New("--writable confines a local agent with Landlock; it cannot reach a remote one")
	case cfg.fs:
		return errors.New("--fs serves this machine's files, which a remote agent does not see")
	case cfg.remote.sshInsecure && cfg.remote.sshKnownHosts != "":
		return errors.New("--ssh-insecure and --ssh-known-hosts contradict each other")
	}
	return nil
}

// checkURL: --url reaches an agent someone else runs (acphost serve, a
// sandbox); the session's directory is theirs to name.
func checkURL(cfg *config, stderr io.Writer) error {
	u, err := url.Parse(cfg.remote.url)
	switch {
	case err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "":
		return fmt.Errorf("--url %q: want ws://HOST:PORT/PATH or wss://…", cfg.remote.url)
	case cfg.remote.ssh != "":
		return errors.New("--url and --ssh reach an agent two different ways; pick one")
	case len(cfg.agent) > 0:
		return errors.New("--url reaches an agent the server runs; give no command after --")
	case cfg.cwd == "":
		return errors.New("--url needs --cwd: the session's directory on the agent's machine")
	case len(cfg.writable) > 0 || cfg.fs:
		return errors.New("--writable and --fs act on this machine, which a served agent does not see")
	}
	bare, inURL := token.FromURL(cfg.remote.url, stderr)
	tok, err := token.From("acphost", cfg.remote.token, cfg.remote.tokenFile, stderr)
	if err != nil {
		return err
	}
	if cfg.remote.token == "" && cfg.remote.tokenFile == "" && inURL != "" {
		tok = inURL // the URL's over the environment's: it was given here
	}
	cfg.remote.url, cfg.remote.token = bare, tok
	return nil
}

// sshTransport is the --ssh flags as a transport.
func sshTransport(cfg config) (*ssh.Transport, error) {
	dest := cfg.remote.ssh
	t := &ssh.Transport{Command: cfg.agent[0], Args: cfg.agent[1:], InsecureIgnoreHostKey: cfg.remote.sshInsecure}
	if u, host, ok := strings.Cut(dest, "@"); ok {
		t.User, dest = u, host
	} else if u, err := user.Current(); err == nil {
		t.User = u.Username
	}
	if dest == "" || t.User == "" {
		return nil, fmt.Errorf("--ssh %q: want [user@]host[:port]", cfg.remote.ssh)
	}
	t.Addr = dest
	if _, _, err := net.SplitHostPort(dest); err != nil {
		t.Addr = net.JoinHostPort(dest, "22")
	}
	for _, f := range cfg.remote.sshIdentity {
		abs, err := filepath.Abs(f)
		if err != nil {
			return nil, err
		}
		t.IdentityFiles = append(t.IdentityFiles, abs)
	}
	if cfg.remote.sshKnownHosts != "" {
		t.KnownHostsFiles = []string{cfg.remote.sshKnownHosts}
	}
	return t, nil
}

// remoteOptions points opts at the remote agent: the transport replaces
// the command, and the session's directory is on the remote host (the
// login directory unless --cwd says).
func remoteOptions(cfg config, opts *acphost.ACPOptions) error {
	opts.Command, opts.Args, opts.Process.Env = "", nil, nil
	if cfg.remote.url != "" {
		opts.Transport = &websocket.Transport{URL: cfg.remote.url, Token: cfg.remote.token}
		return nil
	}
	if cfg.remote.kube.Set() {
		opts.Transport = kubeTransport(cfg)
		opts.Dir = kubeDir(cfg.cwd)
		return nil
	}
	t, err := sshTransport(cfg)
	if err != nil {
		return err
	}
	opts.Command, opts.Args, opts.Process.Env = "", nil, nil
	opts.Transport = t
	if cfg.cwd == "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dir, err := t.LoginDir(ctx)
		if err != nil {
			return err
		}
		opts.Dir = dir
	}
	return nil
}
