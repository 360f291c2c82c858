package acp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func decode(t *testing.T, update string) Update {
	t.Helper()
	u := DecodeUpdate(json.RawMessage(`{"sessionId":"s1","update":` + update + `}`))
	require.Equal(t, "s1", u.SessionID())
	return u
}

func TestDecodeEachKind(t *testing.T) {
	m := decode(t, `{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"},"messageId":"m1"}`).(*MessageChunk)
	assert.Equal(t, KindAgentThoughtChunk, m.Kind())
	assert.Equal(t, "hm", m.Content.Text)
	assert.Equal(t, "m1", m.MessageID)

	tc := decode(t, `{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit a.go","kind":"edit","status":"pending",
		"content":[{"type":"diff","path":"/a.go","oldText":null,"newText":"x"},{"type":"terminal","terminalId":"term-1"},
		{"type":"content","content":{"type":"text","text":"hi"}},{"type":"future","x":1},42],
		"locations":[{"path":"/a.go","line":3}],"rawInput":{"p":1},"_meta":{"claudeCode":{"toolName":"Edit"}}}`).(*ToolCallUpdate)
	assert.Equal(t, KindToolCall, tc.Kind())
	assert.Equal(t, "Edit a.go", tc.ToolCall.Title)
	assert.True(t, tc.Set.Has(FieldTitle|FieldKind|FieldStatus|FieldContent|FieldLocations|FieldRawInput|FieldMeta))
	assert.False(t, tc.Set.Has(FieldRawOutput))
	require.Len(t, tc.ToolCall.Content, 4, "an invalid item is skipped, an unknown type kept")
	assert.Nil(t, tc.ToolCall.Content[0].Diff.OldText, "null oldText is a new file")
	assert.Equal(t, "term-1", tc.ToolCall.Content[1].TerminalID)
	assert.Equal(t, "hi", tc.ToolCall.Content[2].Content.Text)
	assert.JSONEq(t, `{"type":"future","x":1}`, string(tc.ToolCall.Content[3].Raw))
	assert.Equal(t, 3, *tc.ToolCall.Locations[0].Line)
	cc, ok := tc.ToolCall.ClaudeCode()
	assert.True(t, ok)
	assert.Equal(t, "Edit", cc.ToolName)

	up := decode(t, `{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}`).(*ToolCallUpdate)
	assert.Equal(t, FieldStatus, up.Set)

	plan := decode(t, `{"sessionUpdate":"plan","entries":[{"content":"a","priority":"high","status":"pending"}]}`).(*PlanUpdate)
	assert.Equal(t, []PlanEntry{{Content: "a", Priority: "high", Status: "pending"}}, plan.Entries)

	mode := decode(t, `{"sessionUpdate":"current_mode_update","currentModeId":"code"}`).(*CurrentModeUpdate)
	assert.Equal(t, "code", mode.ModeID)

	cfg := decode(t, `{"sessionUpdate":"config_option_update","configOptions":[{"id":"model","name":"Model","type":"select","currentValue":"a"},{"id":"x","name":"X","type":"_slider","currentValue":3}]}`).(*ConfigOptionUpdate)
	require.Len(t, cfg.Options, 2, "an unknown option type is kept, not fatal")
	assert.Equal(t, "_slider", cfg.Options[1].Type)

	usage := decode(t, `{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}`).(*UsageUpdate)
	assert.Equal(t, uint64(10), usage.Used)
	assert.Equal(t, "USD", usage.Cost.Currency)
}

func TestSessionInfoNullClearsOmittedKeeps(t *testing.T) {
	u := decode(t, `{"sessionUpdate":"session_info_update","title":null}`).(*SessionInfoUpdate)
	assert.Nil(t, u.Title)
	assert.True(t, u.TitleCleared)
	assert.Nil(t, u.UpdatedAt)
	assert.False(t, u.UpdatedCleared)
	u = decode(t, `{"sessionUpdate":"session_info_update","title":"New"}`).(*SessionInfoUpdate)
	assert.Equal(t, "New", *u.Title)
}

