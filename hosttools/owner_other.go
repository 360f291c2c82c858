//go:build !linux

package hosttools

import "net"

// ownerOf is nil where the system does not tell who owns the other end
// of a loopback TCP connection: the bearer token alone guards it.
var ownerOf func(net.Conn) (int, error)

// checkOwners has nothing to check here.
func checkOwners() error { return nil }
