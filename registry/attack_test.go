package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acphost/acphost/internal/testutil"
)

// Hostile archives: each is refused with a typed error, and neither the
// cache nor anything beside it changes (but for the agent's directory and
// its lock file, which the install takes before it downloads).
func TestHostileArchivesRefusedDiskUnchanged(t *testing.T) {
	s := testutil.NewFileServer(t)
	good := entry{name: "bin/fake", mode: 0o755, body: []byte("#!/bin/sh\n")}
	zeros := bytes.Repeat([]byte{0}, 8<<20) // 8 MiB that deflate to about 8 KiB
	for _, tc := range []struct {
		name    string
		archive func(root string) []byte
		file    string // the archive's name on the server
		want    error
		says    string
	}{
		{"dot-dot", func(string) []byte {
			return tarGz(t, []entry{good, {name: "../../outside/evil", body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "has a .. in its path"},
		{"dot-dot inside", func(string) []byte {
			return tarGz(t, []entry{good, {name: "bin/../../evil", body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "has a .. in its path"},
		{"absolute", func(root string) []byte {
			return tarGz(t, []entry{good, {name: filepath.Join(root, "outside", "abs"), body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "is an absolute path"},
		{"symlink out, then through it", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "l", typ: tar.TypeSymlink, link: "../../../../outside"}, {name: "l/evil", body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a link to"},
		{"symlink absolute", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "l", typ: tar.TypeSymlink, link: filepath.Join(root, "outside")}, {name: "l/evil", body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a link to"},
		{"symlink chain out", func(root string) []byte {
			// d/up → ".." is the top; d/up/out → ".." from there is above it,
			// though each target looks local on its own.
			return tarGz(t, []entry{good, {name: "d/", typ: tar.TypeDir, mode: 0o755},
				{name: "d/up", typ: tar.TypeSymlink, link: ".."}, {name: "d/up/out", typ: tar.TypeSymlink, link: ".."},
				{name: "d/up/out/evil", body: []byte("x")}})
		}, "a.tar.gz", ErrUnsafeArchive, "through a link outside the archive"},
		{"symlink chain out, left dangling", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "d/", typ: tar.TypeDir, mode: 0o755},
				{name: "d/up", typ: tar.TypeSymlink, link: ".."}, {name: "d/up/out", typ: tar.TypeSymlink, link: "../outside"}})
		}, "a.tar.gz", ErrUnsafeArchive, "resolves outside the archive"},
		{"symlink chain out, dangling through a link", func(root string) []byte {
			// d/e/s → ".." is d; d/e/s/l, made through it, is d/l → "../../zzz",
			// which reads d/zzz by its name but is two levels above d, where
			// nothing is (issue 36).
			return tarGz(t, []entry{good, {name: "d/e/", typ: tar.TypeDir, mode: 0o755},
				{name: "d/e/s", typ: tar.TypeSymlink, link: ".."}, {name: "d/e/s/l", typ: tar.TypeSymlink, link: "../../zzz"}})
		}, "a.tar.gz", ErrUnsafeArchive, "resolves outside the archive"},
		{"symlink loop", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "a", typ: tar.TypeSymlink, link: "b"}, {name: "b", typ: tar.TypeSymlink, link: "a"}})
		}, "a.tar.gz", ErrUnsafeArchive, "resolves outside the archive"},
		{"cmd a link out", func(root string) []byte {
			return tarGz(t, []entry{{name: "bin/fake", typ: tar.TypeSymlink, link: "/bin/sh"}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a link to"},
		{"hard link out", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "h", typ: tar.TypeLink, link: filepath.Join(root, "outside", "victim")}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a hard link to"},
		{"hard link up", func(root string) []byte {
			return tarGz(t, []entry{good, {name: "h", typ: tar.TypeLink, link: "../../../../outside/victim"}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a hard link to"},
		{"device", func(string) []byte {
			return tarGz(t, []entry{good, {name: "null", typ: tar.TypeChar}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a device file"},
		{"block device", func(string) []byte {
			return tarGz(t, []entry{good, {name: "sda", typ: tar.TypeBlock}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a device file"},
		{"fifo", func(string) []byte {
			return tarGz(t, []entry{good, {name: "p", typ: tar.TypeFifo}})
		}, "a.tar.gz", ErrUnsafeArchive, "is a named pipe"},
		{"setuid", func(string) []byte {
			return tarGz(t, []entry{{name: "bin/fake", mode: 0o4755, body: []byte("#!/bin/sh\n")}})
		}, "a.tar.gz", ErrUnsafeArchive, "sets setuid"},
		{"zip dot-dot", func(string) []byte {
			return zipOf(t, []entry{good, {name: "../evil", body: []byte("x")}})
		}, "a.zip", ErrUnsafeArchive, "has a .. in its path"},
		{"zip symlink out", func(string) []byte {
			return zipOf(t, []entry{good, {name: "l", typ: 'l', body: []byte("../../outside")}, {name: "l/evil", body: []byte("x")}})
		}, "a.zip", ErrUnsafeArchive, "is a link to"},
		{"zip device", func(string) []byte {
			return zipOf(t, []entry{good, {name: "null"}}, 0, fs.ModeDevice|fs.ModeCharDevice)
		}, "a.zip", ErrUnsafeArchive, "is a device file"},
		{"zip setuid", func(string) []byte {
			return zipOf(t, []entry{{name: "bin/fake", mode: 0o755, body: []byte("#!/bin/sh\n")}}, fs.ModeSetuid)
		}, "a.zip", ErrUnsafeArchive, "sets setuid"},
		{"zip backslash", func(string) []byte {
			return zipOf(t, []entry{good, {name: `..\..\evil`, body: []byte("x")}})
		}, "a.zip", ErrUnsafeArchive, "backslash"},
		{"zip bomb", func(string) []byte {
			return zipOf(t, []entry{good, {name: "zeros", body: zeros}})
		}, "a.zip", ErrTooLarge, "the unpacked archive is more than"},
		{"tar.gz bomb", func(string) []byte {
			return tarGz(t, []entry{good, {name: "zeros", body: zeros}})
		}, "a.tar.gz", ErrTooLarge, "the unpacked archive is more than"},
		{"too large a download", func(string) []byte {
			return zeros[:3<<20]
		}, "a.tar.gz", ErrTooLarge, "is more than"},
		{"too many entries", func(string) []byte {
			var es []entry
			for i := range 200 {
				es = append(es, entry{name: "f" + strings.Repeat("x", i), body: []byte("x")})
			}
			return tarGz(t, append(es, good))
		}, "a.tar.gz", ErrTooLarge, "more than 100 entries"},
		{"twice", func(string) []byte {
			return tarGz(t, []entry{good, good})
		}, "a.tar.gz", ErrUnsafeArchive, "comes twice"},
		{"not gzip", func(string) []byte { return []byte("PK\x03\x04 not a gzip") }, "a.tar.gz", nil, "not a gzip archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			outside := filepath.Join(root, "outside")
			os.MkdirAll(outside, 0o755)
			os.WriteFile(filepath.Join(outside, "victim"), []byte("keep me"), 0o644)
			cacheDir := filepath.Join(root, "cache")
			os.MkdirAll(filepath.Join(cacheDir, "agents"), 0o755)
			cache := &Cache{Dir: cacheDir, Client: s.Client(), MaxUnpacked: 1 << 20, MaxDownload: 2 << 20, MaxEntries: 100}
			before := tree(t, root)
			a := binaryAgent("hostile", "1.0.0", s.Put("/"+strings.ReplaceAll(tc.name, " ", "-")+"/"+tc.file, tc.archive(root)), "./bin/fake", nil)
			in, _, err := cache.Install(context.Background(), a)
			if err == nil {
				t.Fatalf("installed %+v", in)
			}
			if (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%v\nwant %v saying %q", err, tc.want, tc.says)
			}
			if d := changed(before, tree(t, root), "cache/agents/hostile", "cache/agents/hostile/.lock"); len(d) > 0 {
				t.Errorf("the disk changed: %v", d)
			}
			if _, err := cache.Lookup("hostile", "1.0.0"); !errors.Is(err, ErrNotInstalled) {
				t.Errorf("lookup after the refusal: %v", err)
			}
		})
	}
}
