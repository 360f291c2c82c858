package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/acphost/acphost/claude"
	"github.com/acphost/acphost/codex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vectors in testdata/permission/<name>.json are copies of
// ../../shared/vectors/permission (real session/request_permission params);
// <name>.golden.json is the decoding expected from them, written by hand from
// permission-meta.md and the adapter documents, with Raw fields left out.

const presVectorDir = "testdata/permission"

// presSharedVectors is where the vectors came from; checked when present.
const presSharedVectors = "../../shared/vectors/permission"

type goldenRequest struct {
	Comment                 string             `json:"_comment,omitempty"`
	SessionID               string             `json:"sessionId"`
	ToolCall                goldenToolCall     `json:"toolCall"`
	Heading                 string             `json:"heading"`
	HeadingFromPresentation bool               `json:"headingFromPresentation"`
	Presentation            goldenPresentation `json:"presentation"`
	Options                 []goldenOption     `json:"options"`
}

type goldenToolCall struct {
	ID         string            `json:"id,omitempty"`
	Title      string            `json:"title,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Status     string            `json:"status,omitempty"`
	Name       string            `json:"name,omitempty"`
	Locations  []string          `json:"locations,omitempty"`
	ClaudeCode *goldenClaudeCode `json:"claudeCode,omitempty"`
}

type goldenClaudeCode struct {
	ToolName        string        `json:"toolName,omitempty"`
	ParentToolUseID string        `json:"parentToolUseId,omitempty"`
	MCPServer       *MCPServerRef `json:"mcpServer,omitempty"`
}

type goldenPresentation struct {
	Source         string `json:"source"`
	Version        int    `json:"version,omitempty"`
	Title          string `json:"title,omitempty"`
	Description    string `json:"description,omitempty"`
	HasDescription bool   `json:"hasDescription,omitempty"`
	DefaultToNo    bool   `json:"defaultToNo,omitempty"`
}

type goldenOption struct {
	ID   string      `json:"id"`
	Name string      `json:"name"`
	Kind string      `json:"kind"`
	Meta *goldenMeta `json:"meta,omitempty"` // nil: the option had no _meta
}

type goldenMeta struct {
	Version        int            `json:"version,omitempty"`
	Unknown        bool           `json:"unknown,omitempty"`
	Description    string         `json:"description,omitempty"`
	HasDescription bool           `json:"hasDescription,omitempty"`
	Changes        []goldenChange `json:"changes,omitempty"`
}

type goldenChange struct {
	Type         string          `json:"type,omitempty"`
	Operation    string          `json:"operation,omitempty"`
	RuleBehavior string          `json:"ruleBehavior,omitempty"`
	Description  string          `json:"description,omitempty"`
	Provider     string          `json:"provider,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Lifetime     *goldenLifetime `json:"lifetime,omitempty"`
	Targets      []goldenTarget  `json:"targets,omitempty"`
	Known        bool            `json:"known"`
	Describe     string          `json:"describe"`
}

type goldenLifetime struct {
	Scope   string `json:"scope,omitempty"`
	Storage string `json:"storage,omitempty"`
}

type goldenTarget struct {
	Type     string         `json:"type,omitempty"`
	Access   []string       `json:"access,omitempty"`
	ToolName string         `json:"toolName,omitempty"`
	Matcher  *goldenMatcher `json:"matcher,omitempty"`
}

type goldenMatcher struct {
	Type     string   `json:"type,omitempty"`
	Argv     []string `json:"argv,omitempty"`
	Host     string   `json:"host,omitempty"`
	Protocol string   `json:"protocol,omitempty"`
	Path     string   `json:"path,omitempty"`
	Pattern  string   `json:"pattern,omitempty"`
	Provider string   `json:"provider,omitempty"`
	Value    any      `json:"value,omitempty"`
}

// renderGolden turns a decoded request into the golden form.
func renderGolden(t *testing.T, r *PermissionRequest) goldenRequest {
	t.Helper()
	g := goldenRequest{
		SessionID: r.SessionID,
		ToolCall: goldenToolCall{
			ID: r.ToolCall.ID, Title: r.ToolCall.Title, Kind: string(r.ToolCall.Kind),
			Status: string(r.ToolCall.Status), Name: r.ToolCall.Name,
		},
		Presentation: goldenPresentation{
			Source: string(r.Presentation.Source), Version: r.Presentation.Version,
			Title: r.Presentation.Title, Description: r.Presentation.Description,
			HasDescription: r.Presentation.HasDescription, DefaultToNo: r.Presentation.DefaultToNo,
		},
	}
	for _, l := range r.ToolCall.Locations {
		g.ToolCall.Locations = append(g.ToolCall.Locations, l.Path)
	}
	if cc, ok := r.ToolCall.ClaudeCode(); ok {
		g.ToolCall.ClaudeCode = &goldenClaudeCode{ToolName: cc.ToolName, ParentToolUseID: cc.ParentToolUseID, MCPServer: cc.MCPServer}
	}
	g.Heading, g.HeadingFromPresentation = r.Heading()
	for _, o := range r.Options {
		gopt := goldenOption{ID: o.ID, Name: o.Name, Kind: string(o.Kind)}
		if o.Meta.Raw != nil {
			gm := &goldenMeta{Version: o.Meta.Version, Unknown: o.Meta.Unknown,
				Description: o.Meta.Description, HasDescription: o.Meta.HasDescription}
			for _, c := range o.Meta.Changes {
				gm.Changes = append(gm.Changes, renderChange(t, c))
			}
			gopt.Meta = gm
		}
		g.Options = append(g.Options, gopt)
	}
	return g
}

func renderChange(t *testing.T, c PermissionChange) goldenChange {
	gc := goldenChange{Type: string(c.Type), Operation: c.Operation, RuleBehavior: c.RuleBehavior,
		Description: c.Description, Provider: c.Provider, Mode: c.Mode, Known: c.Known(), Describe: c.Describe()}
	if c.Lifetime != nil {
		gc.Lifetime = &goldenLifetime{Scope: c.Lifetime.Scope, Storage: c.Lifetime.Storage}
	}
	for _, tg := range c.Targets {
		gt := goldenTarget{Type: string(tg.Type), Access: tg.Access, ToolName: tg.ToolName}
		if m := tg.Matcher; m != nil {
			gm := &goldenMatcher{Type: string(m.Type), Argv: m.Argv, Host: m.Host, Protocol: m.Protocol,
				Path: m.Path, Pattern: m.Pattern, Provider: m.Provider}
			if len(m.Value) > 0 {
				require.NoError(t, json.Unmarshal(m.Value, &gm.Value))
			}
			gt.Matcher = gm
		}
		gc.Targets = append(gc.Targets, gt)
	}
	return gc
}

// presVectors returns the vector names (without .json) in testdata.
func presVectors(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(presVectorDir, "*.json"))
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	sort.Strings(names)
	require.NotEmpty(t, names)
	return names
}

