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

	"github.com/acphost/acphost/websocket"
)

// serve is "acphost serve": a local agent served over WebSocket until
// SIGINT or SIGTERM.
func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acphost serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "the `address` to listen on")
	token := fs.String("token", "", "the bearer `token` clients must send (default: $ACPHOST_TOKEN, else a random one, printed in the URL)")
	cwd := fs.String("cwd", "", "the `directory` each agent process starts in (default: the current one)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: acphost serve --listen ADDR [--token T] [--cwd DIR] -- AGENT [ARGS...]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() == 0 || fs.Arg(0) == "" {
		fmt.Fprintln(stderr, "acphost serve: give the agent command after --")
		return exitUsage
	}
	if *token == "" {
		*token = os.Getenv(envToken)
	}
	printToken := false
	if *token == "" {
		// Never tokenless: loopback is shared by every user of the machine.
		b := make([]byte, 16)
		rand.Read(b)
		*token, printToken = hex.EncodeToString(b), true
	}
	dir := *cwd
	if dir != "" {
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
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && printToken && !tcp.IP.IsLoopback() {
		ln.Close()
		fmt.Fprintf(stderr, "acphost serve: %s is beyond loopback: give the token clients will use (--token or ACPHOST_TOKEN)\n", *listen)
		return exitUsage
	}
	b := &websocket.Bridge{Command: fs.Arg(0), Args: fs.Args()[1:], Dir: dir, Token: *token, Stderr: stderr,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if printToken {
		// The token rides in the URL (a Bridge accepts ?token=), so that
		// `acphost --url URL` works as printed.
		fmt.Fprintf(stdout, "ws://%s%s?token=%s\n", ln.Addr(), websocket.DefaultPath, *token)
	} else {
		fmt.Fprintf(stdout, "ws://%s%s\n", ln.Addr(), websocket.DefaultPath)
	}
	if err := websocket.Serve(ctx, ln, b); err != nil {
		fmt.Fprintln(stderr, "acphost serve:", err)
		if errors.Is(err, websocket.ErrNoToken) {
			return exitUsage
		}
		return exitFailed
	}
	return exitOK
}
