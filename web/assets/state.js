// state: the server's latest "state" message (a turn running, a session
// being opened, the modes, the options…), which the controls read.

export let state = { running: false };

// setState keeps m as the state; the modules that show it are handed m by
// the event stream's handler.
export function setState(m) { state = m; }
