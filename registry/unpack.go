package registry

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Archive formats, as archiveFormat names them.
const (
	formatZip    = "zip"
	formatTarGz  = "tar.gz"
	formatTarBz2 = "tar.bz2"
	formatTar    = "tar"
	formatRaw    = "raw" // the download is the command itself
)

// archiveFormat is the format the archive URL's name says.
func archiveFormat(archive string) (string, error) {
	name := archive
	if u, err := url.Parse(archive); err == nil {
		name = u.Path
	}
	name = strings.ToLower(path.Base(name))
	switch {
	case strings.HasSuffix(name, ".zip"):
		return formatZip, nil
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		return formatTarGz, nil
	case strings.HasSuffix(name, ".tar.bz2"), strings.HasSuffix(name, ".tbz2"):
		return formatTarBz2, nil
	case strings.HasSuffix(name, ".tar"):
		return formatTar, nil
	}
	for _, ext := range []string{".tar.xz", ".txz", ".xz", ".tar.zst", ".zst", ".7z", ".rar", ".dmg", ".pkg", ".msi", ".deb", ".rpm"} {
		if strings.HasSuffix(name, ext) {
			return "", fmt.Errorf("registry: archive %s: %s archives and installers are not supported (zip, tar.gz, tgz, tar.bz2, tbz2 or a bare executable are)", name, ext)
		}
	}
	return formatRaw, nil
}

// unpacker writes one archive's entries beneath root, refusing any that
// would leave it, and keeps the bounds.
type unpacker struct {
	root       *os.Root
	dir        string // root's path
	maxBytes   int64  // of all files' contents
	maxEntries int
	written    int64
	entries    int
	files      map[string]bool // regular files written, for hard links
	links      []string        // symbolic links made, checked at the end
}

// unpack writes the archive in file (read from its start through the
// descriptor, never reopened by name), of format, into dir (an empty
// directory), then checks that cmd is a regular file there and makes it
// executable. Any refusal leaves dir for the caller to remove.
func unpack(f *os.File, format, dir, cmd string, maxBytes int64, maxEntries int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	file := io.NewSectionReader(f, 0, fi.Size())
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	u := &unpacker{root: root, dir: dir, maxBytes: maxBytes, maxEntries: maxEntries, files: map[string]bool{}}
	switch format {
	case formatZip:
		err = u.zip(file)
	case formatRaw:
		err = u.raw(file, cmd)
	default:
		err = u.tarFile(file, format)
	}
	if err != nil {
		return err
	}
	if err := u.checkLinks(); err != nil {
		return err
	}
	return u.checkCmd(cmd)
}

