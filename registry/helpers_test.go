package registry

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/fakeagent"
)

func TestMain(m *testing.M) {
	fakeagent.Main() // the installed "agent" is this test binary, re-executed
	os.Exit(m.Run())
}

// entry is one archive entry for tarGz and zipOf.
type entry struct {
	name string
	typ  byte // tar type; 0: a regular file
	mode int64
	body []byte
	link string
}

func tarBytes(t testing.TB, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Unix(0, 0)}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func gz(t testing.TB, b []byte) []byte { return gzLevel(t, b, gzip.BestSpeed) }

func gzLevel(t testing.TB, b []byte, level int) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, level)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func tarGz(t testing.TB, entries []entry) []byte { return gz(t, tarBytes(t, entries)) }

// zipOf writes entries as a zip; typ 'l' makes a symbolic link (body: the
// target), a mode with fs.Mode bits sets them.
func zipOf(t testing.TB, entries []entry, modes ...fs.FileMode) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := fs.FileMode(0o644)
		if e.mode != 0 {
			mode = fs.FileMode(e.mode)
		}
		if e.typ == 'l' {
			mode = fs.ModeSymlink | 0o777
		}
		if i < len(modes) {
			mode |= modes[i]
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// selfBinary is this test binary's bytes: the fake agent an archive holds.
var selfBinary = sync.OnceValues(func() ([]byte, error) {
	p, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
})

// fakeArchive is a tar.gz of the fake agent at bin/fake, plus a VERSION
// file (so archives of two versions differ).
func fakeArchive(t testing.TB, version string) []byte {
	t.Helper()
	bin, err := selfBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Stored, not compressed: the test binary is large, and deflating it
	// under the race detector takes seconds.
	return gzLevel(t, tarBytes(t, []entry{
		{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "bin/fake", mode: 0o755, body: bin},
		{name: "VERSION", body: []byte(version)},
	}), gzip.NoCompression)
}

// fakeEnv is the environment that makes the installed test binary a
// fake agent answering text.
func fakeEnv(t testing.TB, text string) map[string]string {
	t.Helper()
	_, _, env, err := fakeagent.Command(fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps: []fakeagent.Step{fakeagent.Say(fakeagent.Text(text))}, StopReason: "end_turn"}}})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// binaryAgent is an agent whose binary for this platform is archive.
func binaryAgent(id, version, archive, cmd string, env map[string]string) Agent {
	return Agent{ID: id, Name: id, Version: version, Description: "a test agent",
		Distribution: Distribution{Binary: map[string]Target{
			Platform():      {Archive: archive, Cmd: cmd, Env: env},
			"windows-risc9": {Archive: archive, Cmd: cmd},
		}}}
}

func registryDoc(t testing.TB, agents ...Agent) []byte {
	t.Helper()
	b, err := json.Marshal(Registry{Version: "1.0.0", Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tree lists every path under root with its type, size and mode, so two
// listings tell whether anything changed on disk.
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fi.Mode().String() + " " + func() string {
			if fi.Mode().IsRegular() {
				return strings.Repeat("#", int(min(fi.Size(), 64)))
			}
			return ""
		}()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// changed lists what differs between two trees, but for the allowed paths.
func changed(before, after map[string]string, allowed ...string) []string {
	var diff []string
	ok := map[string]bool{}
	for _, a := range allowed {
		ok[a] = true
	}
	for p, v := range after {
		if before[p] != v && !ok[p] {
			diff = append(diff, "+"+p+" "+v)
		}
	}
	for p := range before {
		if _, there := after[p]; !there {
			diff = append(diff, "-"+p)
		}
	}
	sort.Strings(diff)
	return diff
}

// sha256Hex is b's SHA-256, as the registry writes it.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
