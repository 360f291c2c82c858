package registry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/internal/testutil"
)

// turn starts the agent opts name, runs one prompt and returns its text.
func turn(t *testing.T, opts acphost.ACPOptions) string {
	t.Helper()
	opts.Dir = t.TempDir()
	c, err := acphost.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("start %s: %v", opts.Command, err)
	}
	defer c.Close()
	resp, err := c.Generate(acphost.Request{Prompt: "hello"})
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	return resp.Text
}

// From a registry served over loopback HTTPS: the first Resolve downloads
// and installs the fake agent, which runs a turn; the second starts it
// from the cache without a download; a new version in the registry is
// installed beside the old one and runs.
func TestInstallRunsThenStartsFromCacheThenUpdates(t *testing.T) {
	s := testutil.NewFileServer(t)
	ctx := context.Background()
	a1 := binaryAgent("fake", "1.0.0", s.Put("/v1/fake.tar.gz", fakeArchive(t, "1.0.0")), "./bin/fake", fakeEnv(t, "hello from 1.0.0"))
	regURL := s.Put("/registry.json", registryDoc(t, a1))
	src := Source{Location: regURL, CacheDir: t.TempDir(), Client: s.Client()}
	var progress []int64
	cache := &Cache{Dir: src.CacheDir, Client: s.Client(), Progress: func(done, total int64) {
		if total <= 0 || done > total {
			t.Errorf("progress %d of %d", done, total)
		}
		progress = append(progress, done)
	}}

	opts, err := Resolve(ctx, "fake", src, cache)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(src.CacheDir, "agents", "fake", "1.0.0", "bin", "fake")
	if opts.Command != want {
		t.Errorf("command %s, want %s", opts.Command, want)
	}
	if got := turn(t, opts); got != "hello from 1.0.0" {
		t.Errorf("turn answered %q", got)
	}
	if s.Count("/v1/fake.tar.gz") != 1 || len(progress) == 0 {
		t.Errorf("%d downloads, %d progress calls", s.Count("/v1/fake.tar.gz"), len(progress))
	}

	opts, err = Resolve(ctx, "fake", src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := turn(t, opts); got != "hello from 1.0.0" || s.Count("/v1/fake.tar.gz") != 1 {
		t.Errorf("second start: %q, %d downloads", got, s.Count("/v1/fake.tar.gz"))
	}

	a2 := binaryAgent("fake", "1.1.0", s.Put("/v2/fake.tar.gz", fakeArchive(t, "1.1.0")), "./bin/fake", fakeEnv(t, "hello from 1.1.0"))
	s.Put("/registry.json", registryDoc(t, a2))
	opts, err = Resolve(ctx, "fake", src, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := turn(t, opts); got != "hello from 1.1.0" || s.Count("/v2/fake.tar.gz") != 1 {
		t.Errorf("after the update: %q, %d downloads", got, s.Count("/v2/fake.tar.gz"))
	}
	list, err := cache.List("fake")
	if err != nil || len(list) != 2 || list[0].Version != "1.0.0" || list[1].Version != "1.1.0" {
		t.Errorf("installed: %+v %v", list, err)
	}
	removed, err := cache.Remove(ctx, "fake")
	if err != nil || len(removed) != 2 {
		t.Errorf("remove: %v %v", removed, err)
	}
	if list, _ := cache.List("fake"); len(list) != 0 {
		t.Errorf("after remove: %+v", list)
	}
}

// install is an install of one archive served at path, with cache's
// bounds; the archive's cmd is bin/fake.
func install(t *testing.T, s *testutil.FileServer, cache *Cache, path string, archive []byte) (Installed, error) {
	t.Helper()
	a := binaryAgent("fake", "1.0.0", s.Put(path, archive), "./bin/fake", nil)
	in, _, err := cache.Install(context.Background(), a)
	return in, err
}

// An archive of the same version that is not the one first installed is
// refused, and so is one that is not what the registry announces.
func TestInstallRefusesAChangedArchive(t *testing.T) {
	s := testutil.NewFileServer(t)
	ctx := context.Background()
	dir := t.TempDir()
	cache := &Cache{Dir: dir, Client: s.Client()}
	if _, err := install(t, s, cache, "/fake.tar.gz", fakeArchive(t, "1.0.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Remove(ctx, "fake"); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	_, err := install(t, s, cache, "/fake.tar.gz", fakeArchive(t, "1.0.0 but not the same"))
	var ce *ChecksumError
	if !errors.As(err, &ce) || !ce.Recorded || !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "was recorded when it was first installed") {
		t.Fatalf("%v", err)
	}
	if d := changed(before, tree(t, dir)); len(d) > 0 {
		t.Errorf("the refused install changed the cache: %v", d)
	}

	b := fakeArchive(t, "2.0.0")
	other := sha256.Sum256([]byte("another archive"))
	a := binaryAgent("other", "2.0.0", s.Put("/other.tar.gz", b), "./bin/fake", nil)
	tg := a.Distribution.Binary[Platform()]
	tg.SHA256 = hex.EncodeToString(other[:])
	a.Distribution.Binary[Platform()] = tg
	if _, _, err := cache.Install(ctx, a); !errors.As(err, &ce) || ce.Recorded || !strings.Contains(err.Error(), "the registry announces") {
		t.Errorf("announced checksum: %v", err)
	}
	sum := sha256.Sum256(b)
	tg.SHA256 = hex.EncodeToString(sum[:])
	a.Distribution.Binary[Platform()] = tg
	if _, _, err := cache.Install(ctx, a); err != nil {
		t.Errorf("announced checksum that matches: %v", err)
	}
}

// A cut-off download and a 404 install nothing and leave nothing behind.
func TestInstallFailedDownloadLeavesNothing(t *testing.T) {
	s := testutil.NewFileServer(t)
	dir := t.TempDir()
	cache := &Cache{Dir: dir, Client: s.Client()}
	full := fakeArchive(t, "1.0.0")
	s.Handle("/cut.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.Write(full[:500000])
		panic(http.ErrAbortHandler) // the connection ends mid-body
	})
	for _, tc := range []struct{ path, want string }{
		{"/cut.tar.gz", "unexpected EOF"},
		{"/missing.tar.gz", "HTTP 404 Not Found"},
	} {
		a := binaryAgent("fake", "1.0.0", s.URL+tc.path, "./bin/fake", nil)
		_, _, err := cache.Install(context.Background(), a)
		if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.path, err)
		}
		if d := changed(map[string]string{}, tree(t, dir), ".", "agents", "agents/fake", "agents/fake/.lock"); len(d) > 0 {
			t.Errorf("%s left %v", tc.path, d)
		}
	}
}

