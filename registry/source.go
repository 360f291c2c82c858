package registry

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultURL is the official registry document.
const DefaultURL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"

// EnvRegistry names a registry (a file or an URL) instead of the official
// one; programs that take a --registry flag let it win over this.
const EnvRegistry = "ACPHOST_REGISTRY"

//go:embed snapshot.json
var snapshot []byte

// SnapshotDate is when the embedded registry was taken from the official
// one.
var SnapshotDate = time.Date(2026, time.August, 19, 0, 0, 0, 0, time.UTC)

// Embedded is the registry snapshot this package carries (39 agents,
// August 2026), so that ids resolve offline and versions are pinned.
func Embedded() *Registry {
	r, err := Parse(snapshot)
	if err != nil {
		panic("registry: the embedded snapshot: " + err.Error()) // a build that cannot happen: TestEmbeddedSnapshotParses
	}
	r.Origin = "the embedded snapshot of " + SnapshotDate.Format(time.DateOnly)
	return r
}

// DefaultCacheDir is acphost under the user's cache directory
// ($XDG_CACHE_HOME/acphost, or ~/.cache/acphost, on Linux).
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("registry: no cache directory: %w", err)
	}
	return filepath.Join(dir, "acphost"), nil
}

// Source says which registry to read.
type Source struct {
	// Location is a registry document: a file path, or an https URL
	// (fetched on each Load, with the ETag of the copy kept in CacheDir,
	// which also serves when the fetch fails). Empty: the official
	// registry as Refresh last fetched it, else the embedded snapshot;
	// Load then uses no network.
	Location string
	// CacheDir is where fetched registries are kept. Empty:
	// DefaultCacheDir().
	CacheDir string
	// Client makes the requests. Nil: a client of its own (with the
	// environment's proxy). Its redirects are held to https.
	Client *http.Client
	// StallTimeout and StallBytes end a fetch that stalls, as
	// Cache.StallTimeout does a download. Zero: DefaultStallTimeout and
	// DefaultStallBytes (a registry, smaller than that, must then come
	// whole within the timeout).
	StallTimeout time.Duration
	StallBytes   int64
}

// cachedIndex is a fetched registry's metadata, next to its body.
type cachedIndex struct {
	URL     string    `json:"url"`
	ETag    string    `json:"etag,omitempty"`
	Fetched time.Time `json:"fetched"`
}

func (s Source) isURL() bool {
	return strings.HasPrefix(s.Location, "https://") || strings.HasPrefix(s.Location, "http://")
}

func (s Source) cacheDir() (string, error) {
	dir := s.CacheDir
	if dir == "" {
		var err error
		if dir, err = DefaultCacheDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "registry"), nil
}

// key names the cache files of a URL.
func cacheKey(u string) string {
	if u == DefaultURL {
		return "official"
	}
	h := sha256.Sum256([]byte(u))
	return hex.EncodeToString(h[:8])
}

// Load reads the registry src names. A malformed one is a
// *MalformedError naming the file or URL.
func Load(ctx context.Context, src Source) (*Registry, error) {
	switch {
	case src.Location == "":
		return loadOfficial(src)
	case src.isURL():
		r, _, err := fetchCached(ctx, src, src.Location, true)
		return r, err
	}
	b, err := readFileCapped(src.Location)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, withSource(err, src.Location)
	}
	r.Origin = src.Location
	return r, nil
}

// Refresh fetches the registry src names (the official one when
// Location is empty) with the ETag of the copy kept, and keeps the new
// copy; changed reports whether it differs from the kept one. A file
// Location is read as Load reads it.
func Refresh(ctx context.Context, src Source) (r *Registry, changed bool, err error) {
	switch {
	case src.Location == "":
		return fetchCached(ctx, src, DefaultURL, false)
	case src.isURL():
		return fetchCached(ctx, src, src.Location, false)
	}
	r, err = Load(ctx, src)
	return r, false, err
}

