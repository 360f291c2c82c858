//go:build interop

// Package interop runs acphost against six real ACP agent builds, offline:
// each agent is pointed at a scripted mock LLM on 127.0.0.1 by its own
// provider settings. Run it with interop/run.sh; see README.md.
package interop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MockLLM is a scripted model provider on a random loopback port. It speaks
// the four streaming APIs the agents call (Anthropic Messages, OpenAI
// Responses, OpenAI Chat Completions, Gemini streamGenerateContent) and the
// side endpoints (models lists, token counts, classifiers).
//
// The script comes from the conversation itself. The newest user message
// that carries a "[mock:...]" marker lists the steps of the turn, e.g.
// "[mock:steps=sh:out1.txt,write:note.txt]". The mock counts the tool
// results that follow that message: while steps remain, it answers with
// some reasoning, a short text and ONE tool call for the next step (a shell
// command writing the file, the agent's file-write tool, or an
// AskUserQuestion); then it answers
// with short final text. Calls that offer no tools (titles, suggestions,
// classifiers) get short text.
type MockLLM struct {
	URL     string // http://127.0.0.1:PORT
	Port    int
	WorkDir string // the session's cwd, for tools that want absolute paths

	srv  *http.Server
	ln   net.Listener
	seq  atomic.Int64
	dump string // directory to dump request bodies to, if set
	logf func(format string, args ...any)

	mu     sync.Mutex
	calls  []MockCall
	closed bool // no logging after Close: the test may have ended
}

// MockCall is one request the mock answered.
type MockCall struct {
	Method, Path string
	API          string // anthropic, responses, chat, gemini, side
	Action       string // tool:<name>, final, side, 404
	// Body is the request body of a model call (not of a side call), for
	// tests that check what the agent sent its model.
	Body []byte
}

// FinalText is the mock's last answer of a turn.
const FinalText = "Done: the file is written."

// StartMock listens on 127.0.0.1:0 and serves until Close.
func StartMock(workDir string, logf func(string, ...any)) (*MockLLM, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &MockLLM{ln: ln, WorkDir: workDir, logf: logf}
	m.Port = ln.Addr().(*net.TCPAddr).Port
	m.URL = "http://127.0.0.1:" + strconv.Itoa(m.Port)
	if d := os.Getenv("INTEROP_DUMP"); d != "" {
		m.dump = filepath.Join(d, filepath.Base(workDir)+"-"+strconv.Itoa(m.Port))
		_ = os.MkdirAll(m.dump, 0o755)
	}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve), ReadHeaderTimeout: 10 * time.Second}
	go m.srv.Serve(ln)
	return m, nil
}

// Close stops the server.
func (m *MockLLM) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return m.srv.Close()
}

// Calls returns what the mock answered so far.
func (m *MockLLM) Calls() []MockCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MockCall(nil), m.calls...)
}

// Count returns how many calls had this action.
func (m *MockLLM) Count(action string) int {
	n := 0
	for _, c := range m.Calls() {
		if c.Action == action || (strings.HasSuffix(action, ":") && strings.HasPrefix(c.Action, action)) {
			n++
		}
	}
	return n
}

func (m *MockLLM) record(r *http.Request, api, action string) { m.recordBody(r, api, action, nil) }

func (m *MockLLM) recordBody(r *http.Request, api, action string, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, MockCall{Method: r.Method, Path: r.URL.Path, API: api, Action: action, Body: body})
	if m.logf != nil && !m.closed {
		m.logf("mock: %s %s -> %s %s", r.Method, r.URL.RequestURI(), api, action)
	}
}

// recordTurn records a model call: a side call (no tools offered: a title,
// a summary) or one step of the scripted turn, with its body.
func (m *MockLLM) recordTurn(r *http.Request, api string, side bool, p plan, body []byte) {
	if side {
		m.record(r, api, "side")
		return
	}
	m.recordBody(r, api, p.action(), body)
}