// What an install killed midway left (a download, a half-unpacked
// directory, a version directory without its manifest) is gone after the
// next install, which installs whole.
func TestInstallAfterAKilledOne(t *testing.T) {
	s := testutil.NewFileServer(t)
	dir := t.TempDir()
	agentDir := filepath.Join(dir, "agents", "fake")
	for _, p := range []string{".download-123", ".unpack-1.0.0-456/bin/fake", "1.0.0/bin/fake"} {
		os.MkdirAll(filepath.Dir(filepath.Join(agentDir, p)), 0o755)
		os.WriteFile(filepath.Join(agentDir, p), []byte("half"), 0o755)
	}
	cache := &Cache{Dir: dir, Client: s.Client()}
	if _, err := cache.Lookup("fake", "1.0.0"); !errors.Is(err, ErrNotInstalled) {
		t.Fatalf("a version without its manifest is installed: %v", err)
	}
	in, err := install(t, s, cache, "/fake.tar.gz", fakeArchive(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(in.Path()); string(b) == "half" {
		t.Error("the half-made install was kept")
	}
	if d := changed(map[string]string{}, tree(t, agentDir), ".", ".lock", "sums.json", "1.0.0", "1.0.0/bin", "1.0.0/bin/fake", "1.0.0/VERSION", "1.0.0/"+manifestName); len(d) > 0 {
		t.Errorf("left: %v", d)
	}
}

// A download that stalls (the headers, then nothing) ends after
// IdleTimeout, leaving nothing behind; so does one whose headers never come.
func TestInstallStalledDownloadEnds(t *testing.T) {
	s := testutil.NewFileServer(t)
	dir := t.TempDir()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	s.Handle("/stall-body.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte{0x1f, 0x8b})
		w.(http.Flusher).Flush()
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	s.Handle("/stall-headers.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	for _, path := range []string{"/stall-body.tar.gz", "/stall-headers.tar.gz"} {
		cache := &Cache{Dir: dir, Client: s.Client(), StallTimeout: 100 * time.Millisecond}
		a := binaryAgent("fake", "1.0.0", s.URL+path, "./bin/fake", nil)
		_, _, err := cache.Install(context.Background(), a)
		if !errors.Is(err, ErrDownload) || !strings.Contains(err.Error(), "less than 262144 bytes in 100ms") {
			t.Errorf("%s: %v", path, err)
		}
	}
	if d := changed(map[string]string{}, tree(t, dir), ".", "agents", "agents/fake", "agents/fake/.lock"); len(d) > 0 {
		t.Errorf("left %v", d)
	}
}

// An agent without a binary for this platform (nor a package) is a clear
// error naming the platforms it has.
func TestInstallUnknownPlatformNamesTheOffered(t *testing.T) {
	r := Embedded()
	devin, _ := r.Agent("devin")
	cache := &Cache{Dir: t.TempDir(), Platform: "plan9-mips", Client: &http.Client{Transport: failingTransport{t}}}
	_, _, err := cache.Install(context.Background(), devin)
	var pe *PlatformError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPlatform) ||
		err.Error() != "agent devin has no distribution for plan9-mips (no npx or uvx package either); its binaries are for: darwin-aarch64, darwin-x86_64, linux-aarch64, linux-x86_64, windows-aarch64, windows-x86_64" {
		t.Errorf("%v", err)
	}
	if _, _, err := cache.Command(context.Background(), devin, true); !errors.As(err, &pe) {
		t.Errorf("Command: %v", err)
	}
}

// Two installs of one agent at once (two Caches on one directory: two
// lock files opened, as two processes would) download it once, and both
// get the install.
func TestConcurrentInstallsDownloadOnce(t *testing.T) {
	s := testutil.NewFileServer(t)
	dir := t.TempDir()
	archive := fakeArchive(t, "1.0.0")
	arrived, release := make(chan struct{}), make(chan struct{})
	u := s.Handle("/slow.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.Write(archive)
	})
	waiting := make(chan struct{})
	lockBusyHook = sync.OnceFunc(func() { close(waiting) })
	t.Cleanup(func() { lockBusyHook = nil })
	a := binaryAgent("fake", "1.0.0", u, "./bin/fake", nil)
	results := make(chan Installed, 2)
	errs := make(chan error, 2)
	run := func() {
		in, _, err := (&Cache{Dir: dir, Client: s.Client()}).Install(context.Background(), a)
		results <- in
		errs <- err
	}
	go run()
	<-arrived // the first holds the lock and downloads
	go run()
	<-waiting // the second found the lock taken
	close(release)
	first, second := <-results, <-results
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if first.Dir != second.Dir || first.SHA256 != second.SHA256 || s.Count("/slow.tar.gz") != 1 {
		t.Errorf("%+v\n%+v\n%d downloads", first, second, s.Count("/slow.tar.gz"))
	}
}

// Plain http is refused but to a loopback address; a redirect from https
// to plain http is refused too.
func TestDownloadsAreHTTPSOnly(t *testing.T) {
	ctx := context.Background()
	cache := &Cache{Dir: t.TempDir(), Client: &http.Client{Transport: failingTransport{t}}}
	a := binaryAgent("fake", "1.0.0", "http://example.com/fake.tar.gz", "./bin/fake", nil)
	if _, _, err := cache.Install(ctx, a); !errors.Is(err, ErrInsecureURL) {
		t.Errorf("http to example.com: %v", err)
	}
	if _, err := Load(ctx, Source{Location: "http://example.com/registry.json", CacheDir: t.TempDir(), Client: cache.Client}); !errors.Is(err, ErrInsecureURL) {
		t.Errorf("registry over http: %v", err)
	}

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(fakeArchive(t, "1.0.0")) }))
	defer plain.Close()
	a = binaryAgent("fake", "1.0.0", plain.URL+"/fake.tar.gz", "./bin/fake", nil)
	if _, _, err := (&Cache{Dir: t.TempDir()}).Install(ctx, a); err != nil {
		t.Errorf("http to loopback: %v", err)
	}

	s := testutil.NewFileServer(t)
	u := s.Handle("/redirect.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/fake.tar.gz", http.StatusFound)
	})
	a = binaryAgent("fake", "1.0.0", u, "./bin/fake", nil)
	if _, _, err := (&Cache{Dir: t.TempDir(), Client: s.Client()}).Install(ctx, a); !errors.Is(err, ErrInsecureURL) {
		t.Errorf("redirect to http: %v", err)
	}
}