func presLoad(t testing.TB, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(presVectorDir, name+".json"))
	require.NoError(t, err)
	return b
}

func TestParsePermissionRequestGolden(t *testing.T) {
	for _, name := range presVectors(t) {
		t.Run(name, func(t *testing.T) {
			raw := presLoad(t, name)
			req, err := ParsePermissionRequest(raw)
			require.NoError(t, err)
			assert.Equal(t, string(raw), string(req.Raw), "Raw keeps the params")

			gb, err := os.ReadFile(filepath.Join(presVectorDir, name+".golden.json"))
			require.NoError(t, err, "every vector needs a hand-written golden file")
			dec := json.NewDecoder(bytes.NewReader(gb))
			dec.DisallowUnknownFields()
			var want goldenRequest
			require.NoError(t, dec.Decode(&want))
			want.Comment = ""
			got := renderGolden(t, req)
			if !assert.Equal(t, want, got) {
				out, _ := json.MarshalIndent(got, "", "  ")
				t.Logf("decoded:\n%s", out)
			}
		})
	}
}

// TestPermissionVectorsInSync checks that testdata holds every shared
// vector, unchanged, and no golden file without its vector.
func TestPermissionVectorsInSync(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join(presVectorDir, "*.golden.json"))
	require.NoError(t, err)
	names := presVectors(t)
	assert.Len(t, goldens, len(names), "one golden file per vector")
	for _, g := range goldens {
		assert.FileExists(t, strings.TrimSuffix(g, ".golden.json")+".json")
	}
	shared, err := filepath.Glob(filepath.Join(presSharedVectors, "*.json"))
	if err != nil || len(shared) == 0 {
		t.Skip("shared vectors not available")
	}
	assert.Len(t, names, len(shared))
	for _, f := range shared {
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(presVectorDir, filepath.Base(f)))
		if assert.NoError(t, err, "missing copy of %s", f) {
			assert.Equal(t, string(want), string(got), "%s differs from the shared vector", filepath.Base(f))
		}
	}
}

// TestPermissionOptionIDsByteExact compares every decoded id and option Raw
// with the params decoded independently.
func TestPermissionOptionIDsByteExact(t *testing.T) {
	for _, name := range presVectors(t) {
		raw := presLoad(t, name)
		var params struct {
			Options []json.RawMessage `json:"options"`
		}
		require.NoError(t, json.Unmarshal(raw, &params))
		req, err := ParsePermissionRequest(raw)
		require.NoError(t, err)
		require.Len(t, req.Options, len(params.Options), name)
		for i, o := range params.Options {
			var m map[string]any
			require.NoError(t, json.Unmarshal(o, &m))
			assert.Equal(t, m["optionId"], req.Options[i].ID, "%s option %d", name, i)
			assert.Equal(t, string(o), string(req.Options[i].Raw), "%s option %d", name, i)
			assert.NotNil(t, req.Options[i].Raw)
		}
	}
}

// TestPermissionVectorsFollowSourceRules checks the decoded vectors against
// rules stated in permission-meta.md, independently of the golden files.
func TestPermissionVectorsFollowSourceRules(t *testing.T) {
	claudeIDs := map[string]bool{
		claude.AllowOnce: true, claude.AllowWithUpdates: true, claude.AllowSkillExact: true,
		claude.AllowSkillPrefix: true, claude.ExitPlanDefault: true, claude.ExitPlanAuto: true,
		claude.ExitPlanBypass: true, claude.ExitPlanAcceptEdits: true, claude.ExitPlanClearAuto: true,
		claude.ExitPlanClearBypass: true, claude.ExitPlanClearAcceptEdits: true, claude.Reject: true,
	}
	codexIDs := map[string]bool{
		codex.AllowOnce: true, codex.AllowAlways: true, codex.RejectOnce: true, codex.AllowForSession: true,
		codex.Decline: true, codex.Cancel: true, codex.AcceptExecpolicyAmendment: true,
		codex.AllowPermissionsTurn: true, codex.AllowPermissionsTurnStrictAutoReview: true,
		codex.AllowPermissionsSession: true, codex.RejectPermissions: true, codex.AllowSession: true,
	}
	rank := func(k PermissionKind) int {
		switch k {
		case AllowOnce:
			return 0
		case AllowAlways:
			return 1
		}
		return 2
	}
	for _, name := range presVectors(t) {
		req, err := ParsePermissionRequest(presLoad(t, name))
		require.NoError(t, err)
		switch name[0] {
		case 'C':
			// 0.71–0.81: _meta.permission {version 1, title} on every request.
			assert.Equal(t, PresentationMeta, req.Presentation.Source, name)
			assert.True(t, req.Presentation.Present(), name)
			assert.Equal(t, 1, req.Presentation.Version, name)
			if req.Presentation.HasDescription {
				assert.True(t, strings.HasPrefix(req.Presentation.Description, "Reason: "), name)
			}
			fallthrough
		case 'P':
			for _, o := range req.Options {
				assert.True(t, claudeIDs[o.ID], "%s: %q is a known Claude id", name, o.ID)
				// Claude puts no _meta on options after 0.70.0.
				assert.Nil(t, o.Meta.Raw, name)
			}
			// Stable sort by kind: allow_once, allow_always, reject; reversed
			// to reject-first by defaultToNo.
			last := -1
			for i, o := range req.Options {
				r := rank(o.Kind)
				if req.Presentation.DefaultToNo {
					r = (r + 1) % 3 // reject 0, allow_once 1, allow_always 2
				}
				assert.GreaterOrEqual(t, r, last, "%s option %d out of order", name, i)
				last = r
			}
		case 'X':
			// Codex ≤ 1.6.2: no request-level presentation, _meta.codex everywhere.
			assert.Equal(t, PresentationNone, req.Presentation.Source, name)
			for _, o := range req.Options {
				known := codexIDs[o.ID] || strings.HasPrefix(o.ID, codex.ApplyNetworkPolicyAmendmentPrefix)
				assert.True(t, known, "%s: %q is a known Codex id", name, o.ID)
				assert.NotNil(t, o.Meta.Raw, name)
				assert.False(t, o.Meta.Unknown, name)
				for _, c := range o.Meta.Changes {
					assert.NotEmpty(t, c.Description, "every change has a description")
					assert.True(t, c.Known(), "%s: %s", name, c.Raw)
					switch c.Type {
					case ChangePolicyRule:
						// Codex omits lifetime on exec- and network-policy amendments.
						assert.Nil(t, c.Lifetime, name)
						assert.Contains(t, []string{"allow", "deny"}, c.RuleBehavior)
					case ChangeGrant:
						assert.NotNil(t, c.Lifetime, name)
						assert.Empty(t, c.RuleBehavior, name)
					default:
						t.Errorf("%s: codex change type %q", name, c.Type)
					}
				}
			}
		}
	}
	// C8: the presentation heading differs from the tool call title.
	req, err := ParsePermissionRequest(presLoad(t, "C8"))
	require.NoError(t, err)
	h, fromP := req.Heading()
	assert.Equal(t, "Ready to code?", h)
	assert.True(t, fromP)
	assert.Equal(t, "Approve Plan", req.ToolCall.Title)
}

