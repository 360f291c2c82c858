package acphost

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func request(kind ToolKind, title string, kinds ...PermissionKind) *PermissionRequest {
	req := &PermissionRequest{SessionID: "s1", ToolCall: ToolCall{ID: "t", Title: title, Kind: kind}}
	for _, k := range kinds {
		req.Options = append(req.Options, PermissionOption{ID: string(k), Kind: k})
	}
	return req
}

var all = []PermissionKind{AllowAlways, AllowOnce, RejectAlways, RejectOnce}

func TestPolicies(t *testing.T) {
	ctx := context.Background()
	ask := func(context.Context, *PermissionRequest) (string, error) { return "asked", nil }
	for _, kind := range []ToolKind{ToolEdit, ToolDelete, ToolMove, ToolExecute, ToolOther, ToolSwitchMode, "future_kind", ""} {
		id, _ := RejectWrites(ask)(ctx, request(kind, "x", all...))
		assert.Equal(t, "reject_once", id, "RejectWrites must reject %q", kind)
	}
	for _, kind := range []ToolKind{ToolRead, ToolSearch, ToolFetch, ToolThink} {
		id, _ := RejectWrites(ask)(ctx, request(kind, "x", all...))
		assert.Equal(t, "asked", id, "RejectWrites passes %q on", kind)
		id, _ = RejectWrites(nil)(ctx, request(kind, "x", all...))
		assert.Equal(t, "allow_once", id)
		id, _ = AllowReads(nil)(ctx, request(kind, "x", all...))
		assert.Equal(t, "allow_once", id)
	}
	id, _ := AllowReads(nil)(ctx, request(ToolEdit, "x", all...))
	assert.Equal(t, "reject_once", id)
	id, _ = AllowAll()(ctx, request(ToolEdit, "x", all...))
	assert.Equal(t, "allow_once", id, "allow_once before allow_always: nothing persists by surprise")
	id, _ = AllowAll()(ctx, request(ToolEdit, "x", AllowAlways, RejectOnce))
	assert.Equal(t, "allow_always", id)
	id, _ = RejectAll()(ctx, request(ToolRead, "x", all...))
	assert.Equal(t, "reject_once", id)
	id, _ = RejectAll()(ctx, request(ToolRead, "x", AllowOnce, RejectAlways))
	assert.Equal(t, "reject_always", id)
}

func TestRememberAlways(t *testing.T) {
	ctx := context.Background()
	asked := 0
	answer := "allow_always"
	p := Remember(func(context.Context, *PermissionRequest) (string, error) { asked++; return answer, nil })
	id, err := p(ctx, request(ToolExecute, "npm test", all...))
	require.NoError(t, err)
	assert.Equal(t, "allow_always", id)
	id, _ = p(ctx, request(ToolExecute, "npm test", all...))
	assert.Equal(t, "allow_always", id)
	assert.Equal(t, 1, asked, "the second identical request is answered from memory")

	answer = "allow_once"
	id, _ = p(ctx, request(ToolExecute, "npm publish", all...))
	assert.Equal(t, "allow_once", id)
	assert.Equal(t, 2, asked, "another command is asked again")
	other := request(ToolExecute, "npm test", all...)
	other.SessionID = "s2"
	p(ctx, other)
	assert.Equal(t, 3, asked, "memory is per session")

	answer = "reject_always"
	p(ctx, request(ToolEdit, "a.go", all...))
	id, _ = p(ctx, request(ToolEdit, "a.go", all...))
	assert.Equal(t, "reject_always", id)
	assert.Equal(t, 4, asked)
}

// TestRejectChangesRejectsCommandsToo: the policy's clearer name and its
// old one reject every kind that can change anything, commands included,
// and pass read-only kinds on.
func TestRejectChangesRejectsCommandsToo(t *testing.T) {
	for _, policy := range []PermissionFunc{RejectChanges(nil), RejectWrites(nil)} {
		for kind, allow := range map[ToolKind]bool{ToolExecute: false, ToolEdit: false, ToolKind("new-kind"): false, ToolRead: true, ToolSearch: true} {
			req := &PermissionRequest{ToolCall: ToolCall{Kind: kind}, Options: []PermissionOption{
				{ID: "y", Kind: AllowOnce}, {ID: "n", Kind: RejectOnce}}}
			id, err := policy(context.Background(), req)
			if err != nil || (id == "y") != allow {
				t.Errorf("%s: answered %q, %v; want allowed %v", kind, id, err, allow)
			}
		}
	}
	if ev := (StreamEvent{Name: "Read main.go"}); ev.Title() != "Read main.go" {
		t.Errorf("StreamEvent.Title = %q", ev.Title())
	}
}
