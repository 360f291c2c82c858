package acphost_test

import (
	"context"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func request(kind acp.ToolKind, title string, kinds ...acp.PermissionKind) *acp.PermissionRequest {
	req := &acp.PermissionRequest{SessionID: "s1", ToolCall: acp.ToolCall{ID: "t", Title: title, Kind: kind}}
	for _, k := range kinds {
		req.Options = append(req.Options, acp.PermissionOption{ID: string(k), Kind: k})
	}
	return req
}

var all = []acp.PermissionKind{acp.AllowAlways, acp.AllowOnce, acp.RejectAlways, acp.RejectOnce}

func TestPolicies(t *testing.T) {
	ctx := context.Background()
	ask := func(context.Context, *acp.PermissionRequest) (string, error) { return "asked", nil }
	for _, kind := range []acp.ToolKind{acp.ToolEdit, acp.ToolDelete, acp.ToolMove, acp.ToolExecute, acp.ToolOther, acp.ToolSwitchMode, "future_kind", ""} {
		id, _ := acphost.RejectChanges(ask)(ctx, request(kind, "x", all...))
		assert.Equal(t, "reject_once", id, "RejectChanges must reject %q", kind)
	}
	for _, kind := range []acp.ToolKind{acp.ToolRead, acp.ToolSearch, acp.ToolFetch, acp.ToolThink} {
		id, _ := acphost.RejectChanges(ask)(ctx, request(kind, "x", all...))
		assert.Equal(t, "asked", id, "RejectChanges passes %q on", kind)
		id, _ = acphost.RejectChanges(nil)(ctx, request(kind, "x", all...))
		assert.Equal(t, "allow_once", id)
		id, _ = acphost.AllowReads(nil)(ctx, request(kind, "x", all...))
		assert.Equal(t, "allow_once", id)
	}
	id, _ := acphost.AllowReads(nil)(ctx, request(acp.ToolEdit, "x", all...))
	assert.Equal(t, "reject_once", id)
	id, _ = acphost.AllowAll()(ctx, request(acp.ToolEdit, "x", all...))
	assert.Equal(t, "allow_once", id, "allow_once before allow_always: nothing persists by surprise")
	id, _ = acphost.AllowAll()(ctx, request(acp.ToolEdit, "x", acp.AllowAlways, acp.RejectOnce))
	assert.Equal(t, "allow_always", id)
	id, _ = acphost.RejectAll()(ctx, request(acp.ToolRead, "x", all...))
	assert.Equal(t, "reject_once", id)
	id, _ = acphost.RejectAll()(ctx, request(acp.ToolRead, "x", acp.AllowOnce, acp.RejectAlways))
	assert.Equal(t, "reject_always", id)
}

func TestRememberAlways(t *testing.T) {
	ctx := context.Background()
	asked := 0
	answer := "allow_always"
	p := acphost.Remember(func(context.Context, *acp.PermissionRequest) (string, error) { asked++; return answer, nil })
	id, err := p(ctx, request(acp.ToolExecute, "npm test", all...))
	require.NoError(t, err)
	assert.Equal(t, "allow_always", id)
	id, _ = p(ctx, request(acp.ToolExecute, "npm test", all...))
	assert.Equal(t, "allow_always", id)
	assert.Equal(t, 1, asked, "the second identical request is answered from memory")

	answer = "allow_once"
	id, _ = p(ctx, request(acp.ToolExecute, "npm publish", all...))
	assert.Equal(t, "allow_once", id)
	assert.Equal(t, 2, asked, "another command is asked again")
	other := request(acp.ToolExecute, "npm test", all...)
	other.SessionID = "s2"
	p(ctx, other)
	assert.Equal(t, 3, asked, "memory is per session")

	answer = "reject_always"
	p(ctx, request(acp.ToolEdit, "a.go", all...))
	id, _ = p(ctx, request(acp.ToolEdit, "a.go", all...))
	assert.Equal(t, "reject_always", id)
	assert.Equal(t, 4, asked)
}

// TestRejectChangesRejectsCommandsToo: the policy's clearer name and its
// old one reject every kind that can change anything, commands included,
// and pass read-only kinds on.
func TestRejectChangesRejectsCommandsToo(t *testing.T) {
	for _, policy := range []acphost.PermissionFunc{acphost.RejectChanges(nil), acphost.RejectChanges(nil)} {
		for kind, allow := range map[acp.ToolKind]bool{acp.ToolExecute: false, acp.ToolEdit: false, acp.ToolKind("new-kind"): false, acp.ToolRead: true, acp.ToolSearch: true} {
			req := &acp.PermissionRequest{ToolCall: acp.ToolCall{Kind: kind}, Options: []acp.PermissionOption{
				{ID: "y", Kind: acp.AllowOnce}, {ID: "n", Kind: acp.RejectOnce}}}
			id, err := policy(context.Background(), req)
			if err != nil || (id == "y") != allow {
				t.Errorf("%s: answered %q, %v; want allowed %v", kind, id, err, allow)
			}
		}
	}
	if ev := (acphost.StreamEvent{Name: "Read main.go"}); ev.Title() != "Read main.go" {
		t.Errorf("StreamEvent.Title = %q", ev.Title())
	}
}
