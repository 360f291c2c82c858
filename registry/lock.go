package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// lockPoll is how often a busy install lock is tried again.
const lockPoll = 50 * time.Millisecond

// lockBusyHook, set by a test, is called when the lock is found taken.
var lockBusyHook func()

// lockDir takes dir's install lock (dir/.lock), waiting for another
// process's install to end, or for ctx; the lock ends with the process
// that holds it, however it ends.
func lockDir(ctx context.Context, dir string) (unlockFn func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("registry: the install lock: %w", err)
	}
	t := time.NewTicker(lockPoll)
	defer t.Stop()
	for {
		busy, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("registry: the install lock %s: %w", f.Name(), err)
		}
		if !busy {
			return func() { unlock(f); f.Close() }, nil
		}
		if lockBusyHook != nil {
			lockBusyHook()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("registry: waiting for another install of %s: %w", filepath.Base(dir), ctx.Err())
		case <-t.C:
		}
	}
}
