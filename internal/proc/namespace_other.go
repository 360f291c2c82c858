//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrNoNamespace is matched by the errors of [NamespaceAvailable]: PID
// namespaces are a Linux feature. It matches errors.ErrUnsupported.
var ErrNoNamespace = fmt.Errorf("proc: no PID namespace: %w", errors.ErrUnsupported)

// NamespaceAvailable fails: PID namespaces are a Linux feature.
func NamespaceAvailable() error {
	return fmt.Errorf("%w: PID namespaces are a Linux feature", ErrNoNamespace)
}

func noNamespace(err error) error { return fmt.Errorf("%w: %v", ErrNoNamespace, err) }

// SetNamespace does nothing here.
func SetNamespace(*syscall.SysProcAttr) {}

// Namespaced is false here.
func Namespaced(*syscall.SysProcAttr) bool { return false }

// DeathWatch does nothing here.
type DeathWatch struct{}

// WatchDeath returns nil here.
func WatchDeath(int) *DeathWatch { return nil }

// Stop does nothing.
func (*DeathWatch) Stop() {}
