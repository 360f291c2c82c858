package acp_test

import (
	"encoding/json"
	"fmt"

	"github.com/acphost/acphost/acp"
)

// The JSON of a session/request_permission request whose options carry
// structured changes, as the Claude and Codex adapters send them: an
// option's _meta.permission (or _meta.jetbrains.air.permission) record is
// {version: 1, description?, changes: [...]}, each change {type,
// operation, ruleBehavior?, provider?, mode?, lifetime?: {scope, storage?},
// targets?: [{type, access?, toolName?, matcher?: {type, argv | host,
// protocol | path | pattern | provider, value}}]}. The request's own
// _meta.permission {version: 1, title, description?} is its
// [acp.Presentation]. The changes describe; the agent decides what the
// option id does.
func ExamplePermissionChange() {
	params := json.RawMessage(`{
	  "sessionId": "s1",
	  "toolCall": {"toolCallId": "t1", "title": "Bash", "kind": "execute"},
	  "_meta": {"permission": {"version": 1, "title": "npm test", "description": "Reason: verify the change"}},
	  "options": [
	    {"optionId": "once", "name": "Yes", "kind": "allow_once"},
	    {"optionId": "always", "name": "Yes, and don't ask again", "kind": "allow_always",
	     "_meta": {"permission": {"version": 1, "changes": [
	       {"type": "policy_rule", "operation": "add", "ruleBehavior": "allow",
	        "lifetime": {"scope": "persistent", "storage": "project_local"},
	        "targets": [{"type": "command", "matcher": {"type": "argv_prefix", "argv": ["npm", "test"]}}]},
	       {"type": "grant", "operation": "grant", "lifetime": {"scope": "session"},
	        "targets": [{"type": "filesystem", "access": ["write"], "matcher": {"type": "directory", "path": "/srv/app"}}]},
	       {"type": "permission_mode", "operation": "set", "provider": "claudeCode", "mode": "acceptEdits"}
	     ]}}},
	    {"optionId": "no", "name": "No", "kind": "reject_once"}
	  ]
	}`)
	req, err := acp.ParsePermissionRequest(params)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("heading %q from %s\n", req.Presentation.SafeTitle(), req.Presentation.Source)
	for _, o := range req.Options {
		for _, c := range o.Meta.Changes {
			fmt.Printf("option %s: %s\n", o.ID, c.Describe())
			fmt.Printf("  Type=%s Operation=%s RuleBehavior=%s Provider=%s Mode=%s\n", c.Type, c.Operation, c.RuleBehavior, c.Provider, c.Mode)
			if l := c.Lifetime; l != nil {
				fmt.Printf("  Lifetime.Scope=%s Lifetime.Storage=%s\n", l.Scope, l.Storage)
			}
			for _, t := range c.Targets {
				fmt.Printf("  Target.Type=%s Access=%v Matcher.Type=%s Argv=%q Path=%s\n", t.Type, t.Access, t.Matcher.Type, t.Matcher.Argv, t.Matcher.Path)
			}
			fmt.Printf("  Known=%t Writes=%t\n", c.Known(), c.Writes())
		}
	}
	// Output:
	// heading "npm test" from _meta.permission
	// option always: Allow commands starting with `npm test` permanently, in local project settings
	//   Type=policy_rule Operation=add RuleBehavior=allow Provider= Mode=
	//   Lifetime.Scope=persistent Lifetime.Storage=project_local
	//   Target.Type=command Access=[] Matcher.Type=argv_prefix Argv=["npm" "test"] Path=
	//   Known=true Writes=false
	// option always: Allow write access under `/srv/app` for this session
	//   Type=grant Operation=grant RuleBehavior= Provider= Mode=
	//   Lifetime.Scope=session Lifetime.Storage=
	//   Target.Type=filesystem Access=[write] Matcher.Type=directory Argv=[] Path=/srv/app
	//   Known=true Writes=true
	// option always: Set Claude Code permission mode to `acceptEdits`
	//   Type=permission_mode Operation=set RuleBehavior= Provider=claudeCode Mode=acceptEdits
	//   Known=true Writes=true
}
