package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/wire"
)

// FSOptions turns on the host's file service: fs/read_text_file and
// fs/write_text_file, advertised in initialize only when served. Every path
// is confined to the session's roots: ACPOptions.Dir plus AdditionalDirs.
// `..`, absolute paths elsewhere, symlinks that resolve outside and paths
// ending in "/" or "/." are refused with an error that says why. Each root
// is opened once, when the agent connects, and every access starts from
// that open directory, following no symlink once the path is resolved; a
// write lands exactly on the file that was resolved (and reviewed), or is
// refused if that file changed meanwhile.
type FSOptions struct {
	// Read and Write choose which methods are served.
	Read, Write bool
	// AdditionalDirs are further roots (absolute, existing).
	AdditionalDirs []string
	// MissingFileError makes a read of a missing file fail with -32002, as
	// the spec names. By default such a read answers empty content, because
	// gemini-cli reads a file before creating it and fails on the error.
	MissingFileError bool
	// MaxReadBytes bounds the content one read returns, and the current
	// content shown to OnWriteFile; zero means DefaultMaxReadBytes. A read
	// past it fails (-32602, "file too large", matching ErrFileTooLarge)
	// without the file being read into memory; the agent can still read the
	// file in parts with line and limit. With OnWriteFile set, a write to an
	// existing file over the bound is refused the same way before review:
	// a reviewer cannot be shown it, and a diff against nothing would
	// present it as a new file.
	MaxReadBytes int64
	// OnReadFile, if set, is asked first and may serve content the disk
	// does not have (an editor's unsaved buffer): ok false falls through to
	// the disk. It runs on its own goroutine; ctx ends if the agent
	// withdraws the request or the client closes.
	OnReadFile func(ctx context.Context, sessionID, path string) (content string, ok bool, err error)
	// OnWriteFile, if set, reviews each write before it lands: it returns
	// the content to write (the proposal, or the user's amendment) or an
	// error to refuse the write. It runs on its own goroutine and may wait
	// for a human.
	OnWriteFile func(ctx context.Context, p *WriteProposal) (content string, err error)
}

// WriteProposal is a write the agent asked for, before it lands.
type WriteProposal struct {
	SessionID string
	// Path is the absolute path the agent named; Resolved is where it lands
	// (symlinks inside the roots followed, once: the write lands on this
	// file, and is refused if, by the time the hook returns, Resolved no
	// longer holds the file, or the absence of one, that was shown).
	Path, Resolved string
	// Exists says whether the file exists; Current is its content then
	// (at most FSOptions.MaxReadBytes).
	Exists  bool
	Current string
	// Proposed is the content the agent wants to write.
	Proposed string
}

// FileDiff returns the proposal as a FileDiff (OldText nil for a new file).
func (p *WriteProposal) FileDiff() acp.FileDiff {
	d := acp.FileDiff{Path: p.Path, NewText: p.Proposed}
	if p.Exists {
		cur := p.Current
		d.OldText = &cur
	}
	return d
}

// DefaultMaxReadBytes is the MaxReadBytes of a zero FSOptions: 8 MiB, above
// any hand-written source file and the lockfiles agents commonly read
// (a few MiB), and small enough that the host's memory for one read (the
// content, then its JSON encoding) stays in tens of MiB.
const DefaultMaxReadBytes = 8 << 20

// maxRead returns the effective MaxReadBytes.
func (o *FSOptions) maxRead() int64 {
	if o.MaxReadBytes > 0 {
		return o.MaxReadBytes
	}
	return DefaultMaxReadBytes
}

// fileService serves fs/* for one agent with what it needs: the options,
// the roots (and a confined agent's Writable), plan mode, and a way to run
// the hooks as the agent's callbacks.
type fileService struct {
	opts     *FSOptions
	roots    *sandbox.Roots
	writable *sandbox.Roots // nil unless the agent is confined
	planMode func() bool
	hook     hookRunner
}

// hookRunner runs user code f for session, as a callback of the agent
// (see callbacks): a panic becomes the error.
type hookRunner func(session, what string, f func()) error

// handler returns the handler of an fs method, nil for one not served.
func (f *fileService) handler(method string) func(context.Context, json.RawMessage) (any, error) {
	switch {
	case f.opts == nil:
	case method == "fs/read_text_file" && f.opts.Read:
		return f.read
	case method == "fs/write_text_file" && f.opts.Write:
		return f.write
	}
	return nil
}

// maxFileRequests bounds the fs requests that hold a file's content (up to
// MaxReadBytes, and its JSON encoding) running at once; more wait.
const maxFileRequests = 4

