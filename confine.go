package acphost

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/acphost/acphost/internal/confine"
)

// Confinement has the kernel (Linux Landlock) confine the agent process,
// and every process it starts (its tools, its shell commands, its MCP
// servers, and the commands the host runs for it through TerminalOptions),
// to creating, writing, removing, renaming and linking files beneath
// Writable, and writing to /dev/null, /dev/zero, /dev/full and
// pseudo-terminals (/dev/ptmx, /dev/pts: shell tools open them). Reading
// stays allowed everywhere. Symlinks, subprocesses and cd do not widen it:
// the kernel checks the directories a file is reached through. The agent
// also runs in a session of its own, without a controlling terminal to
// type into, and set-user-id programs lose their powers. It needs Linux
// 5.13 or later with Landlock: elsewhere Start fails with ErrUnsupported
// rather than run the agent unconfined.
//
// Dir is not implied. List it for an agent that edits the project; leave it
// out for one that must only read it, whatever it is told (a plan mode the
// agent's own tools cannot get around). Agents keep state of their own, for
// example ~/.claude or ~/.codex, a cache and a temporary directory: list
// what the agent needs, or it fails in its own way.
//
// From Linux 6.12 (Landlock ABI 6) it also cannot signal processes outside
// its confinement (the host, the user's other processes) nor connect to
// abstract unix sockets created outside it.
//
// Not covered: file modes, owners, times and extended attributes;
// truncating a file before Linux 6.2 (Landlock ABI 3); a file outside
// reached through a hard link inside Writable; writing to the user's other
// terminals (and, for an agent running as root, typing into them); reading
// and the network. /dev/shm is not writable (POSIX semaphores fail) but in
// plan mode's private view (NoPlanView). See SPEC.md.
type Confinement struct {
	Writable []string // absolute directories
	// While the client is in plan mode (ACPOptions.PlanMode, SetPlanMode)
	// Writable does not apply: the agent may write only the state
	// directories of its profile (ACPOptions.Profile, else the one its
	// command names; made if missing), a private temporary directory
	// (TMPDIR, removed at Close) and PlanWritable. An agent started in one
	// mode is restarted in the other before the next turn after SetPlanMode
	// changes it, when it can re-attach its sessions (session/load or
	// resume); see Enforcement.
	PlanWritable []string
	// PlanReadOnly are more trees the agent may never change in plan mode,
	// besides its working directory (ACPOptions.Dir) and the fs roots
	// (FSOptions.AdditionalDirs), which always are: where the agent runs in
	// a private view of the file system (see NoPlanView), they are bound
	// read-only over whatever else holds them.
	PlanReadOnly []string
	// PlanOnly confines the agent in plan mode only: outside it, the agent
	// is not confined at all (Writable is ignored).
	PlanOnly bool
	// NoPlanView keeps plan mode to Landlock alone: no private view of the
	// file system (see SPEC.md, Plan mode). The zero value gives the view
	// wherever the kernel allows it: on Linux, the agent then runs in a
	// mount namespace of its own where its working directory, the fs roots
	// and PlanReadOnly are read-only, its homes (HOME, the user's home), the
	// temporary directories (/tmp, /var/tmp, /dev/shm), /run and
	// XDG_RUNTIME_DIR are copy-on-write copies whose writes stay in the
	// agent's private memory (at most PlanViewBytes, lost when it exits) and
	// whose unix sockets it cannot connect to, and its state directories,
	// TMPDIR and PlanWritable are the real ones. So an agent started through
	// a launcher that gives it a home of its own runs, and nothing it writes
	// reaches the user's files but its own state.
	NoPlanView bool
	// PlanViewBytes caps the memory of the view's copies (1 GiB when 0).
	PlanViewBytes int64
}

// checkConfinement fails early when confinement is asked for where the
// kernel cannot give it, or with a relative directory.
func checkConfinement(o *ACPOptions) error {
	if err := checkContain(o); err != nil {
		return err
	}
	var writable []string
	switch {
	case o.Process.Confine != nil:
		writable = append(slices.Clone(o.Process.Confine.Writable), o.Process.Confine.PlanWritable...)
	case o.Terminal == nil || !o.Terminal.Confine:
		return nil
	}
	if !confine.Available() {
		return fmt.Errorf("acphost: confinement: %w (%w)", confine.ErrUnsupported, ErrUnsupported)
	}
	if o.Terminal != nil {
		writable = append(slices.Clone(writable), o.Terminal.Writable...)
	}
	for _, dir := range writable {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("acphost: confinement: writable directory %q is not absolute", dir)
		}
	}
	return nil
}

// CanConfine reports whether Confinement can be had here (Linux with
// Landlock); where it cannot, Start with ACPOptions.Process.Confine fails with
// ErrUnsupported.
func CanConfine() bool { return confine.Available() }
