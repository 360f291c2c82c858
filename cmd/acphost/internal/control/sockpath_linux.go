package control

import (
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// maxSunPath is the longest socket path bind and connect take here
// (sockaddr_un's 108 bytes, the terminating NUL included).
const maxSunPath = 107

// viaDir runs f with an address for the socket at path that a unix socket
// can take: path itself when short enough, else the name under
// /proc/self/fd/N, N a descriptor of its directory held open for f (bind
// and connect resolve the directory through it, so a state directory of
// any depth works). The address is good only during f.
func viaDir(path string, f func(addr string) error) error {
	if len(path) <= maxSunPath {
		return f(path)
	}
	dir, name := filepath.Split(path)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer unix.Close(fd)
	return f("/proc/self/fd/" + strconv.Itoa(fd) + "/" + name)
}