// presParams builds request params around a toolCall and options.
func presParams(extra string) json.RawMessage {
	base := `{"sessionId":"s1","toolCall":{"toolCallId":"t1","title":"Tool title","name":"Bash"},` +
		`"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"},{"optionId":"reject","name":"No","kind":"reject_once"}]`
	if extra != "" {
		base += "," + extra
	}
	return json.RawMessage(base + "}")
}

func presParse(t *testing.T, params json.RawMessage) *PermissionRequest {
	t.Helper()
	req, err := ParsePermissionRequest(params)
	require.NoError(t, err, "%s", params)
	require.Len(t, req.Options, 2)
	assert.Equal(t, claude.AllowOnce, req.Options[0].ID)
	assert.Equal(t, claude.Reject, req.Options[1].ID)
	return req
}

func TestPresentationUnknownRecords(t *testing.T) {
	cases := []struct {
		name    string
		extra   string
		source  PresentationSource
		version int
		raw     string
	}{
		{"version 2", `"_meta":{"permission":{"version":2,"title":"New","description":"d"}}`,
			PresentationUnknown, 2, `{"version":2,"title":"New","description":"d"}`},
		{"version as string", `"_meta":{"permission":{"version":"1","title":"T"}}`,
			PresentationUnknown, 0, `{"version":"1","title":"T"}`},
		{"no version", `"_meta":{"permission":{"title":"T"}}`,
			PresentationUnknown, 0, `{"title":"T"}`},
		{"version 1 without title", `"_meta":{"permission":{"version":1,"description":"why"}}`,
			PresentationUnknown, 1, `{"version":1,"description":"why"}`},
		{"version 1 empty title", `"_meta":{"permission":{"version":1,"title":""}}`,
			PresentationUnknown, 1, `{"version":1,"title":""}`},
		{"version 1 blank title", `"_meta":{"permission":{"version":1,"title":" \n "}}`,
			PresentationUnknown, 1, `{"version":1,"title":" \n "}`},
		{"title only an escape sequence", `"_meta":{"permission":{"version":1,"title":"\u001b[0m"}}`,
			PresentationUnknown, 1, `{"version":1,"title":"\u001b[0m"}`},
		{"title not a string", `"_meta":{"permission":{"version":1,"title":["T"]}}`,
			PresentationUnknown, 1, `{"version":1,"title":["T"]}`},
		{"description not a string", `"_meta":{"permission":{"version":1,"title":"T","description":7}}`,
			PresentationUnknown, 1, `{"version":1,"title":"T","description":7}`},
		{"defaultToNo not a bool", `"_meta":{"permission":{"version":1,"title":"T","defaultToNo":"yes"}}`,
			PresentationUnknown, 1, `{"version":1,"title":"T","defaultToNo":"yes"}`},
		{"record not an object", `"_meta":{"permission":"Run it?"}`,
			PresentationUnknown, 0, `"Run it?"`},
		{"AIR version 3", `"_meta":{"jetbrains":{"air":{"version":1,"permission":{"version":3,"title":"T"}}}}`,
			PresentationUnknown, 3, `{"version":3,"title":"T"}`},
		{"v2 title not a string", `"title":5`,
			PresentationUnknown, 0, `{"title":5}`},
		{"v2 description not a string", `"title":"T","description":{}`,
			PresentationUnknown, 0, `{"title":"T","description":{}}`},
		{"request-level changes are not a presentation",
			`"_meta":{"permission":{"version":1,"changes":[{"type":"grant"}]}}`, PresentationNone, 0, ""},
		{"null record", `"_meta":{"permission":null}`, PresentationNone, 0, ""},
		{"junk _meta", `"_meta":5`, PresentationNone, 0, ""},
		{"junk jetbrains", `"_meta":{"jetbrains":[1],"permission":false}`, PresentationUnknown, 0, `false`},
		{"junk air", `"_meta":{"jetbrains":{"air":"x"}}`, PresentationNone, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := presParse(t, presParams(tc.extra))
			p := req.Presentation
			assert.Equal(t, tc.source, p.Source)
			assert.False(t, p.Present())
			assert.Equal(t, tc.version, p.Version)
			assert.Empty(t, p.Title, "never half-decoded")
			assert.Empty(t, p.Description)
			assert.False(t, p.HasDescription)
			assert.False(t, p.DefaultToNo)
			if tc.raw == "" {
				assert.Nil(t, p.Raw)
			} else {
				assert.JSONEq(t, tc.raw, string(p.Raw))
			}
			h, fromP := req.Heading()
			assert.Equal(t, "Tool title", h)
			assert.False(t, fromP)
		})
	}
}

