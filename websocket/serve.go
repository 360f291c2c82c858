package websocket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/acphost/acphost/internal/httpserve"
)

// ErrNoToken is Serve's error for a Bridge without a Token (unless
// AllowNoToken, and then for a listener beyond loopback).
var ErrNoToken = errors.New("websocket: a Bridge needs a Token (AllowNoToken serves loopback without one)")

// Serve serves b on ln until ctx ends, then stops accepting, closes b
// (every connection ended, every agent stopped) and returns nil; if the
// server fails first it closes b and returns the error. It refuses (with
// ErrNoToken, before serving) a b without a Token — unless AllowNoToken,
// and then a listener that is not loopback or a Unix socket — and a b
// with both a Transport and a Command (ErrTransportAndCommand). ln is
// closed when Serve returns; b cannot be served again.
//
// The server has timeouts (10s for a request's header, 60s for an idle
// keep-alive connection) and holds at most b.MaxUntrusted connections that
// have shown they are not the person's (a request without the token
// answered, or 2s without a request): past it they are closed, idle ones
// first, so that a local process without the token cannot use up the
// descriptors. A connection whose request is on its way is not closed for
// the cap (up to 16 × MaxUntrusted of them at once): a burst of the
// person's own connections keeps every one.
func Serve(ctx context.Context, ln net.Listener, b *Bridge) error {
	if err := b.check(); err != nil {
		ln.Close()
		return err
	}
	if b.Token == "" && (!b.AllowNoToken || !localAddr(ln.Addr())) {
		ln.Close()
		return fmt.Errorf("%w (listening on %s)", ErrNoToken, ln.Addr())
	}
	srv, gln := httpserve.New(b, ln, b.MaxUntrusted, slog.NewLogLogger(b.logger().Handler(), slog.LevelDebug))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(gln) }()
	select {
	case <-ctx.Done():
		srv.Close() // hijacked connections are b's
		b.Close()
		<-errc
		return nil
	case err := <-errc:
		b.Close()
		return err
	}
}

// ListenAndServe listens on addr ("127.0.0.1:8080"; TCP) and Serves b:
// see Serve, and ErrNoToken for a non-loopback address without a Token.
func ListenAndServe(ctx context.Context, addr string, b *Bridge) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return Serve(ctx, ln, b)
}
