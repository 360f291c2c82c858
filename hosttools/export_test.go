package hosttools

import "time"

// SetTimeouts sets the endpoints' read-header and idle timeouts for the
// endpoints served from now on, until the returned restore.
func SetTimeouts(header, idle time.Duration) (restore func()) {
	old := timeouts
	timeouts.header, timeouts.idle = header, idle
	return func() { timeouts = old }
}