func TestPresentationSources(t *testing.T) {
	cases := []struct {
		name  string
		extra string
		want  Presentation
		rawEq string
	}{
		{"meta", `"_meta":{"permission":{"version":1,"title":"npm test","description":"Reason: x","extra":true}}`,
			Presentation{Title: "npm test", Description: "Reason: x", HasDescription: true, Source: PresentationMeta, Version: 1},
			`{"version":1,"title":"npm test","description":"Reason: x","extra":true}`},
		{"AIR", `"_meta":{"jetbrains":{"air":{"version":1,"permission":{"version":1,"title":"Run command?","description":"Allow writing out.txt?"}}}}`,
			Presentation{Title: "Run command?", Description: "Allow writing out.txt?", HasDescription: true, Source: PresentationAIR, Version: 1},
			`{"version":1,"title":"Run command?","description":"Allow writing out.txt?"}`},
		{"AIR before meta", `"_meta":{"permission":{"version":1,"title":"B"},"jetbrains":{"air":{"permission":{"version":1,"title":"A","defaultToNo":true}}}}`,
			Presentation{Title: "A", DefaultToNo: true, Source: PresentationAIR, Version: 1},
			`{"version":1,"title":"A","defaultToNo":true}`},
		{"meta before v2", `"title":"V2","_meta":{"permission":{"version":1,"title":"M"}}`,
			Presentation{Title: "M", Source: PresentationMeta, Version: 1}, `{"version":1,"title":"M"}`},
		{"unknown AIR, decoded meta", `"_meta":{"permission":{"version":1,"title":"M"},"jetbrains":{"air":{"permission":{"version":2,"title":"A"}}}}`,
			Presentation{Title: "M", Source: PresentationMeta, Version: 1}, `{"version":1,"title":"M"}`},
		{"unknown meta, v2", `"title":"V2 title","description":null,"_meta":{"permission":{"version":9}}`,
			Presentation{Title: "V2 title", Source: PresentationV2}, `{"title":"V2 title"}`},
		{"v2", `"title":"Allow edit?","description":"Because"`,
			Presentation{Title: "Allow edit?", Description: "Because", HasDescription: true, Source: PresentationV2},
			`{"title":"Allow edit?","description":"Because"}`},
		{"empty description", `"_meta":{"permission":{"version":1,"title":"T","description":""}}`,
			Presentation{Title: "T", HasDescription: true, Source: PresentationMeta, Version: 1},
			`{"version":1,"title":"T","description":""}`},
		{"version 1.0", `"_meta":{"permission":{"version":1.0,"title":"T","description":null,"defaultToNo":false}}`,
			Presentation{Title: "T", Source: PresentationMeta, Version: 1},
			`{"version":1.0,"title":"T","description":null,"defaultToNo":false}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := presParse(t, presParams(tc.extra))
			p := req.Presentation
			assert.JSONEq(t, tc.rawEq, string(p.Raw))
			p.Raw = nil
			assert.Equal(t, tc.want, p)
			assert.True(t, p.Present())
			h, fromP := req.Heading()
			assert.Equal(t, tc.want.Title, h)
			assert.True(t, fromP)
		})
	}
}

func TestPermissionRequestV2Subject(t *testing.T) {
	params := `{"sessionId":"s2","title":"Run tests?","description":"The agent wants to verify",` +
		`"subject":{"type":"tool_call","toolCall":{"toolCallId":"call_9","title":"npm test","kind":"execute","status":"pending",` +
		`"_meta":{"claudeCode":{"toolName":"Bash"}}}},` +
		`"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once"}]}`
	req, err := ParsePermissionRequest(json.RawMessage(params))
	require.NoError(t, err)
	assert.Equal(t, "s2", req.SessionID)
	assert.Equal(t, "call_9", req.ToolCall.ID)
	assert.Equal(t, "npm test", req.ToolCall.Title)
	assert.Equal(t, ToolExecute, req.ToolCall.Kind)
	assert.Equal(t, PresentationV2, req.Presentation.Source)
	assert.Equal(t, "Run tests?", req.Presentation.Title)
	assert.Equal(t, "The agent wants to verify", req.Presentation.Description)
	cc, ok := req.ToolCall.ClaudeCode()
	assert.True(t, ok)
	assert.Equal(t, "Bash", cc.ToolName)

	// A command subject is not a tool call; only its toolCallId is kept.
	params = `{"sessionId":"s2","title":"Run?","subject":{"type":"command","command":"ls","cwd":"/w","toolCallId":"call_3"},` +
		`"options":[{"optionId":"ok","name":"OK","kind":"allow_once"}]}`
	req, err = ParsePermissionRequest(json.RawMessage(params))
	require.NoError(t, err)
	assert.Equal(t, ToolCall{ID: "call_3"}, req.ToolCall)

	// Unknown subject types are left in Raw.
	params = `{"sessionId":"s2","title":"Run?","subject":{"type":"_future","x":1},"options":[]}`
	req, err = ParsePermissionRequest(json.RawMessage(params))
	require.NoError(t, err)
	assert.Equal(t, ToolCall{}, req.ToolCall)
	assert.Empty(t, req.Options)
	assert.NotNil(t, req.Options, "an empty options array decodes to an empty slice")

	// A v1 toolCall wins over a subject.
	params = `{"toolCall":{"toolCallId":"a"},"subject":{"type":"tool_call","toolCall":{"toolCallId":"b"}},"options":[]}`
	req, err = ParsePermissionRequest(json.RawMessage(params))
	require.NoError(t, err)
	assert.Equal(t, "a", req.ToolCall.ID)
}

func TestParsePermissionRequestErrors(t *testing.T) {
	for _, params := range []string{
		``, `null`, `[]`, `"x"`, `42`, `{`, `{"options":`, `{}`, `{"sessionId":"s"}`,
		`{"options":null}`, `{"options":{}}`, `{"options":"allow"}`, `{"options":[1,}`,
		`{"Options":[]}`, // members match by exact name
		` [{"options":[]}]`,
	} {
		req, err := ParsePermissionRequest(json.RawMessage(params))
		assert.Nil(t, req, "%q", params)
		if assert.Error(t, err, "%q", params) {
			assert.True(t, errors.Is(err, ErrMalformed), "%q: %v", params, err)
		}
	}
}

func TestParsePermissionRequestTolerant(t *testing.T) {
	for _, extra := range []string{
		`"_meta":"junk"`,
		`"_meta":[1,2]`,
		`"_meta":{"permission":{"version":1,"title":{"x":1}},"jetbrains":"air"}`,
		`"_meta":{"codex":{"params":null}},"title":null,"description":null`,
		`"toolCall":"not an object"`,
		`"sessionId":5`,
	} {
		params := `{"toolCall":{"toolCallId":"t1","title":"Tool title"},"sessionId":"s1",` +
			`"options":[{"optionId":"allow-once","name":"Yes","kind":"allow_once","_meta":{"permission":"junk"}},` +
			`{"optionId":"reject","name":"No","kind":"reject_once","_meta":[]}],` + extra + `}`
		req, err := ParsePermissionRequest(json.RawMessage(params))
		require.NoError(t, err, extra)
		require.Len(t, req.Options, 2)
		assert.Equal(t, "allow-once", req.Options[0].ID)
		assert.True(t, req.Options[0].Meta.Unknown, "a junk permission record is unknown")
		assert.JSONEq(t, `{"permission":"junk"}`, string(req.Options[0].Meta.Raw))
		assert.False(t, req.Options[1].Meta.Unknown)
		assert.Equal(t, `[]`, string(req.Options[1].Meta.Raw))
		assert.False(t, req.Presentation.Present(), extra)
		h, _ := req.Heading()
		if strings.Contains(extra, `"toolCall":"not`) {
			// Duplicate key: the last toolCall member wins, and is junk.
			assert.Empty(t, h)
		} else {
			assert.Equal(t, "Tool title", h)
		}
	}

	// Options that are not objects are kept, so indexes line up with the wire.
	req, err := ParsePermissionRequest(json.RawMessage(
		`{"options":[5,null,"x",{"optionId":7,"name":"N","kind":"allow_once"},{"optionid":"lower","OptionId":"upper","name":"L"}]}`))
	require.NoError(t, err)
	require.Len(t, req.Options, 5)
	assert.Equal(t, "5", string(req.Options[0].Raw))
	assert.Equal(t, "null", string(req.Options[1].Raw))
	for _, o := range req.Options[:4] {
		assert.Empty(t, o.ID)
	}
	assert.Equal(t, "N", req.Options[3].Name)
	assert.Equal(t, AllowOnce, req.Options[3].Kind)
	assert.Empty(t, req.Options[4].ID, "optionId matches by exact name only")
	assert.Equal(t, "L", req.Options[4].Name)
}

func TestPermissionOptionIDsKeptExactly(t *testing.T) {
	ids := []string{" allow-once ", "allow-once\t", "Allow-Once", "apply_network_policy_amendment:12",
		"exit-plan-clear-accept-edits", "✓ ja", "a\u0000b", "<script>", `q"uote`}
	var opts []string
	for _, id := range ids {
		b, err := json.Marshal(map[string]string{"optionId": id, "name": id, "kind": "allow_once"})
		require.NoError(t, err)
		opts = append(opts, string(b))
	}
	req, err := ParsePermissionRequest(json.RawMessage(`{"options":[` + strings.Join(opts, ",") + `]}`))
	require.NoError(t, err)
	for i, id := range ids {
		assert.Equal(t, id, req.Options[i].ID)
	}
	// JSON escapes decode to the same string the agent's parser sees.
	req, err = ParsePermissionRequest(json.RawMessage(`{"options":[{"optionId":"allow\u002donce"}]}`))
	require.NoError(t, err)
	assert.Equal(t, claude.AllowOnce, req.Options[0].ID)
}

func TestParsePermissionRequestOwnsRaw(t *testing.T) {
	buf := []byte(presParams(`"_meta":{"permission":{"version":1,"title":"T"}}`))
	req, err := ParsePermissionRequest(buf)
	require.NoError(t, err)
	want := string(buf)
	for i := range buf {
		buf[i] = ' '
	}
	assert.Equal(t, want, string(req.Raw))
	assert.Equal(t, `{"version":1,"title":"T"}`, string(req.Presentation.Raw))
}

func TestOptionMeta(t *testing.T) {
	parse := func(meta string) OptionMeta {
		t.Helper()
		req, err := ParsePermissionRequest(json.RawMessage(
			`{"options":[{"optionId":"o","name":"O","kind":"allow_always","_meta":` + meta + `}]}`))
		require.NoError(t, err)
		require.Len(t, req.Options, 1)
		m := req.Options[0].Meta
		assert.JSONEq(t, meta, string(m.Raw), "Raw is the option's whole _meta")
		return m
	}

	t.Run("no meta", func(t *testing.T) {
		req, err := ParsePermissionRequest(json.RawMessage(`{"options":[{"optionId":"o","_meta":null}]}`))
		require.NoError(t, err)
		assert.Equal(t, OptionMeta{}, req.Options[0].Meta)
		assert.False(t, req.Options[0].Meta.Present())
	})
	t.Run("codex MCP description", func(t *testing.T) {
		m := parse(`{"permission":{"version":1,"description":"Allow the docs server to read files"}}`)
		assert.True(t, m.Present())
		assert.Equal(t, 1, m.Version)
		assert.Equal(t, "Allow the docs server to read files", m.Description)
		assert.True(t, m.HasDescription)
		assert.Empty(t, m.Changes)
		assert.False(t, m.Unknown)
	})
	t.Run("AIR description", func(t *testing.T) {
		m := parse(`{"jetbrains":{"air":{"version":1,"permission":{"version":1,"description":"From AIR"}}},"permission":{"version":1,"description":"From meta","changes":[]}}`)
		assert.Equal(t, "From AIR", m.Description, "AIR is read first")
		assert.NotNil(t, m.Changes, "changes from the record that has them")
		assert.Empty(t, m.Changes)
	})
	t.Run("version 2", func(t *testing.T) {
		m := parse(`{"permission":{"version":2,"description":"d","changes":[{"type":"grant"}]}}`)
		assert.True(t, m.Unknown)
		assert.False(t, m.Present())
		assert.Equal(t, 0, m.Version)
		assert.Empty(t, m.Description)
		assert.False(t, m.HasDescription)
		assert.Nil(t, m.Changes, "never half-decoded")
	})
	t.Run("unknown AIR, decoded meta", func(t *testing.T) {
		m := parse(`{"jetbrains":{"air":{"permission":{"version":2}}},"permission":{"version":1,"description":"ok"}}`)
		assert.True(t, m.Unknown)
		assert.True(t, m.Present())
		assert.Equal(t, "ok", m.Description)
	})
	t.Run("malformed version 1", func(t *testing.T) {
		for _, rec := range []string{
			`{"version":1,"changes":{}}`, `{"version":1,"description":3}`, `[1]`, `"v1"`,
		} {
			m := parse(`{"permission":` + rec + `}`)
			assert.True(t, m.Unknown, rec)
			assert.False(t, m.Present(), rec)
			assert.Nil(t, m.Changes, rec)
		}
	})
	t.Run("codex only", func(t *testing.T) {
		m := parse(`{"codex":{"decision":"accept"}}`)
		assert.False(t, m.Unknown)
		assert.False(t, m.Present())
	})
}

func TestPermissionChangesOpenEnums(t *testing.T) {
	changes := `[
	 {"type":"quota","operation":"raise","description":"Raise the token quota","limit":5},
	 {"type":"policy_rule","operation":"add","ruleBehavior":"allow","description":"Allow reading via the vault",
	  "targets":[{"type":"filesystem","access":["read"],"matcher":{"type":"vault_ref","ref":"v1"}}]},
	 {"type":"grant","operation":"grant","description":"Allow network access until reboot",
	  "lifetime":{"scope":"until_reboot","storage":"kernel"},"targets":[{"type":"network","matcher":{"type":"any"}}]},
	 {"type":"grant","operation":"grant","targets":[{"type":"gpu","matcher":{"type":"any"}}]},
	 {"type":"policy_rule","operation":"merge","ruleBehavior":"allow","targets":[{"type":"network","matcher":{"type":"any"}}]},
	 {"type":"policy_rule","operation":"add","ruleBehavior":"sometimes","description":"Maybe",
	  "targets":[{"type":"network","matcher":{"type":"any"}}]},
	 "not an object",
	 {"type":"grant","operation":"grant","description":"Allow \u001b[31mred\u001b[0m\naccess","lifetime":"session",
	  "targets":[{"type":"network","matcher":{"type":"any"}}]},
	 {"type":"grant","operation":"grant","targets":[{"type":"command","matcher":{"type":"argv_prefix","argv":"npm"}}]},
	 {"type":"grant","operation":"grant","targets":[{"type":"filesystem","access":["read","execute"],"matcher":{"type":"glob","pattern":"*"}}]}
	]`
	req, err := ParsePermissionRequest(json.RawMessage(
		`{"options":[{"optionId":"o","_meta":{"permission":{"version":1,"changes":` + changes + `}}}]}`))
	require.NoError(t, err)
	m := req.Options[0].Meta
	require.True(t, m.Present())
	var rawChanges []json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(changes), &rawChanges))
	require.Len(t, m.Changes, len(rawChanges), "no change is dropped")
	for i, c := range m.Changes {
		assert.JSONEq(t, string(rawChanges[i]), string(c.Raw), "change %d keeps its raw JSON", i)
		assert.False(t, c.Known(), "change %d", i)
		d := c.Describe()
		assert.NotEmpty(t, d)
		assert.NotContains(t, d, "\n")
		assert.Equal(t, SafeText(d), d)
	}

	c := m.Changes[0]
	assert.Equal(t, ChangeType("quota"), c.Type)
	assert.Equal(t, "raise", c.Operation)
	assert.Equal(t, "Raise the token quota", c.Describe())

	c = m.Changes[1]
	require.Len(t, c.Targets, 1)
	require.NotNil(t, c.Targets[0].Matcher)
	assert.Equal(t, MatcherType("vault_ref"), c.Targets[0].Matcher.Type)
	assert.JSONEq(t, `{"type":"vault_ref","ref":"v1"}`, string(c.Targets[0].Matcher.Raw))
	assert.False(t, c.Targets[0].Known())
	assert.Equal(t, "unrecognised `vault_ref` matcher", c.Targets[0].Matcher.Describe())
	assert.Equal(t, "Allow reading via the vault", c.Describe())

	c = m.Changes[2]
	require.NotNil(t, c.Lifetime)
	assert.Equal(t, "until_reboot", c.Lifetime.Scope)
	assert.Equal(t, "kernel", c.Lifetime.Storage)
	assert.JSONEq(t, `{"scope":"until_reboot","storage":"kernel"}`, string(c.Lifetime.Raw))
	assert.Equal(t, "Allow network access until reboot", c.Describe())
	assert.True(t, c.Targets[0].Known(), "the target itself is fine")

	c = m.Changes[3]
	assert.Equal(t, TargetType("gpu"), c.Targets[0].Type)
	assert.Equal(t, "unrecognised `gpu` target", c.Targets[0].Describe())
	assert.Equal(t, "Unrecognised permission change `grant`", c.Describe(), "no description to fall back on")

	assert.Equal(t, "Maybe", m.Changes[5].Describe())
	assert.Equal(t, "Unrecognised permission change", m.Changes[6].Describe())
	assert.Equal(t, "Allow red access", m.Changes[7].Describe(), "a wrong-typed lifetime falls back to the sanitised description")
	require.NotNil(t, m.Changes[7].Lifetime)
	assert.Equal(t, `"session"`, string(m.Changes[7].Lifetime.Raw))
	assert.Nil(t, m.Changes[8].Targets[0].Matcher.Argv)
	assert.False(t, m.Changes[8].Targets[0].Matcher.Known())
	assert.Equal(t, []string{"read", "execute"}, m.Changes[9].Targets[0].Access)
}

