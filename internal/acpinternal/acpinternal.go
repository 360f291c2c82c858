// Package acpinternal carries what the host may do to the acp package's
// values and a user may not: the acp package fills its variables in its
// init, the host calls them.
package acpinternal

// MarkReplay marks a decoded acp.Update as history an agent replays while
// loading a session, so its Replay method reports true.
var MarkReplay func(update any)