func (m *MockLLM) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	n := m.seq.Add(1)
	if m.dump != "" {
		name := fmt.Sprintf("%03d-%s%s.json", n, r.Method, strings.NewReplacer("/", "_", ":", "_").Replace(r.URL.Path))
		_ = os.WriteFile(filepath.Join(m.dump, name), body, 0o644)
	}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/messages/count_tokens"):
		m.record(r, "anthropic", "side")
		writeJSON(w, map[string]any{"input_tokens": 100})
	case strings.HasSuffix(p, "/messages") && r.Method == http.MethodPost:
		m.anthropic(w, r, body)
	case strings.HasSuffix(p, "/responses") && r.Method == http.MethodPost:
		m.responses(w, r, body)
	case strings.HasSuffix(p, "/chat/completions") && r.Method == http.MethodPost:
		m.chat(w, r, body)
	case strings.Contains(p, ":streamGenerateContent"):
		m.gemini(w, r, body, true)
	case strings.Contains(p, ":generateContent"):
		m.gemini(w, r, body, false)
	case strings.Contains(p, ":countTokens"):
		m.record(r, "gemini", "side")
		writeJSON(w, map[string]any{"totalTokens": 100})
	case strings.HasSuffix(p, "/models") && r.Method == http.MethodGet:
		m.record(r, "models", "side")
		writeJSON(w, modelsList())
	default:
		// /npm-blocked/… (opencode's background plugin install) and
		// anything unexpected.
		m.record(r, "unknown", "404")
		http.NotFound(w, r)
	}
}