func TestPermissionChangeDescribe(t *testing.T) {
	target := func(typ TargetType, m *ChangeMatcher, access ...string) ChangeTarget {
		return ChangeTarget{Type: typ, Matcher: m, Access: access}
	}
	cases := []struct {
		c    PermissionChange
		want string
	}{
		{PermissionChange{Type: ChangePolicyRule, Operation: "add", RuleBehavior: "allow",
			Lifetime: &ChangeLifetime{Scope: "session"},
			Targets:  []ChangeTarget{target(TargetCommand, &ChangeMatcher{Type: MatcherArgvPrefix, Argv: []string{"npm", "test"}})}},
			"Allow commands starting with `npm test` for this session"},
		{PermissionChange{Type: ChangePolicyRule, Operation: "add", RuleBehavior: "ask",
			Lifetime: &ChangeLifetime{Scope: "persistent", Storage: "project"},
			Targets: []ChangeTarget{{Type: TargetTool, ToolName: "Bash",
				Matcher: &ChangeMatcher{Type: MatcherProviderRule, Provider: "claudeCode", Value: json.RawMessage(`"git push:*"`)}}}},
			"Ask before `Bash` calls matching `git push:*` permanently, in project settings"},
		{PermissionChange{Type: ChangePolicyRule, Operation: "add", RuleBehavior: "allow",
			Lifetime: &ChangeLifetime{Scope: "persistent", Storage: "project_local"},
			Targets:  []ChangeTarget{{Type: TargetTool, ToolName: "mcp__x__y"}}},
			"Allow all `mcp__x__y` calls permanently, in local project settings"},
		{PermissionChange{Type: ChangePolicyRule, Operation: "add", RuleBehavior: "deny",
			Lifetime: &ChangeLifetime{Scope: "turn"},
			Targets:  []ChangeTarget{target(TargetFilesystem, &ChangeMatcher{Type: MatcherGlob, Pattern: "**/.env"})}},
			"Deny filesystem access to paths matching `**/.env` for this turn"},
		{PermissionChange{Type: ChangePolicyRule, Operation: "remove", RuleBehavior: "allow",
			Lifetime: &ChangeLifetime{Scope: "persistent", Storage: "user"},
			Targets:  []ChangeTarget{target(TargetFilesystem, &ChangeMatcher{Type: MatcherDirectory, Path: "/outside"})}},
			"Remove allow rules for filesystem access under `/outside` permanently, in user settings"},
		{PermissionChange{Type: ChangePolicyRule, Operation: "replace", RuleBehavior: "deny",
			Lifetime: &ChangeLifetime{Scope: "process", Storage: "cli_argument"},
			Targets: []ChangeTarget{{Type: TargetTool, ToolName: "WebFetch",
				Matcher: &ChangeMatcher{Type: MatcherProviderRule, Value: json.RawMessage(`"domain:evil.example"`)}}}},
			"Replace deny rules with `WebFetch` calls matching `domain:evil.example` until the agent exits"},
		{PermissionChange{Type: ChangePermissionMode, Operation: "set", Provider: "claudeCode", Mode: "acceptEdits",
			Lifetime: &ChangeLifetime{Scope: "session"}},
			"Set Claude Code permission mode to `acceptEdits` for this session"},
		{PermissionChange{Type: ChangePermissionMode, Operation: "set", Mode: "plan"},
			"Set permission mode to `plan`"},
		{PermissionChange{Type: ChangeGrant, Operation: "grant", Lifetime: &ChangeLifetime{Scope: "unknown"},
			Targets: []ChangeTarget{
				target(TargetFilesystem, &ChangeMatcher{Type: MatcherSpecial, Provider: "codex", Value: json.RawMessage(`{"kind":"tmpdir"}`)}, "read", "write"),
				target(TargetNetwork, &ChangeMatcher{Type: MatcherHost, Host: "proxy.internal", Protocol: "socks5Tcp"}),
				target(TargetCommand, &ChangeMatcher{Type: MatcherArgvPrefix, Argv: []string{"sh", "-c", "echo 'hi there'"}}),
			}},
			"Allow read and write access to special path `tmpdir`, network access to `proxy.internal` over SOCKS5 (TCP) " +
				"and commands starting with `sh -c 'echo '\\''hi there'\\'''` (lifetime unknown)"},
		{PermissionChange{Type: ChangeGrant, Operation: "grant",
			Targets: []ChangeTarget{target(TargetNetwork, &ChangeMatcher{Type: MatcherHost, Host: "a\x1b[2Jb\nc", Protocol: "quic"})}},
			"Allow network access to `ab\\nc` over `quic`"},
		{PermissionChange{Type: ChangeGrant, Operation: "grant",
			Targets: []ChangeTarget{target(TargetFilesystem, &ChangeMatcher{Type: MatcherExactPath, Path: "/a`b"}, "write")}},
			"Allow write access to `` /a`b ``"},
		{PermissionChange{Type: ChangeGrant, Operation: "grant",
			Targets: []ChangeTarget{target(TargetFilesystem, &ChangeMatcher{Type: MatcherSpecial, Value: json.RawMessage(`{"kind":"project_roots","subpath":"docs"}`)})}},
			"Allow filesystem access to special path `{\"kind\":\"project_roots\",\"subpath\":\"docs\"}`"},
	}
	for _, tc := range cases {
		assert.True(t, tc.c.Known(), tc.want)
		assert.Equal(t, tc.want, tc.c.Describe())
	}

	// Parts that do not fit together are not known; the description is used.
	for _, c := range []PermissionChange{
		{Type: ChangeGrant, Operation: "grant", Description: "fallback"},        // no targets
		{Type: ChangePermissionMode, Operation: "set", Description: "fallback"}, // no mode
		{Type: ChangeGrant, Operation: "add", Description: "fallback", Targets: []ChangeTarget{{Type: TargetTool, ToolName: "X"}}},
		{Type: ChangeGrant, Operation: "grant", RuleBehavior: "deny", Description: "fallback", Targets: []ChangeTarget{{Type: TargetTool, ToolName: "X"}}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Targets: []ChangeTarget{{Type: TargetTool}}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Targets: []ChangeTarget{{Type: TargetNetwork}}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Targets: []ChangeTarget{
			target(TargetCommand, &ChangeMatcher{Type: MatcherHost, Host: "h"})}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Targets: []ChangeTarget{
			target(TargetNetwork, &ChangeMatcher{Type: MatcherAny}, "read")}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Lifetime: &ChangeLifetime{Scope: "session", Storage: "disk"},
			Targets: []ChangeTarget{target(TargetNetwork, &ChangeMatcher{Type: MatcherAny})}},
		{Type: ChangeGrant, Operation: "grant", Description: "fallback", Targets: []ChangeTarget{
			{Type: TargetTool, ToolName: "Bash", Matcher: &ChangeMatcher{Type: MatcherProviderRule, Value: json.RawMessage(`{"x":1}`)}}}},
		{Type: ChangePermissionMode, Operation: "set", Mode: "auto", Description: "fallback", Targets: []ChangeTarget{{Type: TargetTool, ToolName: "X"}}},
	} {
		assert.False(t, c.Known(), "%+v", c)
		assert.Equal(t, "fallback", c.Describe(), "%+v", c)
	}

	// Matchers on their own.
	for m, want := range map[*ChangeMatcher]string{
		{Type: MatcherArgvPrefix, Argv: []string{"git", ""}}:        "argv prefix `git ''`",
		{Type: MatcherHost, Host: "example.com", Protocol: "https"}: "host `example.com` over HTTPS",
		{Type: MatcherAny}:                                                  "anything",
		{Type: MatcherDirectory, Path: "/w"}:                                "directory `/w`",
		{Type: MatcherExactPath, Path: "/w/f"}:                              "path `/w/f`",
		{Type: MatcherGlob, Pattern: "*.go"}:                                "glob `*.go`",
		{Type: MatcherSpecial, Value: json.RawMessage(`"home"`)}:            "special path `home`",
		{Type: MatcherProviderRule, Value: json.RawMessage(`"npm test:*"`)}: "rule `npm test:*`",
		{Type: MatcherHost}:                                                 "unrecognised `host` matcher",
		{}:                                                                  "unrecognised matcher",
	} {
		assert.Equal(t, want, m.Describe())
	}
	assert.Equal(t, "unrecognised target", ChangeTarget{}.Describe())
	assert.Equal(t, "commands starting with `npm test`",
		target(TargetCommand, &ChangeMatcher{Type: MatcherArgvPrefix, Argv: []string{"npm", "test"}}).Describe())
	assert.Equal(t, "all commands", target(TargetCommand, &ChangeMatcher{Type: MatcherAny}).Describe())
}

