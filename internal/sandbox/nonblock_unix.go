//go:build unix

package sandbox

import "syscall"

// oNonblock makes opening a FIFO return at once instead of waiting for a
// writer; it has no effect on regular files.
const oNonblock = syscall.O_NONBLOCK