// entryName is an archive entry's name as a clean local slash path, or
// "" for the archive's top directory.
func entryName(name string) (string, error) {
	bad := func(why string) error { return &ArchiveError{Entry: name, Reason: why} }
	switch {
	case strings.ContainsRune(name, 0):
		return "", bad("has a NUL in its name")
	case strings.Contains(name, `\`):
		return "", bad(`has a backslash in its name`)
	case path.IsAbs(name) || (len(name) > 1 && name[1] == ':'):
		return "", bad("is an absolute path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", bad("has a .. in its path")
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return "", nil
	}
	if !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", bad("is not a path inside the archive")
	}
	return clean, nil
}

// checkMode refuses setuid, setgid and sticky bits.
func checkMode(name string, special bool) error {
	if special {
		return &ArchiveError{Entry: name, Reason: "sets setuid, setgid or sticky bits"}
	}
	return nil
}

func (u *unpacker) count(name string) error {
	u.entries++
	if u.entries > u.maxEntries {
		return fmt.Errorf("%w: the archive has more than %d entries", ErrTooLarge, u.maxEntries)
	}
	return nil
}

func (u *unpacker) mkdirAll(name string) error {
	if name == "" || name == "." {
		return nil
	}
	return u.root.MkdirAll(filepath.FromSlash(name), 0o755)
}

// file writes one regular file from r, executable when exec.
func (u *unpacker) file(name string, r io.Reader, exec bool) error {
	if err := u.mkdirAll(path.Dir(name)); err != nil {
		return u.refused(name, err)
	}
	perm := os.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	f, err := u.root.OpenFile(filepath.FromSlash(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return u.refused(name, err)
	}
	left := u.maxBytes - u.written
	n, err := io.Copy(f, io.LimitReader(r, left+1))
	u.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("registry: unpacking %s: %w", name, err)
	}
	if n > left {
		return tooLarge("the unpacked archive", u.maxBytes)
	}
	u.files[name] = true
	return nil
}

// symlink makes name point at target, which must stay inside the root.
func (u *unpacker) symlink(name, target string) error {
	if target == "" || path.IsAbs(target) || strings.Contains(target, `\`) || strings.ContainsRune(target, 0) {
		return &ArchiveError{Entry: name, Reason: fmt.Sprintf("is a link to %q, outside the archive", target)}
	}
	if !filepath.IsLocal(filepath.FromSlash(path.Join(path.Dir(name), target))) {
		return &ArchiveError{Entry: name, Reason: fmt.Sprintf("is a link to %q, outside the archive", target)}
	}
	if err := u.mkdirAll(path.Dir(name)); err != nil {
		return u.refused(name, err)
	}
	if err := u.root.Symlink(filepath.FromSlash(target), filepath.FromSlash(name)); err != nil {
		return u.refused(name, err)
	}
	u.links = append(u.links, name)
	return nil
}

// hardlink makes name another name of target, a file already written.
func (u *unpacker) hardlink(name, linkname string) error {
	target, err := entryName(linkname)
	if err != nil || !u.files[target] {
		return &ArchiveError{Entry: name, Reason: fmt.Sprintf("is a hard link to %q, not a file of the archive", linkname)}
	}
	if err := u.mkdirAll(path.Dir(name)); err != nil {
		return u.refused(name, err)
	}
	if err := u.root.Link(filepath.FromSlash(target), filepath.FromSlash(name)); err != nil {
		return u.refused(name, err)
	}
	u.files[name] = true
	return nil
}

// refused wraps an error of the root: an escape os.Root stopped is an
// unsafe archive.
func (u *unpacker) refused(name string, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return &ArchiveError{Entry: name, Reason: "comes twice (or over a directory or link)"}
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return &ArchiveError{Entry: name, Reason: "would be written through a link outside the archive"}
	}
	return &ArchiveError{Entry: name, Reason: "cannot be written: " + err.Error()}
}

func (u *unpacker) tarFile(file *io.SectionReader, format string) error {
	br := bufio.NewReader(file)
	var r io.Reader = br
	magic, _ := br.Peek(3)
	switch format {
	case formatTarGz:
		if !bytes.HasPrefix(magic, []byte{0x1f, 0x8b}) {
			return fmt.Errorf("registry: the download is not a gzip archive, as its name says")
		}
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("registry: the archive: %w", err)
		}
		defer gz.Close()
		r = gz
	case formatTarBz2:
		if !bytes.HasPrefix(magic, []byte("BZh")) {
			return fmt.Errorf("registry: the download is not a bzip2 archive, as its name says")
		}
		r = bzip2.NewReader(br)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("registry: the archive: %w", err)
		}
		if err := u.tarEntry(tr, h); err != nil {
			return err
		}
	}
}

func (u *unpacker) tarEntry(tr *tar.Reader, h *tar.Header) error {
	name, err := entryName(h.Name)
	if err != nil {
		return err
	}
	if err := u.count(h.Name); err != nil {
		return err
	}
	if err := checkMode(h.Name, h.Mode&(04000|02000|01000) != 0); err != nil {
		return err
	}
	if name == "" {
		if h.Typeflag == tar.TypeDir {
			return nil
		}
		return &ArchiveError{Entry: h.Name, Reason: "names the archive's top directory"}
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := u.mkdirAll(name); err != nil {
			return u.refused(h.Name, err)
		}
		return nil
	case tar.TypeReg, 0: // 0: the pre-POSIX regular file (TypeRegA)
		return u.file(name, tr, h.Mode&0o111 != 0)
	case tar.TypeSymlink:
		return u.symlink(name, h.Linkname)
	case tar.TypeLink:
		return u.hardlink(name, h.Linkname)
	case tar.TypeChar, tar.TypeBlock:
		return &ArchiveError{Entry: h.Name, Reason: "is a device file"}
	case tar.TypeFifo:
		return &ArchiveError{Entry: h.Name, Reason: "is a named pipe"}
	}
	return &ArchiveError{Entry: h.Name, Reason: fmt.Sprintf("is of tar type %q, which is not unpacked", h.Typeflag)}
}

// maxLinkTarget bounds a zip symlink entry's content (its target).
const maxLinkTarget = 4096

func (u *unpacker) zip(file *io.SectionReader) error {
	zr, err := zip.NewReader(file, file.Size())
	if err != nil {
		return fmt.Errorf("registry: the download is not a zip archive, as its name says: %w", err)
	}
	if len(zr.File) > u.maxEntries {
		return fmt.Errorf("%w: the archive has more than %d entries", ErrTooLarge, u.maxEntries)
	}
	var claimed uint64
	for _, f := range zr.File {
		claimed += f.UncompressedSize64
	}
	if claimed > uint64(u.maxBytes) { // a claim: the bytes are counted as they come too
		return tooLarge("the unpacked archive", u.maxBytes)
	}
	for _, f := range zr.File {
		if err := u.zipEntry(f); err != nil {
			return err
		}
	}
	return nil
}

func (u *unpacker) zipEntry(f *zip.File) error {
	name, err := entryName(f.Name)
	if err != nil {
		return err
	}
	if err := u.count(f.Name); err != nil {
		return err
	}
	mode := f.Mode()
	if err := checkMode(f.Name, mode&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0); err != nil {
		return err
	}
	switch {
	case mode&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return &ArchiveError{Entry: f.Name, Reason: "is a device file"}
	case mode&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeIrregular) != 0:
		return &ArchiveError{Entry: f.Name, Reason: "is not a file, directory or link"}
	case name == "":
		return nil
	case mode.IsDir():
		if err := u.mkdirAll(name); err != nil {
			return u.refused(f.Name, err)
		}
		return nil
	}
	rc, err := f.Open()
	if err != nil {
		return fmt.Errorf("registry: the archive: %s: %w", f.Name, err)
	}
	defer rc.Close()
	if mode&fs.ModeSymlink != 0 {
		target, err := readCapped(rc, maxLinkTarget, "a link target")
		if err != nil {
			return &ArchiveError{Entry: f.Name, Reason: "is a link with an unreadable target"}
		}
		return u.symlink(name, string(target))
	}
	return u.file(name, rc, mode&0o111 != 0)
}

// raw places the download, a bare executable, at cmd.
func (u *unpacker) raw(file *io.SectionReader, cmd string) error {
	p, err := cmdPath(cmd)
	if err != nil {
		return err
	}
	return u.file(p, file, true)
}

// checkLinks refuses a symbolic link that, through the links around it,
// resolves outside the directory, or loops: dangling ones included, each
// followed part by part as the system would (see resolvesInside).
func (u *unpacker) checkLinks() error {
	for _, name := range u.links {
		if !u.resolvesInside(name) {
			return &ArchiveError{Entry: name, Reason: "is a link that resolves outside the archive (or loops)"}
		}
	}
	return nil
}

// maxLinkHops bounds the links one name is followed through (Linux's
// limit): more is a loop.
const maxLinkHops = 40

// resolvesInside tells whether name, followed through every link it meets
// as the system would, stays inside the directory. Where a part names
// nothing (a dangling link's target), the rest is followed by its letters,
// each ".." one level up: what would be made there later must be inside
// too. filepath.EvalSymlinks cannot say this: it stops at the first part
// that does not exist.
func (u *unpacker) resolvesInside(name string) bool {
	var real []string // the parts resolved so far: directories, files or nothing, never links
	todo := strings.Split(name, "/")
	for hops := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			if len(real) == 0 {
				return false
			}
			real = real[:len(real)-1]
			continue
		}
		p := filepath.FromSlash(path.Join(append(real, part)...))
		fi, err := u.root.Lstat(p)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			real = append(real, part)
			continue
		}
		if hops++; hops > maxLinkHops {
			return false
		}
		target, err := u.root.Readlink(p)
		target = filepath.ToSlash(target)
		if err != nil || target == "" || path.IsAbs(target) || filepath.IsAbs(target) {
			return false
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	return true
}

// checkCmd makes sure cmd is an executable regular file of the archive.
func (u *unpacker) checkCmd(cmd string) error {
	p, err := cmdPath(cmd)
	if err != nil {
		return err
	}
	fi, err := u.root.Stat(filepath.FromSlash(p)) // follows links, inside the root only
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("registry: the archive has no file %s (the registry's cmd %q)", p, cmd)
	}
	if fi.Mode().Perm()&0o111 != 0o111 {
		return u.root.Chmod(filepath.FromSlash(p), fi.Mode().Perm()|0o755)
	}
	return nil
}