func TestHeadingFallback(t *testing.T) {
	req := &PermissionRequest{ToolCall: ToolCall{Title: "Edit a.go", Name: "Edit"}}
	h, fromP := req.Heading()
	assert.Equal(t, "Edit a.go", h)
	assert.False(t, fromP)

	req.Presentation = Presentation{Title: "Make edits?", Source: PresentationAIR, Version: 1}
	h, fromP = req.Heading()
	assert.Equal(t, "Make edits?", h)
	assert.True(t, fromP)

	req.Presentation = Presentation{Source: PresentationUnknown, Raw: json.RawMessage(`{"version":2}`)}
	h, fromP = req.Heading()
	assert.Equal(t, "Edit a.go", h)
	assert.False(t, fromP)

	req.ToolCall.Title = "  "
	h, _ = req.Heading()
	assert.Equal(t, "Edit", h, "the tool name when there is no title")

	req.ToolCall.Name = ""
	h, fromP = req.Heading()
	assert.Empty(t, h)
	assert.False(t, fromP)

	var nilReq *PermissionRequest
	h, fromP = nilReq.Heading()
	assert.Empty(t, h)
	assert.False(t, fromP)
}

func TestPresentationSafeText(t *testing.T) {
	p := Presentation{Title: "rm -rf \x1b[8mhidden\x1b[0m /tmp\r", Description: "Reason: \x1b]8;;https://evil.example\x07click\x1b]8;;\x07 here\x07"}
	assert.Equal(t, "rm -rf hidden /tmp", p.SafeTitle())
	assert.Equal(t, "Reason: click here", p.SafeDescription())
}