func TestUnknownContentBlockPassesThrough(t *testing.T) {
	m := decode(t, `{"sessionUpdate":"agent_message_chunk","content":{"type":"hologram","depth":3}}`).(*MessageChunk)
	assert.Equal(t, BlockType("hologram"), m.Content.Type)
	out, err := json.Marshal(m.Content)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"hologram","depth":3}`, string(out))
}

func TestRawIsTheParamsAsReceived(t *testing.T) {
	params := `{"sessionId":"s1","update":{"sessionUpdate":"plan","entries":[]},"_meta":{"z":1,"a":2}}`
	assert.Equal(t, params, string(DecodeUpdate(json.RawMessage(params)).Raw()))
}

func FuzzDecodeUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","content":[{"type":"diff","path":"/a","newText":""}]}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"session_info_update","title":null}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"zzz"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"notice","severity":"warning","title":"Rate limited","description":null}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"compaction_update","compactionId":"c1","status":"completed","summary":[{"type":"text","text":"so far"},7],"error":null}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"more"}}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"config_option_update","configOptions":[{"id":"m","name":"M","category":"model","type":"select","currentValue":"a","options":[{"group":"g","name":"G","options":[{"value":"a","name":"A"}]},{"value":"b","name":"B"}]}]}}`,
		`[]`, `null`, `{"update":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"update":{"content":{"text":"h\u00e9","type":"text"},"sessionUpdate":"agent_thought_chunk","messageId":"m"},"sessionId":"s"}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","title":null,"status":"completed","rawOutput":{"a":[1]},"locations":[{"path":"/x","line":3}],"_meta":{"k":1}}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"a","title":null,"kind":"edit","name":"n"},"update":{"toolCallId":null,"rawInput":null}}`))
	f.Add([]byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"cafÃ©"}}} `))
	f.Fuzz(func(t *testing.T, data []byte) {
		u := DecodeUpdate(data)
		if u == nil {
			t.Fatal("nil update")
		}
		if string(u.Raw()) != string(data) {
			t.Fatal("raw params not kept")
		}
		// The fast path must agree with the general decoder wherever it answers.
		fast, ok := decodeFast(data, "s", false)
		if !ok {
			return
		}
		if slow := decodeUpdateSlow(data); !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %#v != slow %#v for %q", fast, slow, data)
		}
	})
}

func TestFastPathDecodesEscapesLikeEncodingJSON(t *testing.T) {
	params := json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\n\t\"\\\/\u00e9\ud83d\ude00\ud800x"}}}`)
	u, ok := decodeFast(params, "", false)
	require.True(t, ok, "escapes stay on the fast path")
	fast := u.(*MessageChunk)
	slow := decodeUpdateSlow(params).(*MessageChunk)
	assert.Equal(t, slow.Content.Text, fast.Content.Text)
	assert.Equal(t, "a\n\t\"\\/é😀\ufffdx", fast.Content.Text)
}

func TestFastPathTakesToolCalls(t *testing.T) {
	for _, params := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"a","title":null,"kind":"edit","content":[{"type":"content","content":{"type":"text","text":"x"}}],"_meta":{"claudeCode":{"toolName":"Bash"}}}}`,
	} {
		fast, ok := decodeFast(json.RawMessage(params), "", false)
		require.True(t, ok, params)
		assert.Equal(t, decodeUpdateSlow(json.RawMessage(params)), fast)
	}
	// What encoding/json would treat differently stays on the general path.
	for _, params := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","TITLE":"a"}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","title":7}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"tool_call","entries":7}}`,
		`{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"x"}}}`,
	} {
		_, ok := decodeFast(json.RawMessage(params), "", false)
		assert.False(t, ok, params)
	}
}

// Nesting is counted from the top of the params, as encoding/json counts
// it (10,000 levels at most). Deep inputs are kept out of the fuzz corpus:
// they slow every mutation of it.
func TestFastPathNestingLimit(t *testing.T) {
	for _, n := range []int{9998, 9999} { // 10,000 levels in all, then 10,001
		params := json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","rawInput":` +
			strings.Repeat("[", n) + strings.Repeat("]", n) + `}}`)
		fast, ok := decodeFast(params, "", false)
		slow := decodeUpdateSlow(params)
		if _, unknown := slow.(*UnknownUpdate); unknown {
			assert.False(t, ok, "%d levels: encoding/json refuses, the fast path must too", n+2)
			continue
		}
		require.True(t, ok, "%d levels", n+2)
		assert.Equal(t, slow, fast)
	}
}

