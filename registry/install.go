package registry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Bounds of an install, when a Cache leaves them zero.
const (
	DefaultMaxDownload = 1 << 30 // 1 GiB of archive
	DefaultMaxUnpacked = 4 << 30 // 4 GiB unpacked
	DefaultMaxEntries  = 200_000 // archive entries
	// DefaultStallTimeout and DefaultStallBytes: a download that receives
	// less than 256 KiB in a minute (about 4 KiB/s) is stalled.
	DefaultStallTimeout = 60 * time.Second
	DefaultStallBytes   = 256 << 10
)

// Cache installs the binary distributions of registry agents, each into
// Dir/agents/ID/VERSION, and finds them there.
//
// Every download is hostile input. The archive's URL, and every redirect,
// must be https (plain http only to a loopback address). At most
// MaxDownload bytes are read and MaxUnpacked bytes written; a download
// that stalls (see StallTimeout) fails. The archive is unpacked from the
// very file it was hashed into, whose name is removed as soon as it is
// made (but on Windows), so that what is unpacked is what was checked. An entry with
// an absolute path or a "..", a symbolic link that resolves outside the
// directory, a hard link to anything but a file of the archive, a device
// file or a named pipe, or a setuid, setgid or sticky bit fails the
// install with an *ArchiveError. The archive is unpacked into a temporary
// directory beside the version's and renamed into place when it is whole,
// so a failed or interrupted install leaves no version directory behind.
// Installs of one agent are serialized by a lock file (Dir/agents/ID/.lock),
// between processes too. The archive's SHA-256 is checked against the
// registry's, when it gives one, and recorded at the first install of a
// version (Dir/agents/ID/sums.json): a later download of that version
// that differs is refused with a *ChecksumError.
//
// A Cache is safe for use by several goroutines.
type Cache struct {
	// Dir holds the installs. Empty: DefaultCacheDir().
	Dir string
	// Client makes the downloads. Nil: a client of its own (with the
	// environment's proxy). Its redirects are held to https.
	Client *http.Client
	// Platform is the registry platform to install for. Empty: Platform().
	Platform string
	// MaxDownload, MaxUnpacked and MaxEntries bound one install. Zero:
	// DefaultMaxDownload, DefaultMaxUnpacked, DefaultMaxEntries.
	MaxDownload int64
	MaxUnpacked int64
	MaxEntries  int
	// StallTimeout and StallBytes end a download that stalls: one that,
	// from the request on, receives less than StallBytes in a StallTimeout
	// (its answer's header first), fails with an error matching
	// ErrStalled and ErrDownload. A trickle of bytes, each soon after the
	// last, is a stall too. Zero: DefaultStallTimeout, DefaultStallBytes.
	// A deadline for the whole install is the caller's, on ctx.
	StallTimeout time.Duration
	StallBytes   int64
	// Progress, when set, is called on the goroutine that called Install
	// as the archive arrives, with the bytes so far and the total (-1 when
	// the server did not say). It should return quickly.
	Progress func(done, total int64)
}

// Installed is an agent version in the cache.
type Installed struct {
	ID       string            `json:"id"`
	Version  string            `json:"version"`
	Platform string            `json:"platform"`
	Archive  string            `json:"archive"`
	SHA256   string            `json:"sha256"`
	Cmd      string            `json:"cmd"` // the registry's, relative to Dir
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	When     time.Time         `json:"installed"`

	// Dir is where the archive is unpacked.
	Dir string `json:"-"`
}

// Path is the installed command's absolute path.
func (i Installed) Path() string {
	p, _ := cmdPath(i.Cmd) // checked when installed
	return filepath.Join(i.Dir, filepath.FromSlash(p))
}

// VersionDir is where version of agent id is (or would be) installed.
func (c *Cache) VersionDir(id, version string) (string, error) {
	dir, err := c.agentDir(id)
	if err != nil {
		return "", err
	}
	if !versionPattern.MatchString(version) {
		return "", fmt.Errorf("%w: %s %q", ErrNotInstalled, id, version)
	}
	return filepath.Join(dir, version), nil
}

// manifestName is the file in a version directory that says what was
// installed there; a directory without one is not an install.
const manifestName = ".acphost-install.json"

func (c *Cache) dir() (string, error) {
	if c.Dir != "" {
		return c.Dir, nil
	}
	return DefaultCacheDir()
}

func (c *Cache) platform() string {
	if c.Platform != "" {
		return c.Platform
	}
	return Platform()
}