// modelsList satisfies the OpenAI, Anthropic and Gemini list shapes at once.
func modelsList() map[string]any {
	var data []map[string]any
	for _, id := range []string{"mock-model", "gpt-5.5", "claude-opus-5-5", "claude-sonnet-4-5", "claude-haiku-4-5"} {
		data = append(data, map[string]any{
			"id": id, "object": "model", "type": "model", "owned_by": "mock", "created": 0,
			"display_name": id, "created_at": "2025-01-01T00:00:00Z",
		})
	}
	return map[string]any{"object": "list", "data": data, "has_more": false, "first_id": "mock-model", "last_id": "claude-haiku-4-5"}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// step is one scripted tool call.
type step struct {
	Kind string // "sh", "write" or "ask"
	File string // relative to WorkDir; for "ask", any name
}

// The question of the "ask" step: one AskUserQuestion question with two
// options.
const (
	AskQuestion = "Which color should the button be?"
	AskHeader   = "Color"
)

// AskOptions are the labels of the "ask" step's options, with their
// descriptions.
var AskOptions = [][2]string{{"Red", "warm"}, {"Blue", "cool"}}

var markerRE = regexp.MustCompile(`\[mock:steps=([^\]]*)\]`)

// parseSteps reads the marker from a user message's text; ok is false when
// the text has no marker.
func parseSteps(text string) (steps []step, ok bool) {
	mm := markerRE.FindAllStringSubmatch(text, -1)
	if len(mm) == 0 {
		return nil, false
	}
	for _, s := range strings.Split(mm[len(mm)-1][1], ",") {
		kind, file, found := strings.Cut(strings.TrimSpace(s), ":")
		if found && file != "" {
			steps = append(steps, step{Kind: kind, File: file})
		}
	}
	return steps, true
}

// plan is what the mock answers to one main call.
type plan struct {
	tool      string          // tool name; "" for final text
	namespace string          // the Responses namespace of tool, if any
	args      json.RawMessage // arguments object (function tools)
	freeform  string          // input of a freeform tool (codex apply_patch)
	text      string          // the short text before the tool call, or the final text
	thought   string
	callID    string
}

func (m *MockLLM) callID(prefix string) string {
	return fmt.Sprintf("%s%04d", prefix, m.seq.Add(1))
}

// decide picks the next action from the steps, the number of tool results
// after the prompt and the tools the agent offered.
func (m *MockLLM) decide(steps []step, done int, tools map[string]toolInfo, idPrefix string) plan {
	if done >= len(steps) {
		return plan{text: FinalText, thought: "The tool ran; answer briefly."}
	}
	st := steps[done]
	abs := filepath.Join(m.WorkDir, st.File)
	p := plan{thought: "The user wants " + st.File + " written. I will use a tool.", callID: m.callID(idPrefix)}
	cmd := "echo hi > " + st.File
	content := "hello\n"
	switch st.Kind {
	case "sh":
		p.text = "I'll run a shell command to write " + st.File + "."
		switch {
		case has(tools, "Bash"):
			p.tool, p.args = "Bash", mustJSON(map[string]any{"command": cmd, "description": "Write hi to " + st.File})
		case has(tools, "bash"):
			p.tool, p.args = "bash", mustJSON(map[string]any{"command": cmd, "description": "Write hi to " + st.File})
		case has(tools, "run_shell_command"):
			p.tool, p.args = "run_shell_command", mustJSON(map[string]any{"command": cmd, "description": "Write hi to " + st.File})
		case has(tools, "exec_command"):
			p.tool, p.args = "exec_command", mustJSON(map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Allow writing " + st.File + "?"})
		case has(tools, "shell_command"):
			p.tool, p.args = "shell_command", mustJSON(map[string]any{"command": cmd, "sandbox_permissions": "require_escalated", "justification": "Allow writing " + st.File + "?"})
		case has(tools, "shell"):
			p.tool, p.args = "shell", mustJSON(map[string]any{"command": []string{"bash", "-lc", cmd}, "sandbox_permissions": "require_escalated", "justification": "Allow writing " + st.File + "?"})
		}
	case "ask":
		p.text = "I'll ask which color to use."
		if has(tools, "AskUserQuestion") {
			var opts []map[string]any
			for _, o := range AskOptions {
				opts = append(opts, map[string]any{"label": o[0], "description": o[1]})
			}
			p.tool, p.args = "AskUserQuestion", mustJSON(map[string]any{"questions": []any{map[string]any{
				"question": AskQuestion, "header": AskHeader, "options": opts, "multiSelect": false}}})
		}
	case "mcp":
		// File is "<server>/<tool>": a host tool, by the agent's naming.
		server, tool, _ := strings.Cut(st.File, "/")
		p.text = "I'll look it up with the " + server + " tool " + tool + "."
		if name := mcpToolName(tools, server, tool); name != "" {
			p.tool, p.args = name, mustJSON(map[string]any{"id": HostToolArg})
			if ti := tools[name]; ti.namespace != "" {
				p.namespace, p.tool = ti.namespace, ti.name
			}
		}
	case "write":
		p.text = "I'll write " + st.File + " with the file tool."
		switch {
		case has(tools, "Write"):
			p.tool, p.args = "Write", mustJSON(map[string]any{"file_path": abs, "content": content})
		case has(tools, "write"):
			p.tool, p.args = "write", mustJSON(map[string]any{"filePath": abs, "content": content})
		case has(tools, "write_file"):
			p.tool, p.args = "write_file", mustJSON(map[string]any{"file_path": abs, "content": content})
		case has(tools, "apply_patch"):
			patch := "*** Begin Patch\n*** Add File: " + abs + "\n+hello\n*** End Patch\n"
			p.tool = "apply_patch"
			if tools["apply_patch"].freeform {
				p.freeform = patch
			} else {
				p.args = mustJSON(map[string]any{"input": patch})
			}
		}
	}
	if p.tool == "" {
		names := make([]string, 0, len(tools))
		for n := range tools {
			names = append(names, n)
		}
		p.text = fmt.Sprintf("mock: no tool for step %s among %v", st.Kind, names)
		p.thought = ""
	}
	return p
}

// HostToolArg is the "id" argument the "mcp" step passes the host's tool.
const HostToolArg = "A-1001"

// mcpToolName is the name under which the agent offers its model tool of
// MCP server server: Claude's mcp__<server>__<tool>, opencode's
// <server>_<tool>, Gemini's mcp_<server>_<tool> or the bare name.
func mcpToolName(tools map[string]toolInfo, server, tool string) string {
	for _, name := range []string{"mcp__" + server + "__" + tool, "mcp__" + server + "/" + tool, server + "_" + tool, "mcp_" + server + "_" + tool, server + "__" + tool, tool} {
		if has(tools, name) {
			return name
		}
	}
	return ""
}

// toolInfo is what the mock knows of an offered tool. A tool of a
// namespace is keyed "<namespace>/<name>".
type toolInfo struct {
	freeform        bool
	namespace, name string
}

func has(tools map[string]toolInfo, name string) bool { _, ok := tools[name]; return ok }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func (p plan) action() string {
	if p.tool == "" {
		return "final"
	}
	return "tool:" + p.tool
}

// sse writes server-sent events.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, v any) {
	var b bytes.Buffer
	if name != "" {
		fmt.Fprintf(&b, "event: %s\n", name)
	}
	data, _ := json.Marshal(v)
	fmt.Fprintf(&b, "data: %s\n\n", data)
	_, _ = s.w.Write(b.Bytes())
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sse) raw(line string) {
	_, _ = io.WriteString(s.w, line)
	if s.f != nil {
		s.f.Flush()
	}
}

// ---------------------------------------------------------------- Anthropic

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func anthBlocks(raw json.RawMessage) []anthBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthBlock{{Type: "text", Text: s}}
	}
	var bs []anthBlock
	_ = json.Unmarshal(raw, &bs)
	return bs
}

