package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/token"
	"github.com/acphost/acphost/cmd/acphost/internal/usage"
	"github.com/acphost/acphost/kube"
	"github.com/acphost/acphost/websocket"
)

// serve is "acphost serve": an agent served over WebSocket until SIGINT
// or SIGTERM, a local process per connection or, with the --kube-* flags,
// a pod per connection.
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acphost serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "the `address` to listen on")
	tokenFlag := fs.String("token", "", "the bearer `token` clients must send, on the command line where every local user sees it (default: $ACPHOST_TOKEN)")
	tokenFile := fs.String("token-file", "", "read the bearer token from `file`, which only you may read (\"-\": a line of stdin); default: $ACPHOST_TOKEN, else one made up and kept in a file of yours")
	cwd := fs.String("cwd", "", "the `directory` each agent process starts in (default: the current one; with --kube-*, the pod's)")
	agentName := fs.String("agent", "", "the `name` of the agent to serve (acphost agents lists them)")
	var place state.KubePlace
	kubeFlags(fs, &place)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: acphost serve [--listen ADDR] [--token-file FILE] [--cwd DIR] [--kube-image IMAGE | --kube-warm-pool NAME] (--agent NAME | -- AGENT [ARGS...])\n\nFlags:\n")
		usage.PrintFlags(fs.Output(), fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	command, env, named, err := serveAgent(*agentName, fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "acphost serve:", err)
		return exitUsage
	}
	if !place.Set() && named != nil {
		place = state.KubePlace(*named)
	}
	var kt *kube.Transport
	if place.Set() {
		if kt, err = serveKube(place, *agentName, command, env, *cwd); err != nil {
			fmt.Fprintln(stderr, "acphost serve:", err)
			return exitUsage
		}
		// After the bridge (Serve closes it before returning): every pod
		// it made is deleted on the way out.
		defer kt.Close()
	}
	tok, err := token.From("acphost serve", *tokenFlag, *tokenFile, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "acphost serve:", err)
		return exitUsage
	}
	madeUp := tok == ""
	if madeUp {
		// Never tokenless: loopback is shared by every user of the machine.
		b := make([]byte, 16)
		rand.Read(b)
		tok = hex.EncodeToString(b)
	}
	dir := *cwd
	if dir != "" && kt == nil {
		abs, err := filepath.Abs(dir)
		if err != nil {
			fmt.Fprintln(stderr, "acphost serve: --cwd:", err)
			return exitUsage
		}
		dir = abs
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "acphost serve:", err)
		return exitFailed
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && madeUp && !tcp.IP.IsLoopback() {
		ln.Close()
		fmt.Fprintf(stderr, "acphost serve: %s is beyond loopback: give the token clients will use ($%s or --token-file)\n", *listen, token.Env)
		return exitUsage
	}
	u := fmt.Sprintf("ws://%s%s", ln.Addr(), websocket.DefaultPath)
	sessDir := dir
	switch {
	case kt != nil: // the agent's directory in its pod
		sessDir = kubeDir(dir)
	case sessDir == "":
		sessDir, _ = os.Getwd()
	}
	connect := "ACPHOST_TOKEN=… acphost --url " + u + " --cwd " + token.ShellQuote(sessDir)
	if madeUp {
		// Kept in a file of the person's: the printed command names the
		// file, never the token (a command line is every user's to read).
		path, remove, err := token.WriteFile(tok)
		if err != nil {
			ln.Close()
			fmt.Fprintln(stderr, "acphost serve: the token file:", err)
			return exitFailed
		}
		defer remove()
		connect = "acphost --url " + u + " --token-file " + token.ShellQuote(path) + " --cwd " + token.ShellQuote(sessDir)
	}
	b := &websocket.Bridge{Token: tok, Stderr: stderr,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if kt != nil {
		b.Transport = kt
	} else {
		b.Command, b.Args, b.Env, b.Dir = command[0], command[1:], env, dir
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The URL first (what a script reads), then how to connect.
	fmt.Fprintln(stdout, u)
	fmt.Fprintln(stdout, connect)
	if err := websocket.Serve(ctx, ln, b); err != nil {
		fmt.Fprintln(stderr, "acphost serve:", err)
		if errors.Is(err, websocket.ErrNoToken) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}

// serveAgent is the agent serve runs: the named one (as --agent runs it
// everywhere else, in a pod when its entry has "kube"), or the command
// after --.
func serveAgent(name string, args []string) (command, env []string, place *agents.Kube, err error) {
	switch {
	case name != "" && len(args) > 0:
		return nil, nil, nil, errors.New("--agent and a command after -- both name the agent; give one")
	case name == agents.Demo: // this executable, as the built-in agent
		path, args, env, err := agentCommand(config{})
		return append([]string{path}, args...), env, nil, err
	case name != "":
		file, err := agents.Load()
		if err != nil {
			return nil, nil, nil, err
		}
		def, err := file.Lookup(name)
		if err != nil {
			return nil, nil, nil, err
		}
		return def.Command, def.EnvList(), def.Kube, nil
	case len(args) == 0 || args[0] == "":
		return nil, nil, nil, errors.New("give the agent: --agent NAME, or its command after --")
	}
	return args, nil, nil, nil
}

// serveKube is the transport that runs each connection's agent in a pod,
// refusing what serve cannot have there as acphost refuses it: the
// built-in agent (this executable, not in the image), a --cwd that is not
// a directory in the pod.
func serveKube(place state.KubePlace, name string, command, env []string, cwd string) (*kube.Transport, error) {
	if name == agents.Demo {
		return nil, errors.New("--agent demo is this executable, which is not in the pod's image: give the agent's command in the pod after --")
	}
	cfg := config{agent: command, agentEnv: env, cwd: cwd}
	cfg.remote.kube = place
	if err := checkKube(&cfg); err != nil {
		return nil, err
	}
	return kubeTransport(cfg), nil
}
