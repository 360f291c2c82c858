package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
)

const webUsage = `Usage: acphost web [--listen ADDR] [--public] [--cwd DIR] [--fs] [-- AGENT [ARGS...]]

Serves a browser UI for AGENT (default: the built-in demo agent): a live
transcript, approval dialogs, editable write proposals (with --fs), a stop
button, plan mode, the agent's modes and config options. It prints the URL
to open, with its token, and serves until SIGINT or SIGTERM.

Flags:
`

// webMain is "acphost web": one agent served to a browser until SIGINT or
// SIGTERM. Exit status: 0 after a signal, 1 when the agent or the listener
// failed, 2 on bad usage.
func webMain(args []string, stdout, stderr io.Writer) int {
	const ok, failed, usage = 0, 1, 2
	fl := flag.NewFlagSet("acphost web", flag.ContinueOnError)
	fl.SetOutput(stderr)
	listen := fl.String("listen", "127.0.0.1:0", "the `address` to listen on (loopback unless --public)")
	public := fl.Bool("public", false, "allow a --listen address beyond loopback (the token is still required: serve it behind TLS)")
	cwd := fl.String("cwd", "", "the session's working `directory` (default: the current one)")
	serveFS := fl.Bool("fs", false, "serve file reads and writes inside --cwd; each write is a proposal to apply, amend or deny in the page")
	presentation := fl.Bool("presentation", false, "ask agents to attach their permission prompt text")
	var hosts []string
	fl.Func("host", "a host `name` the page is reached by beyond loopback (repeatable; IP addresses and localhost are always accepted)", func(s string) error {
		hosts = append(hosts, s)
		return nil
	})
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), webUsage)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ok
		}
		return usage
	}
	dir := *cwd
	if dir == "" {
		dir = "."
	}
	dir, err := filepath.Abs(dir)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(dir); err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s: not a directory", dir)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "acphost web: --cwd:", err)
		return usage
	}
	opts := acphost.ACPOptions{Dir: dir, PermissionPresentation: *presentation}
	if *serveFS {
		opts.FS = &acphost.FSOptions{Read: true, Write: true}
	}
	if fl.NArg() > 0 {
		if fl.Arg(0) == "" {
			fmt.Fprintln(stderr, "acphost web: the agent command is empty")
			return usage
		}
		opts.Command, opts.Args = fl.Arg(0), fl.Args()[1:]
	} else {
		// The built-in demo agent is this executable, re-executed
		// (main calls fakeagent.Main first); ACPHOST_DEMO_SCRIPT, as for
		// the terminal host, replaces its script.
		script := fakeagent.Demo()
		if s := os.Getenv("ACPHOST_DEMO_SCRIPT"); s != "" {
			script = fakeagent.Script{}
			if err := json.Unmarshal([]byte(s), &script); err != nil {
				fmt.Fprintln(stderr, "acphost web: ACPHOST_DEMO_SCRIPT:", err)
				return usage
			}
		}
		if opts.Command, opts.Args, opts.Env, err = fakeagent.Command(script); err != nil {
			fmt.Fprintln(stderr, "acphost web:", err)
			return failed
		}
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(stderr, "acphost web:", err)
		return failed
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp == nil || (!tcp.IP.IsLoopback() && !*public) {
		ln.Close()
		fmt.Fprintf(stderr, "acphost web: %s is beyond loopback: add --public to serve it there (the token is still required)\n", *listen)
		return usage
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts.Logger = logger
	srv, err := web.New(ctx, web.Config{Agent: opts, Hosts: hosts, Logger: logger})
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "acphost web:", err)
		return failed
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	host := tcp.String()
	if tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	fmt.Fprintln(stdout, srv.URL("http://"+host+"/"))
	if tcp.IP.IsUnspecified() {
		fmt.Fprintf(stderr, "acphost web: listening on every interface (%s): from elsewhere use this machine's address; anyone with the URL drives the agent\n", tcp)
	}

	code := ok
	select {
	case <-ctx.Done():
	case err := <-served:
		fmt.Fprintln(stderr, "acphost web:", err)
		code = failed
	}
	// The server first (the running turn cancelled, the event streams
	// ended), then the listener and idle connections.
	if err := srv.Close(); err != nil {
		fmt.Fprintln(stderr, "acphost web: agent:", err)
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(shut)
	return code
}
