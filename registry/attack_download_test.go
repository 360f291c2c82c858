package registry

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/internal/testutil"
)

// TestAttackArchiveSwappedAfterCheck (issue 36): the archive is replaced
// on disk between its check (the registry's SHA-256) and its unpacking.
// The install unpacks the bytes that were checked, not the file's name.
func TestAttackArchiveSwappedAfterCheck(t *testing.T) {
	s := testutil.NewFileServer(t)
	good := tarGz(t, []entry{{name: "bin/fake", mode: 0o755, body: []byte("#!/bin/sh\necho good\n")}})
	evil := tarGz(t, []entry{{name: "bin/fake", mode: 0o755, body: []byte("#!/bin/sh\necho evil\n")}})
	a := binaryAgent("swapped", "1.0.0", s.Put("/good.tar.gz", good), "./bin/fake", nil)
	tg := a.Distribution.Binary[Platform()]
	tg.SHA256 = sha256Hex(good)
	a.Distribution.Binary[Platform()] = tg

	swapped := false
	downloadedHook = func(name string) {
		swapped = true
		if err := os.WriteFile(name, evil, 0o644); err != nil { // in place when the name is there, else a new file there
			t.Errorf("swap: %v", err)
		}
	}
	t.Cleanup(func() { downloadedHook = nil })
	in, _, err := (&Cache{Dir: t.TempDir(), Client: s.Client()}).Install(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if !swapped {
		t.Fatal("the hook did not run")
	}
	b, err := os.ReadFile(in.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("echo good")) || in.SHA256 != tg.SHA256 {
		t.Errorf("installed %q under SHA-256 %s: not the bytes checked", b, in.SHA256)
	}
}

// TestAttackTrickledDownloadStalls (issue 36): a server that sends the
// archive a byte at a time, each soon enough to reset a timer of
// "nothing arrived", is a stalled download: a typed error, nothing left.
func TestAttackTrickledDownloadStalls(t *testing.T) {
	s := testutil.NewFileServer(t)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	u := s.Handle("/trickle.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		tick := time.NewTicker(5 * time.Millisecond) // the attack's pace, not a synchronisation
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := w.Write([]byte{0}); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	})
	dir := t.TempDir()
	cache := &Cache{Dir: dir, Client: s.Client(), StallTimeout: 300 * time.Millisecond, StallBytes: 4096}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the test's bound, far beyond the stall
	defer cancel()
	_, _, err := cache.Install(ctx, binaryAgent("trickle", "1.0.0", u, "./bin/fake", nil))
	if !errors.Is(err, ErrStalled) || !errors.Is(err, ErrDownload) || ctx.Err() != nil {
		t.Fatalf("%v (the test's context: %v)", err, ctx.Err())
	}
	if !strings.Contains(err.Error(), "less than 4096 bytes in 300ms") {
		t.Errorf("%v", err)
	}
	if d := changed(map[string]string{}, tree(t, dir), ".", "agents", "agents/trickle", "agents/trickle/.lock"); len(d) > 0 {
		t.Errorf("left %v", d)
	}

	// A registry document trickled is stalled too.
	_, err = Load(ctx, Source{Location: u, CacheDir: t.TempDir(), Client: s.Client(), StallTimeout: 300 * time.Millisecond, StallBytes: 4096})
	if !errors.Is(err, ErrStalled) || !errors.Is(err, ErrDownload) || ctx.Err() != nil {
		t.Fatalf("the registry: %v (the test's context: %v)", err, ctx.Err())
	}
}

// TestAttackPlainHTTPArchiveRefusedOnParse (issue 36): a registry document
// naming an archive over plain http (but to a loopback address) is
// malformed when it is read, not only when the archive is fetched.
func TestAttackPlainHTTPArchiveRefusedOnParse(t *testing.T) {
	for _, u := range []string{"http://example.com/a.tar.gz", "HTTP://example.com/a.tar.gz", "ftp://example.com/a.tar.gz", "http://10.0.0.1/a.tar.gz"} {
		_, err := Parse(registryDoc(t, binaryAgent("plain", "1.0.0", u, "./bin/fake", nil)))
		if !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrInsecureURL) {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"https://example.com/a.tar.gz", "http://127.0.0.1:8080/a.tar.gz", "http://localhost/a.tar.gz", "http://[::1]/a.tar.gz"} {
		if _, err := Parse(registryDoc(t, binaryAgent("ok", "1.0.0", u, "./bin/fake", nil))); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}
