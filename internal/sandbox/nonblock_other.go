//go:build !unix

package sandbox

// oNonblock is 0 where O_NONBLOCK does not exist.
const oNonblock = 0
