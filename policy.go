package acphost

import (
	"context"
	"strings"
	"sync"

	"github.com/acphost/acphost/acp"
)

// PermissionFunc decides a permission request: it answers with the ID of
// one of req.Options. It is the type of ACPOptions.OnPermission and
// SessionOptions.OnPermission; a plain func literal of this signature can
// be used wherever a PermissionFunc is expected. The policies below are
// PermissionFuncs and compose with a caller's own.
type PermissionFunc func(ctx context.Context, req *acp.PermissionRequest) (optionID string, err error)

// RejectChanges returns a policy that rejects every request that can
// change anything — every kind but the read-only ones (see ReadOnlyKind):
// edits, deletes, moves, commands (execute), mode switches and kinds it
// does not know; and a request of a read-only kind that carries a diff or
// offers changes that write (see PermissionRequest.ReadOnly) — and passes
// the rest to next (nil next allows them, preferring allow_once). It is
// the mirror of [AllowReads].
// It covers only permission requests: for the same guarantee on the
// host's own services (fs/write_text_file, terminal/*), set
// ACPOptions.PlanMode or call SetPlanMode instead: the client then applies
// this rule before OnPermission and refuses those requests too.
func RejectChanges(next PermissionFunc) PermissionFunc {
	if next == nil {
		next = AllowAll()
	}
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		if !req.ReadOnly() {
			return RejectOption(req), nil
		}
		return next(ctx, req)
	}
}

// AllowReads returns a policy that allows requests that can change
// nothing (see PermissionRequest.ReadOnly: a read-only kind, no diff, no
// option that writes) and asks fallback about everything else (nil
// fallback rejects).
func AllowReads(fallback PermissionFunc) PermissionFunc {
	if fallback == nil {
		fallback = RejectAll()
	}
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		if req.ReadOnly() {
			return AllowOption(req), nil
		}
		return fallback(ctx, req)
	}
}

// AllowAll returns a policy that allows everything, choosing allow_once over
// allow_always so that nothing persists by surprise.
func AllowAll() PermissionFunc {
	return func(_ context.Context, req *acp.PermissionRequest) (string, error) {
		return AllowOption(req), nil
	}
}

// RejectAll returns a policy that rejects everything, choosing reject_once
// over reject_always.
func RejectAll() PermissionFunc {
	return func(_ context.Context, req *acp.PermissionRequest) (string, error) {
		return RejectOption(req), nil
	}
}

// DefaultPermission is the choice made when ACPOptions.OnPermission is nil:
// AllowOption (allow_once first), else RejectOption (reject_once first);
// "" (answered "cancelled") when the agent offered neither kind.
func DefaultPermission(req *acp.PermissionRequest) string {
	if id := AllowOption(req); id != "" {
		return id
	}
	return RejectOption(req)
}

// AllowOption returns the id of the first allow_once option, else the first
// allow_always one, else "" (which the client answers as a rejection).
func AllowOption(req *acp.PermissionRequest) string {
	if o := req.FirstOption(acp.AllowOnce); o != nil {
		return o.ID
	}
	if o := req.FirstOption(acp.AllowAlways); o != nil {
		return o.ID
	}
	return ""
}

// RejectOption returns the id of the first reject_once option, else the
// first reject_always one, else "" (answered "cancelled").
func RejectOption(req *acp.PermissionRequest) string {
	if o := req.FirstOption(acp.RejectOnce); o != nil {
		return o.ID
	}
	if o := req.FirstOption(acp.RejectAlways); o != nil {
		return o.ID
	}
	return ""
}

// Remember returns a policy that remembers "always" answers: when next
// answers with an allow_always or reject_always option, later requests of
// the same session for the same tool kind and title are answered the same
// way (an option of the same kind) without asking next again. A remembered
// rejection wins over a remembered allow. The memory lives in the returned
// function; use one per client. The agent keeps its own memory too: this
// one only spares the host's UI.
func Remember(next PermissionFunc) PermissionFunc {
	var mu sync.Mutex
	rules := map[rememberKey]acp.PermissionKind{}
	return func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
		key := rememberKeyOf(req)
		mu.Lock()
		kind, ok := rules[key]
		mu.Unlock()
		if ok {
			if o := req.FirstOption(kind); o != nil {
				return o.ID, nil
			}
		}
		id, err := next(ctx, req)
		if o := req.Option(id); err == nil && o != nil && (o.Kind == acp.AllowAlways || o.Kind == acp.RejectAlways) {
			mu.Lock()
			if rules[key] != acp.RejectAlways {
				rules[key] = o.Kind
			}
			mu.Unlock()
		}
		return id, err
	}
}

type rememberKey struct {
	session string
	kind    acp.ToolKind
	title   string
}

// rememberKeyOf keys a request by session, tool kind and exact title: an
// "always" for `npm test` is never taken to cover `npm publish`.
func rememberKeyOf(req *acp.PermissionRequest) rememberKey {
	return rememberKey{session: req.SessionID, kind: req.ToolCall.Kind, title: strings.TrimSpace(req.ToolCall.Title)}
}
