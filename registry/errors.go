package registry

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels for errors.Is; the typed errors below match them.
var (
	// ErrMalformed: a registry document is not one (*MalformedError).
	ErrMalformed = errors.New("registry: malformed registry")
	// ErrUnknownAgent: the registry has no agent of that id.
	ErrUnknownAgent = errors.New("registry: no such agent")
	// ErrPlatform: the agent has no distribution for this platform
	// (*PlatformError).
	ErrPlatform = errors.New("registry: no distribution for this platform")
	// ErrInsecureURL: a URL that is not https (plain http is allowed only
	// to a loopback address): a registry's, a download's or a redirect's,
	// and an archive's in a registry document, refused when it is read
	// (a *MalformedError that matches it).
	ErrInsecureURL = errors.New("registry: not an https URL")
	// ErrTooLarge: a download or an unpacked archive passed its bound.
	ErrTooLarge = errors.New("registry: too large")
	// ErrUnsafeArchive: an archive entry that would write outside its
	// directory, or is a device, or sets setuid (*ArchiveError).
	ErrUnsafeArchive = errors.New("registry: unsafe archive")
	// ErrChecksum: the archive is not the one recorded or announced for
	// this version (*ChecksumError).
	ErrChecksum = errors.New("registry: archive checksum differs")
	// ErrDownload: a download failed (an HTTP status, a cut-off body).
	ErrDownload = errors.New("registry: download failed")
	// ErrStalled: a download that made too little progress (it matches
	// ErrDownload too).
	ErrStalled = errors.New("registry: download stalled")
	// ErrNotInstalled: a binary agent that is not in the cache, asked for
	// without installing.
	ErrNotInstalled = errors.New("registry: agent not installed")
)

// MalformedError is a registry document that is not one: where (empty for
// the document as a whole) and why. Source is the file or URL, when known;
// Err, when set, is the cause (ErrInsecureURL for an archive not over
// https), which errors.Is and errors.As reach.
type MalformedError struct {
	Source string
	Where  string
	Reason string
	Err    error
}

func (e *MalformedError) Error() string {
	var b strings.Builder
	b.WriteString("registry")
	if e.Source != "" {
		b.WriteString(" " + e.Source)
	}
	b.WriteString(" is malformed: ")
	if e.Where != "" {
		b.WriteString(e.Where + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Is makes a *MalformedError match ErrMalformed.
func (e *MalformedError) Is(target error) bool { return target == ErrMalformed }

// Unwrap is the cause, if any.
func (e *MalformedError) Unwrap() error { return e.Err }

// PlatformError is an agent without a distribution for Platform; Offered
// are the platforms its binary distribution has.
type PlatformError struct {
	ID       string
	Platform string
	Offered  []string
}

func (e *PlatformError) Error() string {
	offered := "none"
	if len(e.Offered) > 0 {
		offered = strings.Join(e.Offered, ", ")
	}
	return fmt.Sprintf("agent %s has no distribution for %s (no npx or uvx package either); its binaries are for: %s", e.ID, e.Platform, offered)
}

// Is makes a *PlatformError match ErrPlatform.
func (e *PlatformError) Is(target error) bool { return target == ErrPlatform }

// ArchiveError is an archive entry refused: its name and why.
type ArchiveError struct {
	Entry  string
	Reason string
}

func (e *ArchiveError) Error() string {
	return fmt.Sprintf("unsafe archive: entry %q %s: nothing installed", e.Entry, e.Reason)
}

// Is makes an *ArchiveError match ErrUnsafeArchive.
func (e *ArchiveError) Is(target error) bool { return target == ErrUnsafeArchive }

// ChecksumError is an archive whose SHA-256 is not the one expected for
// the version: Want is what was recorded at the first install (or what
// the registry announced), Got what arrived.
type ChecksumError struct {
	ID, Version string
	Want, Got   string
	Recorded    bool // Want is the first install's, not the registry's
}

func (e *ChecksumError) Error() string {
	from := "the registry announces"
	if e.Recorded {
		from = "was recorded when it was first installed"
	}
	return fmt.Sprintf("the archive of %s %s has SHA-256 %s, but %s %s: refused (the same version must be the same archive)", e.ID, e.Version, e.Got, from, e.Want)
}

// Is makes a *ChecksumError match ErrChecksum.
func (e *ChecksumError) Is(target error) bool { return target == ErrChecksum }

// tooLarge is an ErrTooLarge naming what and the bound.
func tooLarge(what string, limit int64) error {
	return fmt.Errorf("%w: %s is more than %d bytes", ErrTooLarge, what, limit)
}
