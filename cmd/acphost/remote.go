package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/ssh"
)

// remoteFlags are the flags that run the agent on another machine.
type remoteFlags struct {
	ssh           string   // [user@]host[:port]
	sshIdentity   []string // --ssh-identity FILE (repeatable)
	sshKnownHosts string
	sshInsecure   bool
}

func (r remoteFlags) remote() bool { return r.ssh != "" }

// checkRemote refuses what a remote agent cannot have: the built-in agent
// (it is this executable, on this machine), confinement and host files.
func checkRemote(cfg *config) error {
	if !cfg.remote.remote() {
		if cfg.remote.sshInsecure || cfg.remote.sshKnownHosts != "" || len(cfg.remote.sshIdentity) > 0 {
			return errors.New("--ssh-identity, --ssh-known-hosts and --ssh-insecure need --ssh")
		}
		return nil
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
func (a *app) remoteOptions(opts *acphost.ACPOptions) error {
	t, err := sshTransport(a.cfg)
	if err != nil {
		return err
	}
	opts.Command, opts.Args, opts.Env = "", nil, nil
	opts.Transport = t
	if a.cfg.cwd == "" {
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
