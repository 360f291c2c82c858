package registry

import (
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"strings"
)

// Platform is this program's platform as the registry names it:
// GOOS-arch, with amd64 as x86_64 and arm64 as aarch64 (linux-x86_64,
// darwin-aarch64, windows-x86_64 …).
func Platform() string { return platformOf(runtime.GOOS, runtime.GOARCH) }

func platformOf(goos, goarch string) string {
	switch goarch {
	case "amd64":
		goarch = "x86_64"
	case "arm64":
		goarch = "aarch64"
	}
	return goos + "-" + goarch
}

// cmdPath is a target's cmd as a slash path relative to where the archive
// is unpacked ("./bin/devin" → "bin/devin"; Windows entries write
// "./bin\\devin.exe"). A cmd that would leave that directory is refused.
func cmdPath(cmd string) (string, error) {
	p := path.Clean(strings.ReplaceAll(cmd, `\`, "/"))
	if p == "." || !filepath.IsLocal(filepath.FromSlash(p)) || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("cmd %q: want a path inside the unpacked archive", cmd)
	}
	return p, nil
}