func TestClaudeCodeMeta(t *testing.T) {
	tc := ToolCall{Meta: json.RawMessage(`{"claudeCode":{"toolName":"mcp__docs__search","parentToolUseId":"toolu_p",` +
		`"mcpServer":{"name":"docs","source":"sdk"},"future":1},"other":true}`)}
	cc, ok := tc.ClaudeCode()
	require.True(t, ok)
	assert.Equal(t, "mcp__docs__search", cc.ToolName)
	assert.Equal(t, "toolu_p", cc.ParentToolUseID)
	assert.Equal(t, &MCPServerRef{Name: "docs", Source: "sdk"}, cc.MCPServer)
	assert.JSONEq(t, `{"toolName":"mcp__docs__search","parentToolUseId":"toolu_p","mcpServer":{"name":"docs","source":"sdk"},"future":1}`, string(cc.Raw))

	// AIR clients get only mcpServer.
	cc, ok = ToolCall{Meta: json.RawMessage(`{"claudeCode":{"mcpServer":{"name":"x","source":"project"}}}`)}.ClaudeCode()
	require.True(t, ok)
	assert.Empty(t, cc.ToolName)
	assert.Equal(t, "x", cc.MCPServer.Name)

	cc, ok = ToolCall{Meta: json.RawMessage(`{"claudeCode":{"toolName":5,"mcpServer":"docs"}}`)}.ClaudeCode()
	require.True(t, ok)
	assert.Empty(t, cc.ToolName)
	assert.Nil(t, cc.MCPServer)

	for _, meta := range []string{``, `null`, `{}`, `{"claudeCode":null}`, `{"claudeCode":"Bash"}`, `[1]`, `{"ClaudeCode":{}}`} {
		_, ok := ToolCall{Meta: json.RawMessage(meta)}.ClaudeCode()
		assert.False(t, ok, meta)
	}
}