func (m *MockLLM) anthropic(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		Messages []anthMessage   `json:"messages"`
		Tools    []toolDecl      `json:"tools"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		m.record(r, "anthropic", "400")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tools := toolSet(req.Tools)
	var p plan
	if len(tools) == 0 {
		p = plan{text: "Mock title"}
	} else {
		var steps []step
		done := 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			msg := req.Messages[i]
			if msg.Role != "user" {
				continue
			}
			var text strings.Builder
			results := 0
			for _, b := range anthBlocks(msg.Content) {
				switch b.Type {
				case "text":
					text.WriteString(b.Text)
				case "tool_result":
					results++
				}
			}
			// A new prompt can share its message with the previous
			// turn's last tool results (a cancelled call): those
			// precede the marker and are not this turn's.
			if s, ok := parseSteps(text.String()); ok {
				steps = s
				break
			}
			done += results
		}
		p = m.decide(steps, done, tools, "toolu_mock_")
	}
	m.recordTurn(r, "anthropic", len(tools) == 0, p, body)
	model := req.Model
	id := m.callID("msg_mock_")
	stop := "end_turn"
	if p.tool != "" {
		stop = "tool_use"
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	thinking := p.thought != "" && len(req.Thinking) > 0 && !bytes.Contains(req.Thinking, []byte(`"disabled"`))
	if !req.Stream {
		var content []any
		if thinking {
			content = append(content, map[string]any{"type": "thinking", "thinking": p.thought, "signature": "mock-signature"})
		}
		content = append(content, map[string]any{"type": "text", "text": p.text})
		if p.tool != "" {
			content = append(content, map[string]any{"type": "tool_use", "id": p.callID, "name": p.tool, "input": p.args})
		}
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	idx := 0
	if thinking {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "thinking_delta", "thinking": p.thought}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "signature_delta", "signature": "mock-signature"}})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
		idx++
	}
	s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "text", "text": ""}})
	s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "text_delta", "text": p.text}})
	s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	idx++
	if p.tool != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": idx, "content_block": map[string]any{"type": "tool_use", "id": p.callID, "name": p.tool, "input": map[string]any{}}})
		s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": idx, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(p.args)}})
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": idx})
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 20}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// toolDecl is a tool as the Anthropic, Responses and Chat APIs declare it.
type toolDecl struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function *struct {
		Name string `json:"name"`
	} `json:"function"`
	// Tools are a Responses "namespace" tool's own (Codex offers an MCP
	// server as the namespace mcp__<server>).
	Tools []toolDecl `json:"tools"`
}

func toolSet(decls []toolDecl) map[string]toolInfo {
	out := map[string]toolInfo{}
	for _, d := range decls {
		name := d.Name
		if d.Function != nil && d.Function.Name != "" {
			name = d.Function.Name
		}
		if name != "" {
			out[name] = toolInfo{freeform: d.Type == "custom"}
		}
		if d.Type == "namespace" {
			for _, in := range d.Tools {
				out[name+"/"+in.Name] = toolInfo{namespace: name, name: in.Name}
			}
		}
	}
	return out
}

// ---------------------------------------------------------- OpenAI Responses

func (m *MockLLM) responses(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model string            `json:"model"`
		Input []json.RawMessage `json:"input"`
		Tools []toolDecl        `json:"tools"`
		Text  struct {
			Format struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		m.record(r, "responses", "400")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tools := toolSet(req.Tools)
	var p plan
	switch {
	case req.Text.Format.Type == "json_schema":
		// A structured side call: Codex's guardian reviewing a command
		// in its "agent" mode. Answered as a real model answers for a
		// harmless command the user asked for: allow.
		p = plan{text: string(mustJSON(fromSchema(req.Text.Format.Schema, 0)))}
		m.record(r, "responses", "guardian")
	case len(tools) == 0:
		p = plan{text: "Mock title"}
	default:
		var steps []step
		done := 0
		for i := len(req.Input) - 1; i >= 0; i-- {
			var it struct {
				Type    string          `json:"type"`
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(req.Input[i], &it)
			if it.Type == "function_call_output" || it.Type == "custom_tool_call_output" || it.Type == "local_shell_call_output" {
				done++
				continue
			}
			if it.Role == "user" {
				if s, ok := parseSteps(responsesText(it.Content)); ok {
					steps = s
					break
				}
			}
		}
		p = m.decide(steps, done, tools, "call_mock_")
		m.recordTurn(r, "responses", false, p, body)
	}
	if len(tools) == 0 && req.Text.Format.Type != "json_schema" {
		m.recordTurn(r, "responses", true, p, body)
	}
	respID := m.callID("resp_mock_")
	s := newSSE(w)
	s.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "model": req.Model, "output": []any{}}})
	out := 0
	var items []any
	if p.thought != "" {
		rid := m.callID("rs_mock_")
		s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": out,
			"item": map[string]any{"type": "reasoning", "id": rid, "summary": []any{}}})
		s.event("response.reasoning_summary_part.added", map[string]any{"type": "response.reasoning_summary_part.added", "item_id": rid, "output_index": out, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
		s.event("response.reasoning_summary_text.delta", map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": rid, "output_index": out, "summary_index": 0, "delta": p.thought})
		item := map[string]any{"type": "reasoning", "id": rid, "summary": []any{map[string]any{"type": "summary_text", "text": p.thought}}}
		s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": item})
		items = append(items, item)
		out++
	}
	mid := m.callID("msg_mock_")
	s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": out,
		"item": map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []any{}}})
	s.event("response.content_part.added", map[string]any{"type": "response.content_part.added", "item_id": mid, "output_index": out, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	s.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": mid, "output_index": out, "content_index": 0, "delta": p.text})
	s.event("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": mid, "output_index": out, "content_index": 0, "text": p.text})
	msg := map[string]any{"type": "message", "id": mid, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": p.text, "annotations": []any{}}}}
	s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": msg})
	items = append(items, msg)
	out++
	if p.tool != "" {
		var item map[string]any
		if p.freeform != "" {
			item = map[string]any{"type": "custom_tool_call", "id": m.callID("ctc_mock_"), "call_id": p.callID, "name": p.tool, "input": p.freeform, "status": "completed"}
		} else {
			item = map[string]any{"type": "function_call", "id": m.callID("fc_mock_"), "call_id": p.callID, "name": p.tool, "arguments": string(p.args), "status": "completed"}
			if p.namespace != "" {
				item["namespace"] = p.namespace
			}
		}
		s.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": out, "item": item})
		s.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": out, "item": item})
		items = append(items, item)
	}
	s.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID, "object": "response", "status": "completed", "model": req.Model, "output": items,
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 20, "output_tokens_details": map[string]any{"reasoning_tokens": 5}, "total_tokens": 120}}})
}

func responsesText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// ---------------------------------------------------- OpenAI Chat Completions

func (m *MockLLM) chat(w http.ResponseWriter, r *http.Request, body []byte) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []toolDecl `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		m.record(r, "chat", "400")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tools := toolSet(req.Tools)
	var p plan
	if len(tools) == 0 {
		p = plan{text: "Mock title"}
	} else {
		var steps []step
		done := 0
		for i := len(req.Messages) - 1; i >= 0; i-- {
			msg := req.Messages[i]
			if msg.Role == "tool" {
				done++
				continue
			}
			if msg.Role == "user" {
				if s, ok := parseSteps(responsesText(msg.Content)); ok {
					steps = s
					break
				}
			}
		}
		p = m.decide(steps, done, tools, "call_mock_")
	}
	m.recordTurn(r, "chat", len(tools) == 0, p, body)
	id := m.callID("chatcmpl-mock-")
	created := time.Now().Unix()
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	finish := "stop"
	if p.tool != "" {
		finish = "tool_calls"
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": p.text}
		if p.tool != "" {
			msg["tool_calls"] = []any{map[string]any{"id": p.callID, "type": "function", "function": map[string]any{"name": p.tool, "arguments": string(p.args)}}}
		}
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
		return
	}
	s := newSSE(w)
	s.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if p.thought != "" {
		s.event("", chunk(map[string]any{"reasoning_content": p.thought}, nil))
	}
	s.event("", chunk(map[string]any{"content": p.text}, nil))
	if p.tool != "" {
		s.event("", chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": p.callID, "type": "function",
			"function": map[string]any{"name": p.tool, "arguments": string(p.args)}}}}, nil))
	}
	last := chunk(map[string]any{}, finish)
	last["usage"] = map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
	s.event("", last)
	s.raw("data: [DONE]\n\n")
}