// Every archive format the registry uses installs its cmd, executable.
func TestInstallFormats(t *testing.T) {
	s := testutil.NewFileServer(t)
	bz2, err := os.ReadFile("testdata/agent.tar.bz2") // bin/agent, made with bzip2(1): the standard library only reads bzip2
	if err != nil {
		t.Fatal(err)
	}
	script := []byte("#!/bin/sh\necho agent\n")
	for _, tc := range []struct {
		name string
		body []byte
		cmd  string
	}{
		{"a.tar.gz", tarGz(t, []entry{{name: "bin/agent", mode: 0o755, body: script}}), "./bin/agent"},
		{"a.tgz", tarGz(t, []entry{{name: "./bin/agent", mode: 0o755, body: script}}), "bin/agent"},
		{"a.tar.bz2", bz2, "./bin/agent"},
		{"a.tbz2", bz2, "./bin/agent"},
		{"a.zip", zipOf(t, []entry{{name: "bin/agent", body: script}}), "./bin/agent"}, // no exec bit: set for cmd
		{"a.tar", tarBytes(t, []entry{{name: "bin/agent", mode: 0o755, body: script}, {name: "bin/alias", typ: '1', link: "bin/agent"}, {name: "lib/l", typ: '2', link: "../bin/agent"}}), "./lib/l"},
		{"agent-linux-amd64", script, "./agent-linux-amd64"},
	} {
		a := binaryAgent("f"+strings.NewReplacer(".", "", "-", "").Replace(tc.name), "1.0.0", s.Put("/"+tc.name, tc.body), tc.cmd, nil)
		in, _, err := (&Cache{Dir: t.TempDir(), Client: s.Client()}).Install(context.Background(), a)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		fi, err := os.Stat(in.Path())
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s: %s: %v %v", tc.name, in.Path(), fi, err)
			continue
		}
		if b, _ := os.ReadFile(in.Path()); !bytes.Contains(b, []byte("echo")) && !bytes.Contains(b, []byte("bz2-agent")) {
			t.Errorf("%s: %q", tc.name, b)
		}
	}
	a := binaryAgent("xz", "1.0.0", s.Put("/a.tar.xz", []byte("x")), "./a", nil)
	if _, _, err := (&Cache{Dir: t.TempDir(), Client: s.Client()}).Install(context.Background(), a); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("tar.xz: %v", err)
	}
	a = binaryAgent("nocmd", "1.0.0", s.Put("/n.tar.gz", tarGz(t, []entry{{name: "other", body: script}})), "./bin/agent", nil)
	if _, _, err := (&Cache{Dir: t.TempDir(), Client: s.Client()}).Install(context.Background(), a); err == nil || !strings.Contains(err.Error(), "has no file bin/agent") {
		t.Errorf("no cmd: %v", err)
	}
}