func TestSafeText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"", ""},
		{"line one\nline two\ttab", "line one\nline two\ttab"},
		{"héllo wörld — 日本語 🙂 مرحبا", "héllo wörld — 日本語 🙂 مرحبا"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"\x1b[1;38;2;255;0;0mbold\x1b[m", "bold"},
		{"\x1b[?25l\x1b[2J\x1b[Hcleared", "cleared"},
		{"\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\ text", "link text"},
		{"\x1b]8;;https://evil.example\alink\x1b]8;;\a", "link"},
		{"\x1b]0;window title\x07after", "after"},
		{"\x1b]0;unterminated title", ""},
		{"\x1bPq#0;2;0;0;0\x1b\\sixel", "sixel"},
		{"\x1b_apc\x1b\\x", "x"},
		{"\x1b7saved\x1b8", "saved"},
		{"\x1b(Bascii", "ascii"},
		{"\x1bc reset", " reset"},
		{"trailing\x1b", "trailing"},
		{"\x1b\x1b[31mx", "x"},
		{"\x9b31mraw C1 CSI", "raw C1 CSI"},
		{"\u009b31mutf8 C1 CSI", "utf8 C1 CSI"},
		{"\x9d0;title\x9cafter", "after"},
		{"\u009d0;title\u009cafter", "after"},
		{"\u0085next line", "next line"},
		{"bell\a\a!", "bell!"},
		{"back\bspace\x7f", "backspace"},
		{"cr\r\nlf", "cr\nlf"},
		{"nul\x00byte", "nulbyte"},
		{"bad \xff\xfe utf8 \xc3", "bad  utf8 "},
		{"keeps \uFFFD replacement", "keeps \uFFFD replacement"},
		// What a reader cannot see but a model or a terminal acts on.
		{"zero\u200bwidth\u200c\u200djoin\u2060\u2062\ufeff", "zerowidthjoin"},
		{"marks \u200eLRM\u200fRLM\u061cALM", "marks LRMRLMALM"},
		{"soft\u00adhyphen \u034fcgj \u115f\u1160\u3164\uffa0fillers \u180emvs", "softhyphen cgj fillers mvs"},
		{"tags \U000E0069\U000E0067\U000E006E\U000E006F\U000E0072\U000E0065 hidden", "tags  hidden"},
		{"line\u2028sep\u2029para", "line\nsep\npara"},
		{"annotation \ufff9base\ufffaruby\ufffb", "annotation baseruby"},
		{"heart \u2764\ufe0f kept", "heart \u2764\ufe0f kept"},
		{"smuggled a\ufe00\ufe01\ufe02\U000E0100\U000E0101b", "smuggled a\ufe00b"},
		{"\ufe0fleading selector", "leading selector"},
		{"rm -rf / #\u202e\u2066txt.exe\u2069", "rm -rf / #txt.exe"},
		{"書 contains the byte 0x9b", "書 contains the byte 0x9b"},
		{"\x1b]8;;https://example.jp/朝✜\x1b\\link\x1b]8;;\x1b\\", "link"},
		{"\x1b]0;朝\u009cafter", "after"},
		{"\x1b]0;title\x1b[31mred", "red"},
		{"\x1b[31", ""},
		{"\x1b[31\nx", "\nx"},
	}
	for _, tc := range cases {
		got := SafeText(tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.True(t, utf8.ValidString(got), "%q", tc.in)
		assert.Equal(t, got, SafeText(got), "idempotent on %q", tc.in)
	}
}

func TestSafeTextFastPath(t *testing.T) {
	s := strings.Repeat("clean text, ünïcödé ✓\n", 10)
	assert.Equal(t, s, SafeText(s))
	allocs := testing.AllocsPerRun(100, func() { _ = SafeText(s) })
	assert.Zero(t, allocs, "nothing to strip: s itself is returned")
}

func TestPermissionOptionIDConstants(t *testing.T) {
	// The ids exactly as permission-meta.md §1(a), §3 and §6.5 spell them.
	assert.Equal(t, []string{
		"allow-once", "allow-with-updates", "allow-skill-exact", "allow-skill-prefix",
		"exit-plan-default", "exit-plan-auto", "exit-plan-bypass", "exit-plan-accept-edits",
		"exit-plan-clear-auto", "exit-plan-clear-bypass", "exit-plan-clear-accept-edits", "reject",
	}, []string{
		claude.AllowOnce, claude.AllowWithUpdates, claude.AllowSkillExact, claude.AllowSkillPrefix,
		claude.ExitPlanDefault, claude.ExitPlanAuto, claude.ExitPlanBypass, claude.ExitPlanAcceptEdits,
		claude.ExitPlanClearAuto, claude.ExitPlanClearBypass, claude.ExitPlanClearAcceptEdits, claude.Reject,
	})
	assert.Equal(t, []string{
		"allow_once", "allow_always", "reject_once", "allow_for_session", "decline", "cancel",
		"accept_execpolicy_amendment", "apply_network_policy_amendment:", "allow_permissions_turn",
		"allow_permissions_turn_strict_auto_review", "allow_permissions_session", "reject_permissions", "allow_session",
	}, []string{
		codex.AllowOnce, codex.AllowAlways, codex.RejectOnce, codex.AllowForSession, codex.Decline, codex.Cancel,
		codex.AcceptExecpolicyAmendment, codex.ApplyNetworkPolicyAmendmentPrefix, codex.AllowPermissionsTurn,
		codex.AllowPermissionsTurnStrictAutoReview, codex.AllowPermissionsSession, codex.RejectPermissions, codex.AllowSession,
	})
}