// loadOfficial is the official registry as last fetched, when that is
// newer than the embedded snapshot, else the snapshot.
func loadOfficial(src Source) (*Registry, error) {
	dir, err := src.cacheDir()
	if err != nil {
		return Embedded(), nil
	}
	r, meta, err := readCached(dir, cacheKey(DefaultURL))
	if err != nil || !meta.Fetched.After(SnapshotDate) {
		return Embedded(), nil // none fetched yet, or older than the snapshot (or unreadable: Refresh rewrites it)
	}
	return r, nil
}

// fetchCached GETs u with the kept copy's ETag; a 304 answers the kept
// copy. With fallback, a failed fetch answers the kept copy too.
func fetchCached(ctx context.Context, src Source, u string, fallback bool) (*Registry, bool, error) {
	dir, err := src.cacheDir()
	if err != nil {
		return nil, false, err
	}
	key := cacheKey(u)
	kept, meta, keptErr := readCached(dir, key)
	header := http.Header{}
	if keptErr == nil && meta.ETag != "" && meta.URL == u {
		header.Set("If-None-Match", meta.ETag)
	}
	ctx, watch, stop := watchStall(ctx, u, src.StallTimeout, src.StallBytes)
	defer stop()
	resp, err := get(ctx, src.Client, u, header, keptErr == nil)
	if err != nil {
		err = watch.cause(err)
		if fallback && keptErr == nil && !errors.Is(err, ErrInsecureURL) {
			kept.Origin = fmt.Sprintf("%s (kept copy of %s; fetching failed: %v)", u, meta.Fetched.Format(time.DateTime), err)
			return kept, false, nil
		}
		return nil, false, fmt.Errorf("registry: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		meta.Fetched = time.Now()
		_ = writeCached(dir, key, nil, meta) // only the time: the body is unchanged
		kept.Origin = u + " (unchanged since " + meta.Fetched.Format(time.DateOnly) + ")"
		return kept, false, nil
	}
	b, err := readCapped(watch.reader(resp.Body), maxRegistry, "the registry "+u)
	if err = watch.cause(err); errors.Is(err, ErrStalled) {
		return nil, false, fmt.Errorf("registry: %w", err)
	}
	if err != nil {
		return nil, false, fmt.Errorf("registry: %w: %w", ErrDownload, err)
	}
	r, err := Parse(b)
	if err != nil {
		return nil, false, withSource(err, u)
	}
	meta = cachedIndex{URL: u, ETag: resp.Header.Get("ETag"), Fetched: time.Now()}
	if err := writeCached(dir, key, b, meta); err != nil {
		return nil, false, fmt.Errorf("registry: keeping %s: %w", u, err)
	}
	r.Origin = u
	changed := keptErr != nil || string(mustJSON(kept)) != string(mustJSON(r))
	return r, changed, nil
}

func mustJSON(r *Registry) []byte {
	b, _ := json.Marshal(r)
	return b
}

func readCached(dir, key string) (*Registry, cachedIndex, error) {
	var meta cachedIndex
	mb, err := readFileCapped(filepath.Join(dir, key+".meta.json"))
	if err != nil {
		return nil, meta, err
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		return nil, meta, err
	}
	b, err := readFileCapped(filepath.Join(dir, key+".json"))
	if err != nil {
		return nil, meta, err
	}
	r, err := Parse(b)
	if err != nil {
		return nil, meta, err
	}
	r.Origin = meta.URL + " (fetched " + meta.Fetched.Format(time.DateTime) + ")"
	return r, meta, nil
}

// writeCached replaces the kept body (unless nil) and metadata, each
// through a temporary file and a rename.
func writeCached(dir, key string, body []byte, meta cachedIndex) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if body != nil {
		if err := writeFileAtomic(filepath.Join(dir, key+".json"), body); err != nil {
			return err
		}
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, key+".meta.json"), mb)
}

func writeFileAtomic(path string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func readFileCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: path, Err: errors.New("not a regular file")}
	}
	return readCapped(f, maxRegistry, path)
}

func withSource(err error, source string) error {
	var me *MalformedError
	if errors.As(err, &me) {
		me.Source = source
	}
	return err
}