func FuzzDecodeToolCall(f *testing.F) {
	for _, s := range []string{
		`{"toolCallId":"t","title":"run ls","kind":"execute","status":"pending","rawInput":{"command":"ls"}}`,
		`{"toolCallId":"t","title":null,"extra":[1,{"a":2}],"content":[{"type":"diff","path":"/a","newText":"x"}],"locations":[{"path":"/a","line":2}]}`,
		`{"TOOLCALLID":"t"}`, `{"toolCallId":7}`, `{"toolCallId":"t","_meta":{"claudeCode":{"toolName":"Bash"}},"name":"n"}`, `{}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fast, fastSet, ok := decodeToolCallFast(data)
		if !ok {
			return
		}
		var w wireToolCall
		if err := json.Unmarshal(data, &w); err != nil {
			t.Fatalf("%q: fast path accepted what encoding/json refuses: %v", data, err)
		}
		slow, slowSet := w.toolCall()
		if !reflect.DeepEqual(fast, slow) || fastSet != slowSet {
			t.Fatalf("%q: fast %#v (%v), encoding/json %#v (%v)", data, fast, fastSet, slow, slowSet)
		}
	})
}

// DecodeUpdate copies what it keeps of the caller's bytes, whose buffer may
// be reused; the client's own decode lets a chunk's text share the params
// copy it owns (one allocation fewer per chunk), escaped text excepted.
func TestChunkTextSharesOnlyTheClientsOwnParams(t *testing.T) {
	params := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}`)
	u := DecodeUpdate(params)
	params[len(params)-5] = 'J' // "hello" → "hellJ" in the caller's buffer
	if got := u.(*MessageChunk).Content.Text; got != "hello" {
		t.Fatalf("DecodeUpdate's text changed with the caller's buffer: %q", got)
	}
	own := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello"}}}`)
	m := decodeUpdate(own, "s", true).(*MessageChunk)
	if m.Content.Text != "hello" || unsafe.StringData(m.Content.Text) != &own[len(own)-9] {
		t.Fatalf("the client's own decode copied the text %q", m.Content.Text)
	}
	esc := []byte(`{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}}`)
	if m := decodeUpdate(esc, "s", true).(*MessageChunk); m.Content.Text != "a\nb" {
		t.Fatalf("escaped text: %q", m.Content.Text)
	}
	if n := testing.AllocsPerRun(100, func() { _ = decodeUpdate(own, "s", true) }); n != 1 {
		t.Errorf("%v allocations per shared chunk, want 1 (the *MessageChunk)", n)
	}
}

// TestStreamedChunkStaysSmall guards the bytes every streamed chunk costs:
// the *MessageChunk is one 128-byte size class (the attachment fields of
// non-text blocks sit behind a pointer, the kind is a byte), so with the
// params copy behind Raw a 64-byte chunk costs under twice the limit's bytes
// (bench/README.md).
func TestStreamedChunkStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(ContentBlock{}); n > 64 {
		t.Errorf("ContentBlock is %d bytes, want ≤ 64", n)
	}
	if n := unsafe.Sizeof(updateHeader{}); n > 48 {
		t.Errorf("updateHeader is %d bytes, want ≤ 48", n)
	}
	if n := unsafe.Sizeof(MessageChunk{}); n > 128 {
		t.Errorf("MessageChunk is %d bytes, want ≤ 128", n)
	}
}

// TestUnknownKindsKeepTheAgentsString: a kind this version does not know
// keeps its string though known kinds are stored as a byte.
func TestUnknownKindsKeepTheAgentsString(t *testing.T) {
	for _, params := range []string{
		`{"sessionId":"s","update":{"sessionUpdate":"x_later","n":1}}`,
		`{"update":{"n":[1,{}],"sessionUpdate":"x_later"},"sessionId":"s"}`,
	} {
		u := DecodeUpdate(json.RawMessage(params))
		if _, ok := u.(*UnknownUpdate); !ok || u.Kind() != "x_later" || u.SessionID() != "s" {
			t.Errorf("%s: %T kind %q session %q", params, u, u.Kind(), u.SessionID())
		}
	}
	bad := DecodeUpdate(json.RawMessage(`{"sessionId":"s","update":{"sessionUpdate":"notice"}}`))
	if _, ok := bad.(*UnknownUpdate); !ok || bad.Kind() != KindNotice {
		t.Errorf("an undecodable notice: %T kind %q", bad, bad.Kind())
	}
	for _, k := range kindNames[1:] {
		if kindNames[codeOf(k)] != k {
			t.Errorf("kind %q does not round-trip", k)
		}
	}
}

// A tool call's name (stable since schema v1.22) is typed, and merged by
// a later update like the other fields.
func TestToolCallNameIsTyped(t *testing.T) {
	tc := decode(t, `{"sessionUpdate":"tool_call","toolCallId":"t","title":"Run ls","kind":"execute","name":"Bash"}`).(*ToolCallUpdate)
	if tc.State.Name != "Bash" || !tc.Set.Has(FieldName) {
		t.Fatalf("name %q (set %v)", tc.State.Name, tc.Set.Has(FieldName))
	}
	up := decode(t, `{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}`).(*ToolCallUpdate)
	if up.Set.Has(FieldName) {
		t.Errorf("an update without a name sets it")
	}
}
