package confine

import (
	"path/filepath"
	"strings"
)

// Resolve is absolute path p with the symlinks of its longest existing
// ancestor resolved (the rest may not exist yet): where Landlock's rule for
// p would take effect.
func Resolve(p string) string {
	p, _ = filepath.Abs(p)
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// Within reports whether clean absolute path p is dir or lies beneath it
// ("/" holds every absolute path).
func Within(dir, p string) bool {
	if p == dir {
		return true
	}
	if !strings.HasSuffix(dir, string(filepath.Separator)) {
		dir += string(filepath.Separator)
	}
	return strings.HasPrefix(p, dir)
}

// Overlap reports whether directories a and b, their symlinks resolved,
// are the same or one holds the other.
func Overlap(a, b string) bool {
	a, b = Resolve(a), Resolve(b)
	return Within(a, b) || Within(b, a)
}