func (c *Cache) agentDir(id string) (string, error) {
	if !idPattern.MatchString(id) {
		return "", fmt.Errorf("%w: %q is not an agent id", ErrUnknownAgent, id)
	}
	dir, err := c.dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "agents", id), nil
}

// Lookup is version of agent id as installed, or an error matching
// ErrNotInstalled.
func (c *Cache) Lookup(id, version string) (Installed, error) {
	dir, err := c.agentDir(id)
	if err != nil {
		return Installed{}, err
	}
	if !versionPattern.MatchString(version) {
		return Installed{}, fmt.Errorf("%w: %s %q", ErrNotInstalled, id, version)
	}
	return readManifest(filepath.Join(dir, version))
}

// List is every installed version of agent id, oldest install first.
func (c *Cache) List(id string) ([]Installed, error) {
	dir, err := c.agentDir(id)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if in, err := readManifest(filepath.Join(dir, e.Name())); err == nil {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b Installed) int { return a.When.Compare(b.When) })
	return out, nil
}

func readManifest(dir string) (Installed, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return Installed{}, fmt.Errorf("%w: %s", ErrNotInstalled, filepath.Base(dir))
	}
	var in Installed
	if err := json.Unmarshal(b, &in); err != nil {
		return Installed{}, fmt.Errorf("%w: %s: %v", ErrNotInstalled, dir, err)
	}
	in.Dir = dir
	return in, nil
}

