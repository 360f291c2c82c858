package acphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/acphost/acphost/internal/sandbox"
	"github.com/acphost/acphost/internal/wire"
)

// FSOptions turns on the host's file service: fs/read_text_file and
// fs/write_text_file, advertised in initialize only when served. Every path
// is confined to the session's roots: ACPOptions.Dir plus AdditionalDirs.
// `..`, absolute paths elsewhere and symlinks that resolve outside are
// refused with an error that says why.
type FSOptions struct {
	// Read and Write choose which methods are served.
	Read, Write bool
	// AdditionalDirs are further roots (absolute, existing).
	AdditionalDirs []string
	// MissingFileError makes a read of a missing file fail with -32002, as
	// the spec names. By default such a read answers empty content, because
	// gemini-cli reads a file before creating it and fails on the error.
	MissingFileError bool
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
	// (symlinks inside the roots followed).
	Path, Resolved string
	// Exists says whether the file exists; Current is its content then.
	Exists  bool
	Current string
	// Proposed is the content the agent wants to write.
	Proposed string
}

// FileDiff returns the proposal as a FileDiff (OldText nil for a new file).
func (p *WriteProposal) FileDiff() FileDiff {
	d := FileDiff{Path: p.Path, NewText: p.Proposed}
	if p.Exists {
		cur := p.Current
		d.OldText = &cur
	}
	return d
}

// ErrRefused is wrapped by errors the client answers for writes and
// commands it refuses (plan mode, a hook's refusal).
var ErrRefused = errors.New("acphost: refused")

// serveRequest answers an agent→client request on a goroutine of its own
// with a ctx that $/cancel_request or the agent's end cancels.
func (a *agent) serveRequest(m wire.Message, in *inflight, handle func(ctx context.Context, params json.RawMessage) (any, error)) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.finish(in)
		defer in.cancel()
		defer a.untrack(m.ID)
		result, err := handle(in.ctx, m.Params)
		switch {
		case in.ctx.Err() != nil:
			a.reply(m.ID, nil, &wire.Error{Code: CodeRequestCancelled, Message: "request cancelled"})
		case err != nil:
			a.reply(m.ID, nil, wireError(err))
		default:
			a.reply(m.ID, result, nil)
		}
	}()
}

// wireError maps an error to the JSON-RPC error the agent sees.
func wireError(err error) *wire.Error {
	var re *RPCError
	if errors.As(err, &re) {
		return &wire.Error{Code: re.Code, Message: re.Message, Data: re.Data}
	}
	code := CodeInternalError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = CodeResourceNotFound
	case errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrInvalid), errors.Is(err, ErrRefused):
		code = CodeInvalidParams
	}
	return &wire.Error{Code: code, Message: err.Error()}
}

type readParams struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Limit     int    `json:"limit"`
}

func (a *agent) readTextFile(ctx context.Context, raw json.RawMessage) (any, error) {
	var p readParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: err.Error()}
	}
	fo := a.opts.FS
	if fo.OnReadFile != nil {
		var content string
		var ok bool
		var err error
		if perr := a.userCall(goid(), p.SessionID, "OnReadFile", func() { content, ok, err = fo.OnReadFile(ctx, p.SessionID, p.Path) }); perr != nil {
			err = perr
		}
		if err != nil {
			return nil, err
		}
		if ok {
			if _, err := a.roots.Resolve(p.Path); err != nil {
				return nil, err
			}
			content, err := sandbox.Lines(content, p.Line, p.Limit)
			if err != nil {
				return nil, err
			}
			return map[string]string{"content": content}, nil
		}
	}
	content, err := a.roots.ReadText(p.Path, p.Line, p.Limit)
	if errors.Is(err, fs.ErrNotExist) && !fo.MissingFileError {
		if _, rerr := a.roots.Resolve(p.Path); rerr == nil {
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

func (a *agent) writeTextFile(ctx context.Context, raw json.RawMessage) (any, error) {
	var p writeParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: err.Error()}
	}
	if a.c.PlanMode() {
		return nil, fmt.Errorf("%w: plan mode: no writes (%s)", ErrRefused, p.Path)
	}
	resolved, err := a.roots.Resolve(p.Path)
	if err != nil {
		return nil, err
	}
	content := p.Content
	if hook := a.opts.FS.OnWriteFile; hook != nil {
		prop := &WriteProposal{SessionID: p.SessionID, Path: p.Path, Resolved: resolved, Proposed: p.Content}
		cur, err := a.roots.ReadText(p.Path, 0, 0)
		if err == nil {
			prop.Exists, prop.Current = true, cur
		}
		if perr := a.userCall(goid(), p.SessionID, "OnWriteFile", func() { content, err = hook(ctx, prop) }); perr != nil {
			err = perr
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRefused, err)
		}
	}
	if err := ctx.Err(); err != nil { // withdrawn, or the client is closing: write nothing
		return nil, err
	}
	if err := a.roots.WriteText(p.Path, content); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// newRoots builds the sandbox for the session's directories.
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
		return nil, fmt.Errorf("acphost: session roots: %w", err)
	}
	return r, nil
}
