//go:build !linux

package control

// viaDir runs f with path itself: only Linux reaches a directory through
// /proc/self/fd, so elsewhere a path over the system's limit (104 bytes
// on macOS) cannot be bound or dialled (SPEC.md, Known limits).
func viaDir(path string, f func(addr string) error) error { return f(path) }