// Remove deletes every installed version of agent id (not the recorded
// checksums: a version installed again must be the same archive).
func (c *Cache) Remove(ctx context.Context, id string) (removed []string, err error) {
	dir, err := c.agentDir(id)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if !strings.HasPrefix(e.Name(), ".") {
			removed = append(removed, e.Name())
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// Install installs agent a's binary for the cache's platform, unless that
// version is installed already; downloaded says whether it was fetched.
// Cancelling ctx stops the download and the wait for another install's
// lock; nothing half-made is left.
func (c *Cache) Install(ctx context.Context, a Agent) (in Installed, downloaded bool, err error) {
	platform := c.platform()
	t, ok := a.Distribution.Binary[platform]
	if !ok {
		return Installed{}, false, &PlatformError{ID: a.ID, Platform: platform, Offered: a.Platforms()}
	}
	if _, err := checkURL(t.Archive); err != nil {
		return Installed{}, false, err
	}
	format, err := archiveFormat(t.Archive)
	if err != nil {
		return Installed{}, false, err
	}
	if _, err := cmdPath(t.Cmd); err != nil {
		return Installed{}, false, err
	}
	dir, err := c.agentDir(a.ID)
	if err != nil {
		return Installed{}, false, err
	}
	if !versionPattern.MatchString(a.Version) {
		return Installed{}, false, &MalformedError{Where: a.ID, Reason: fmt.Sprintf("version %q", a.Version)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Installed{}, false, err
	}
	unlock, err := lockDir(ctx, dir)
	if err != nil {
		return Installed{}, false, err
	}
	defer unlock()

	removeLeftovers(dir)
	final := filepath.Join(dir, a.Version)
	if in, err := readManifest(final); err == nil {
		return in, false, nil // installed, perhaps by another process while we waited
	}
	if err := os.RemoveAll(final); err != nil { // a directory without a manifest is no install
		return Installed{}, false, err
	}

	archive, sum, err := c.download(ctx, dir, t.Archive)
	if err != nil {
		return Installed{}, false, err
	}
	defer func() {
		archive.Close()
		os.Remove(archive.Name()) // gone already, but on Windows
	}()
	if downloadedHook != nil {
		downloadedHook(archive.Name())
	}
	sums, err := readSums(dir)
	if err != nil {
		return Installed{}, false, err
	}
	key := a.Version + " " + platform
	if want := sums[key]; want != "" && want != sum {
		return Installed{}, false, &ChecksumError{ID: a.ID, Version: a.Version, Want: want, Got: sum, Recorded: true}
	}
	if want := strings.ToLower(t.SHA256); want != "" && want != sum {
		return Installed{}, false, &ChecksumError{ID: a.ID, Version: a.Version, Want: want, Got: sum}
	}

	tmp, err := os.MkdirTemp(dir, ".unpack-"+a.Version+"-")
	if err != nil {
		return Installed{}, false, err
	}
	defer os.RemoveAll(tmp) // gone once renamed
	if err := unpack(archive, format, tmp, t.Cmd, c.maxUnpacked(), c.maxEntries()); err != nil {
		return Installed{}, false, fmt.Errorf("installing %s %s: %w", a.ID, a.Version, err)
	}
	in = Installed{ID: a.ID, Version: a.Version, Platform: platform, Archive: t.Archive, SHA256: sum,
		Cmd: t.Cmd, Args: t.Args, Env: t.Env, When: time.Now().UTC()}
	mb, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return Installed{}, false, err
	}
	if err := writeExclusive(filepath.Join(tmp, manifestName), mb); err != nil {
		return Installed{}, false, fmt.Errorf("installing %s %s: %w", a.ID, a.Version, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Installed{}, false, err
	}
	if sums[key] == "" {
		sums[key] = sum
		if err := writeSums(dir, sums); err != nil {
			return Installed{}, false, err
		}
	}
	if err := os.Rename(tmp, final); err != nil {
		return Installed{}, false, err
	}
	in.Dir = final
	return in, true, nil
}

// downloadedHook, when set (by tests), is called with the download's
// temporary name once it is checked, before it is unpacked.
var downloadedHook func(name string)

// removeLeftovers removes what an install killed midway left in dir (its
// download and unpacking directory); called with the lock held, so no
// install is making them.
func removeLeftovers(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".download-") || strings.HasPrefix(n, ".unpack-") || strings.HasPrefix(n, ".tmp-") {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

func (c *Cache) maxDownload() int64 {
	if c.MaxDownload > 0 {
		return c.MaxDownload
	}
	return DefaultMaxDownload
}

func (c *Cache) maxUnpacked() int64 {
	if c.MaxUnpacked > 0 {
		return c.MaxUnpacked
	}
	return DefaultMaxUnpacked
}

func (c *Cache) maxEntries() int {
	if c.MaxEntries > 0 {
		return c.MaxEntries
	}
	return DefaultMaxEntries
}

// download fetches the archive into a temporary file in dir, hashing it
// as it comes, and returns the file (open, its name already removed where
// the system allows) and its SHA-256 (hex). A body shorter than its
// Content-Length, longer than MaxDownload, or that stalls, fails it.
func (c *Cache) download(ctx context.Context, dir, archive string) (_ *os.File, sum string, err error) {
	ctx, watch, stop := watchStall(ctx, archive, c.StallTimeout, c.StallBytes)
	defer stop()
	defer func() { err = watch.cause(err) }()
	resp, err := get(ctx, c.Client, archive, nil, false)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	limit := c.maxDownload()
	if resp.ContentLength > limit {
		return nil, "", tooLarge("the archive "+archive, limit)
	}
	f, err := os.CreateTemp(dir, ".download-")
	if err != nil {
		return nil, "", err
	}
	// Nothing but this descriptor reaches the bytes hashed: a file put
	// under the name later is not the one unpacked. Windows removes no
	// open file: the name stays until Install closes it.
	_ = os.Remove(f.Name())
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	w := &progressWriter{w: io.MultiWriter(f, h), total: resp.ContentLength, fn: c.Progress, arrived: watch.arrived}
	n, err := io.Copy(w, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("%w: %s: after %d bytes: %w", ErrDownload, archive, n, err)
	case n > limit:
		return nil, "", tooLarge("the archive "+archive, limit)
	case resp.ContentLength >= 0 && n != resp.ContentLength:
		return nil, "", fmt.Errorf("%w: %s: %d of %d bytes", ErrDownload, archive, n, resp.ContentLength)
	}
	return f, hexSum(h), nil
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }

// progressWriter counts what passes and tells fn.
type progressWriter struct {
	w       io.Writer
	done    int64
	total   int64
	fn      func(done, total int64)
	arrived func(n int) // bytes came
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	p.arrived(n)
	if p.fn != nil {
		p.fn(p.done, p.total)
	}
	return n, err
}

const sumsName = "sums.json"

// readSums is the recorded SHA-256 of each "VERSION PLATFORM".
func readSums(dir string) (map[string]string, error) {
	sums := map[string]string{}
	b, err := os.ReadFile(filepath.Join(dir, sumsName))
	if errors.Is(err, fs.ErrNotExist) {
		return sums, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &sums); err != nil {
		return nil, fmt.Errorf("registry: %s: %w (remove it to trust the next download again)", filepath.Join(dir, sumsName), err)
	}
	return sums, nil
}

func writeSums(dir string, sums map[string]string) error {
	b, err := json.MarshalIndent(sums, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, sumsName), b)
}

func writeExclusive(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