// holdsFile reports the methods whose handling holds file content.
func holdsFile(method string) bool {
	return method == "fs/read_text_file" || method == "fs/write_text_file"
}

// wireError maps an error to the JSON-RPC error the agent sees.
func wireError(err error) *wire.Error {
	var re *RPCError
	if errors.As(err, &re) {
		return &wire.Error{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	code := acp.CodeInternalError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = acp.CodeResourceNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrInvalid), errors.Is(err, ErrRefused):
		code = acp.CodeInvalidParams
	}
	return &wire.Error{Code: code, Message: err.Error()}
}

type readParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Limit     int    `json:"limit"`
}

func (f *fileService) read(ctx context.Context, raw json.RawMessage) (any, error) {
	var p readParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &RPCError{Code: acp.CodeInvalidParams, Message: err.Error()}
	}
	fo := f.opts
	if fo.OnReadFile != nil {
		var content string
		var ok bool
		var err error
		if perr := f.hook(p.SessionID, "OnReadFile", func() { content, ok, err = fo.OnReadFile(ctx, p.SessionID, p.Path) }); perr != nil {
			err = perr
		}
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := f.roots.ResolveFile(p.Path); err != nil {
				return nil, err
			}
			content, err := sandbox.Lines(content, p.Line, p.Limit)
			if err != nil {
				return nil, err
			}
			return map[string]string{"content": content}, nil
		}
	}
	content, err := f.roots.ReadText(ctx, p.Path, p.Line, p.Limit, fo.maxRead())
	if errors.Is(err, fs.ErrNotExist) && !fo.MissingFileError {
		if _, rerr := f.roots.ResolveFile(p.Path); rerr == nil {
			return map[string]string{"content": ""}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return map[string]string{"content": content}, nil
}

type writeParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}

func (f *fileService) write(ctx context.Context, raw json.RawMessage) (any, error) {
	var p writeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &RPCError{Code: acp.CodeInvalidParams, Message: err.Error()}
	}
	if f.planMode() {
		return nil, fmt.Errorf("%w: plan mode: no writes (%s)", ErrRefused, p.Path)
	}
	t, err := f.bind(p.Path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	content := p.Content
	if hook := f.opts.OnWriteFile; hook != nil {
		prop := &WriteProposal{SessionID: p.SessionID, Path: p.Path, Resolved: t.Resolved(), Exists: t.Exists(), Proposed: p.Content}
		if prop.Current, err = t.Current(ctx, f.opts.maxRead()); err != nil {
			return nil, err
		}
		if perr := f.hook(p.SessionID, "OnWriteFile", func() { content, err = hook(ctx, prop) }); perr != nil {
			err = perr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	if err := ctx.Err(); err != nil { // withdrawn, or the client is closing: write nothing
		return nil, err
	}
	if err := t.Write(content); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// bind resolves a write's path once (what is reviewed is what is
// written): inside the roots and, for a confined agent, inside its
// Confinement.Writable too, since the host never writes where the agent
// could not have been allowed to.
func (f *fileService) bind(path string) (*sandbox.Target, error) {
	if f.writable == nil {
		return f.roots.Bind(path)
	}
	if _, err := f.roots.ResolveFile(path); err != nil {
		return nil, err
	}
	t, err := f.writable.Bind(path)
	var se *sandbox.Error
	if errors.As(err, &se) && (se.Reason == sandbox.ReasonOutside || se.Reason == sandbox.ReasonSymlinkEscape) {
		return nil, fmt.Errorf("%w: %s is outside the directories the agent is confined to (Confinement.Writable)", ErrRefused, path)
	}
	return t, err
}

// newWritable opens the directories a confined agent may write, for the
// host's writes on its behalf; nil when the agent is not confined or the
// host does not write for it.
func newWritable(opts *ACPOptions) (*sandbox.Roots, error) {
	if opts.Process.Confine == nil || opts.FS == nil || !opts.FS.Write || len(opts.Process.Confine.Writable) == 0 {
		return nil, nil
	}
	r, err := sandbox.New(opts.Process.Confine.Writable...)
	if err != nil {
		return nil, wrapOp("confinement", err)
	}
	return r, nil
}

// newRoots builds the sandbox for the session's directories; it holds them
// open until its Close.
func newRoots(opts *ACPOptions) (*sandbox.Roots, error) {
	if opts.FS == nil && opts.Terminal == nil {
		return nil, nil
	}
	var extra []string
	if opts.FS != nil {
		extra = opts.FS.AdditionalDirs
	}
	r, err := sandbox.New(append([]string{opts.Dir}, extra...)...)
	if err != nil {
		return nil, wrapOp("session roots", err)
	}
	return r, nil
}
