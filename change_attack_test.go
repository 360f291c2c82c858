package acphost_test

import (
	"context"
	"strings"
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A change is judged by what it does, not by the kind the agent names
// (issue 35): a request whose tool call carries a diff, or whose options'
// structured changes write, is a change to plan mode, RejectChanges,
// AllowReads and detection alike, whatever its kind.

// readKinds are the kinds ReadOnlyKind calls read-only.
var readKinds = []string{"read", "search", "fetch", "think"}

// permissionWith is session/request_permission params for tool call id of
// kind, with extra members of its tool call (content, locations) and the
// standard options, the allow_once one carrying optionMeta (a _meta
// object; "" for none).
func permissionWith(id, kind, toolExtra, optionMeta string) string {
	allowMeta := ""
	if optionMeta != "" {
		allowMeta = `,"_meta":` + optionMeta
	}
	tc := `{"toolCallId":"` + id + `","title":"look","kind":"` + kind + `"` + toolExtra + `}`
	return `{"sessionId":"s1","toolCall":` + tc + `,"options":[` +
		`{"optionId":"allow","name":"Allow","kind":"allow_once"` + allowMeta + `},` +
		`{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`
}

const projectDiff = `,"content":[{"type":"diff","path":"/work/proj/main.go","oldText":"a","newText":"b"}]`

// grants is an option _meta record with one change (JSON).
func grants(change string) string {
	return `{"permission":{"version":1,"changes":[` + change + `]}}`
}

// The writing shapes: a diff of a project file, and structured changes
// that write.
var writingRequests = map[string]struct{ tool, meta string }{
	"diff":              {tool: projectDiff},
	"diff-without-path": {tool: `,"content":[{"type":"diff","newText":"b"}]`},
	"grant-write": {meta: grants(`{"type":"grant","operation":"grant","targets":[{"type":"filesystem","access":["write"],
		"matcher":{"type":"directory","path":"/work/proj"}}]}`)},
	"rule-unrestricted": {meta: grants(`{"type":"policy_rule","operation":"add","ruleBehavior":"allow",
		"targets":[{"type":"filesystem","matcher":{"type":"directory","path":"/work/proj"}}]}`)},
	"access-unknown": {meta: grants(`{"type":"grant","operation":"grant","targets":[{"type":"filesystem","access":["read","modify"],
		"matcher":{"type":"exact_path","path":"/work/proj/main.go"}}]}`)},
	"permission-mode": {meta: grants(`{"type":"permission_mode","operation":"set","provider":"claudeCode","mode":"acceptEdits"}`)},
	"target-unknown":  {meta: grants(`{"type":"grant","operation":"grant","targets":[{"type":"volume","path":"/work/proj"}]}`)},
}

// The shapes that only read: a location (a path touched, not written),
// read access, network and command rules, narrowing rules.
var readingRequests = map[string]struct{ tool, meta string }{
	"plain":    {},
	"location": {tool: `,"locations":[{"path":"/work/proj/main.go","line":3}]`},
	"text":     {tool: `,"content":[{"type":"content","content":{"type":"text","text":"a diff, says the text"}}]`},
	"grant-read": {meta: grants(`{"type":"grant","operation":"grant","targets":[{"type":"filesystem","access":["read"],
		"matcher":{"type":"exact_path","path":"/work/proj"}}]}`)},
	"network": {meta: grants(`{"type":"grant","operation":"grant","targets":[{"type":"network","matcher":{"type":"any"}}]}`)},
	"deny-filesystem": {meta: grants(`{"type":"policy_rule","operation":"add","ruleBehavior":"deny",
		"targets":[{"type":"filesystem","matcher":{"type":"glob","pattern":"**"}}]}`)},
	"remove-directory": {meta: grants(`{"type":"policy_rule","operation":"remove","ruleBehavior":"allow",
		"targets":[{"type":"filesystem","matcher":{"type":"directory","path":"/outside"}}]}`)},
}

func parsedRequest(t *testing.T, params string) *acp.PermissionRequest {
	t.Helper()
	req, err := acp.ParsePermissionRequest(acphost.Raw(params))
	require.NoError(t, err, params)
	return req
}

// The policies: a read-kind request that writes is rejected by
// RejectChanges and not allowed by AllowReads; one that only reads passes.
func TestAttackPoliciesJudgeAReadByWhatItDoes(t *testing.T) {
	ctx := context.Background()
	ask := func(context.Context, *acp.PermissionRequest) (string, error) { return "asked", nil }
	for _, kind := range readKinds {
		for name, w := range writingRequests {
			req := parsedRequest(t, permissionWith("t1", kind, w.tool, w.meta))
			assert.False(t, req.ReadOnly(), "%s %s", kind, name)
			id, _ := acphost.RejectChanges(ask)(ctx, req)
			assert.Equal(t, "reject", id, "RejectChanges: a %s that writes (%s)", kind, name)
			id, _ = acphost.AllowReads(nil)(ctx, req)
			assert.Equal(t, "reject", id, "AllowReads: a %s that writes (%s)", kind, name)
			id, _ = acphost.AllowReads(ask)(ctx, req)
			assert.Equal(t, "asked", id, "AllowReads asks its fallback about a %s that writes (%s)", kind, name)
		}
		for name, r := range readingRequests {
			req := parsedRequest(t, permissionWith("t1", kind, r.tool, r.meta))
			assert.True(t, req.ReadOnly(), "%s %s", kind, name)
			id, _ := acphost.AllowReads(nil)(ctx, req)
			assert.Equal(t, "allow", id, "AllowReads: a %s that reads (%s)", kind, name)
			id, _ = acphost.RejectChanges(ask)(ctx, req)
			assert.Equal(t, "asked", id, "RejectChanges passes on a %s that reads (%s)", kind, name)
		}
	}
}

// Plan mode on the wire: the default answer (no hook) and a hook that
// allows everything; a read-kind request carrying a diff, or structured
// changes that write, is rejected before the hook is asked.
func TestAttackPlanModeRejectsAReadThatWrites(t *testing.T) {
	for _, hook := range []string{"default", "allow-all"} {
		for _, kind := range readKinds {
			for name, w := range writingRequests {
				t.Run(hook+"/"+kind+"/"+name, func(t *testing.T) {
					script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
						fakeagent.Ask(acphost.Raw(permissionWith("t1", kind, w.tool, w.meta))),
						fakeagent.Say(fakeagent.Text("done")),
					}}}}
					opts := acphost.ACPOptions{PlanMode: true}
					asked := 0
					if hook == "allow-all" {
						opts.OnPermission = func(ctx context.Context, req *acp.PermissionRequest) (string, error) {
							asked++
							return acphost.AllowOption(req), nil
						}
					}
					c, fa := acphost.ConnectFake(t, script, opts)
					_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
					require.NoError(t, err)
					answers := acphost.PermissionAnswers(fa.Agent)
					require.Len(t, answers, 1)
					assert.Contains(t, answers[0], `"optionId":"reject"`)
					assert.Zero(t, asked, "the hook was asked about a change in plan mode")
				})
			}
		}
	}
	// A read with a location is still a read: the default allows it.
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Ask(acphost.Raw(permissionWith("t1", "read", readingRequests["location"].tool, ""))),
	}}}}
	c, fa := acphost.ConnectFake(t, script, acphost.ACPOptions{PlanMode: true})
	_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
	require.NoError(t, err)
	require.Equal(t, []string{`{"outcome":{"optionId":"allow","outcome":"selected"}}`}, normalizedAnswers(t, fa.Agent))
}

