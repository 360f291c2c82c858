package web_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestAttackAuthorizedBurstBesideTokenlessFlood (issue 36): 500 event
// streams opened at once with the token — the person's tabs and clients
// — first alone, then while a local process without the token floods the
// server with keep-alive connections that made one refused request and
// with connections that send nothing. The cap on connections without the
// token must not cost the person one: every authorized stream is
// answered, both times.
func TestAttackAuthorizedBurstBesideTokenlessFlood(t *testing.T) {
	const streams = 500
	srv, addr := serveOnLoopback(t)

	if failures := openStreams(addr, srv.Token(), streams); len(failures) > 0 {
		t.Fatalf("a burst of %d authorized event streams alone: %d not answered, such as %q", streams, len(failures), failures[:min(3, len(failures))])
	}
	stop := floodTokenless(t, addr, 200)
	failures := openStreams(addr, srv.Token(), streams)
	stop()
	if len(failures) > 0 {
		t.Fatalf("a burst of %d authorized event streams beside a tokenless flood: %d not answered, such as %q", streams, len(failures), failures[:min(3, len(failures))])
	}
}

// openStreams opens n event streams with token at once (every dial
// released together) and returns why each one not answered 200 was not.
func openStreams(addr, token string, n int) []string {
	start := make(chan struct{})
	failed := make(chan string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, err := net.Dial("tcp", addr)
			if err != nil {
				failed <- fmt.Sprintf("stream %d: dial: %v", i, err)
				return
			}
			defer c.Close() // the stream's body does not end: closing the connection does
			fmt.Fprintf(c, "GET /events HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, token)
			c.SetReadDeadline(time.Now().Add(waitFor))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case err != nil:
				failed <- fmt.Sprintf("stream %d: %v", i, err)
			case resp.StatusCode != http.StatusOK:
				failed <- fmt.Sprintf("stream %d: %s", i, resp.Status)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(failed)
	var out []string
	for f := range failed {
		out = append(out, f)
	}
	return out
}

// floodTokenless keeps opening connections to addr that make one request
// without the token and stay open, and opens silent ones that send
// nothing, until the function it returns is called; the connections close
// when the test ends.
func floodTokenless(t *testing.T, addr string, silent int) (stop func()) {
	var mu sync.Mutex
	var held []net.Conn
	hold := func(c net.Conn) {
		mu.Lock()
		held = append(held, c)
		mu.Unlock()
	}
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				continue
			}
			hold(c)
			fmt.Fprintf(c, "GET /api/sessions HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			c.SetReadDeadline(time.Now().Add(waitFor))
			if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
				resp.Body.Close()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range silent {
			if c, err := net.Dial("tcp", addr); err == nil {
				hold(c)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