// ------------------------------------------------------------------- Gemini

func (m *MockLLM) gemini(w http.ResponseWriter, r *http.Request, body []byte, stream bool) {
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text             string          `json:"text"`
				FunctionResponse json.RawMessage `json:"functionResponse"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		m.record(r, "gemini", "400")
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	tools := map[string]toolInfo{}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			tools[f.Name] = toolInfo{}
		}
	}
	var p plan
	side := len(tools) == 0 || req.GenerationConfig.ResponseMimeType == "application/json"
	if side {
		p = plan{text: "Mock title"}
		if req.GenerationConfig.ResponseMimeType == "application/json" {
			// The router classifier wants {complexity_reasoning,
			// complexity_score}; the next-speaker check {reasoning,
			// next_speaker}. One object satisfies both.
			p.text = `{"complexity_reasoning":"A simple one-step task.","complexity_score":10,"reasoning":"The model finished its turn.","next_speaker":"user"}`
		}
	} else {
		var steps []step
		done := 0
		for i := len(req.Contents) - 1; i >= 0; i-- {
			c := req.Contents[i]
			if c.Role != "user" && c.Role != "" {
				continue
			}
			var text strings.Builder
			results := 0
			for _, part := range c.Parts {
				text.WriteString(part.Text)
				if len(part.FunctionResponse) > 0 {
					results++
				}
			}
			// A new prompt can share its message with the previous
			// turn's last tool results (a cancelled call): those
			// precede the marker and are not this turn's.
			if s, ok := parseSteps(text.String()); ok {
				steps = s
				break
			}
			done += results
		}
		p = m.decide(steps, done, tools, "")
	}
	m.recordTurn(r, "gemini", side, p, body)
	usage := map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120}
	cand := func(parts []any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{c}, "usageMetadata": usage, "modelVersion": "mock-model", "responseId": m.callID("gem_mock_")}
	}
	var parts []any
	if p.thought != "" {
		parts = append(parts, map[string]any{"text": p.thought, "thought": true})
	}
	parts = append(parts, map[string]any{"text": p.text})
	if p.tool != "" {
		parts = append(parts, map[string]any{"functionCall": map[string]any{"name": p.tool, "args": p.args}})
	}
	if !stream {
		writeJSON(w, cand(parts, "STOP"))
		return
	}
	s := newSSE(w)
	for i, part := range parts {
		finish := ""
		if i == len(parts)-1 {
			finish = "STOP"
		}
		s.event("", cand([]any{part}, finish))
	}
}

// fromSchema makes a value that fits a JSON schema the way a model
// approving a harmless action would fill it: an enum takes "allow" (or
// "approve", "low", "safe") when offered, strings a short rationale.
func fromSchema(raw json.RawMessage, depth int) any {
	var sc struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
		AnyOf      []json.RawMessage          `json:"anyOf"`
		OneOf      []json.RawMessage          `json:"oneOf"`
	}
	if depth > 8 || json.Unmarshal(raw, &sc) != nil {
		return nil
	}
	if len(sc.Enum) > 0 {
		for _, want := range []string{"allow", "approve", "approved", "low", "safe"} {
			for _, v := range sc.Enum {
				if v == want {
					return v
				}
			}
		}
		return sc.Enum[0]
	}
	if alts := append(sc.AnyOf, sc.OneOf...); len(alts) > 0 {
		return fromSchema(alts[0], depth+1)
	}
	typ, _ := sc.Type.(string)
	if list, ok := sc.Type.([]any); ok && len(list) > 0 {
		typ, _ = list[0].(string)
	}
	switch typ {
	case "object":
		obj := map[string]any{}
		for k, v := range sc.Properties {
			obj[k] = fromSchema(v, depth+1)
		}
		return obj
	case "array":
		return []any{}
	case "string":
		return "The user asked for this; it only writes a file in the workspace."
	case "integer", "number":
		return 0
	case "boolean":
		return true
	case "null":
		return nil
	}
	return nil
}