// normalizedAnswers are the permission answers the agent got, re-encoded
// with sorted keys.
func normalizedAnswers(t *testing.T, a *fakeagent.Agent) []string {
	var out []string
	for _, s := range acphost.PermissionAnswers(a) {
		var v any
		require.NoError(t, acphost.JSONUnmarshal([]byte(s), &v))
		out = append(out, string(acphost.MustMarshal(v)))
	}
	return out
}

// Detection counts the same way: a read-kind tool call the agent reports
// completed with a diff is a change made in plan mode; so is a read-kind
// one whose request offered structured changes that write, rejected,
// then reported done. A completed read with only a location is not.
func TestAttackPlanModeDetectsAReadThatWrote(t *testing.T) {
	for _, kind := range readKinds {
		t.Run(kind+"/diff", func(t *testing.T) {
			done := acphost.Raw(`{"sessionUpdate":"tool_call","toolCallId":"r1","title":"look","kind":"` + kind + `","status":"completed"` + projectDiff + `}`)
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(done), {WaitCancel: true}}}}}
			c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{PlanMode: true})
			_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
			require.ErrorIs(t, err, acphost.ErrPlanModeBypassed)
		})
		t.Run(kind+"/diff-in-update", func(t *testing.T) {
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.ToolCall("r1", "look", kind)),
				fakeagent.Say(acphost.Raw(`{"sessionUpdate":"tool_call_update","toolCallId":"r1","status":"completed"` + projectDiff + `}`)),
				{WaitCancel: true},
			}}}}
			c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{PlanMode: true})
			_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
			require.ErrorIs(t, err, acphost.ErrPlanModeBypassed)
		})
		t.Run(kind+"/changes-asked", func(t *testing.T) {
			w := writingRequests["grant-write"]
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
				fakeagent.Say(fakeagent.ToolCall("r1", "look", kind)),
				fakeagent.Ask(acphost.Raw(permissionWith("r1", kind, "", w.meta))),
				fakeagent.Say(fakeagent.ToolUpdate("r1", "completed")),
				{WaitCancel: true},
			}}}}
			c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{PlanMode: true})
			_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
			require.ErrorIs(t, err, acphost.ErrPlanModeBypassed)
		})
		t.Run(kind+"/location", func(t *testing.T) {
			done := acphost.Raw(`{"sessionUpdate":"tool_call","toolCallId":"r1","title":"look","kind":"` + kind + `","status":"completed"` + readingRequests["location"].tool + `}`)
			script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{fakeagent.Say(done), fakeagent.Say(fakeagent.Text("read"))}}}}
			c, _ := acphost.ConnectFake(t, script, acphost.ACPOptions{PlanMode: true})
			resp, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
			require.NoError(t, err)
			require.Equal(t, "read", resp.Text)
		})
	}
}

// RequireAsking (--permission reads and reject): a read-kind request that
// writes, allowed by nobody (AllowReads' fallback rejects it), then
// reported done, is an unasked change.
func TestAttackRequireAskingCountsAReadThatWrote(t *testing.T) {
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.ToolCall("r1", "look", "fetch")),
		fakeagent.Ask(acphost.Raw(permissionWith("r1", "fetch", projectDiff, ""))),
		fakeagent.Say(fakeagent.ToolUpdate("r1", "completed")),
		{WaitCancel: true},
	}}}}
	c, fa := acphost.ConnectFake(t, script, acphost.ACPOptions{RequireAsking: true, OnPermission: acphost.AllowReads(nil)})
	_, err := c.GenerateCtx(acphost.TurnCtx(t), acphost.Request{Prompt: "look"})
	require.ErrorIs(t, err, acphost.ErrUnaskedChange)
	answers := acphost.PermissionAnswers(fa.Agent)
	require.Len(t, answers, 1)
	require.True(t, strings.Contains(answers[0], `"reject"`), answers[0])
}
