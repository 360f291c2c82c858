package fakeagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const methodPermission = "session/request_permission"

var answerTag = []byte("{{answer}}")

// turnTag, in a step's update, permission or request, is the turn's
// number in its session (see Step.Update).
var turnTag = []byte("{{turn}}")

// result says how playing a step (or a list of steps) ended.
type result int

const (
	finished  result = iota // the step is done; go on
	cancelled               // session/cancel arrived
	halted                  // the agent is stopping: do nothing more
)

// turn is one session/prompt being played (or the BeforeSessionNew steps of a session, or
// the BeforeAuthenticate steps). Apart from answer, its state belongs to the goroutine
// playing it.
type turn struct {
	a   *Agent
	sid string
	// reqID is the id of the client's request being handled: the prompt, or the
	// session/new or authenticate whose Before steps these are. A ForRequest step's
	// request names it as its requestId.
	reqID json.RawMessage
	spec  Turn
	// number is the turn's number in its session, for {{turn}}.
	number []byte

	cancelCh   chan struct{}
	cancelOnce sync.Once

	mu      sync.Mutex
	answer  string // the last permission answer, for {{answer}}
	allowed bool   // it selected an option of an allow kind (IfAnswer)

	open       []*call           // agent→client requests of the turn, in the order sent
	toolOrder  []string          // tool call ids in order of appearance
	toolStatus map[string]string // last known status per tool call id
}

func newTurn(a *Agent, sid string, reqID json.RawMessage, spec Turn) *turn {
	return &turn{a: a, sid: sid, reqID: reqID, spec: spec,
		cancelCh: make(chan struct{}), toolStatus: map[string]string{}}
}

// cancel marks the turn cancelled; it is called by the reader on session/cancel.
func (t *turn) cancel() { t.cancelOnce.Do(func() { close(t.cancelCh) }) }

func (t *turn) isCancelled() bool {
	select {
	case <-t.cancelCh:
		return true
	default:
		return false
	}
}

// run plays the turn, answers the prompt and then plays the After steps.
func (t *turn) run() {
	res := t.play(t.spec.Steps, t.spec.OnCancel != "continue")
	if res == finished && t.isCancelled() && t.spec.OnCancel != "continue" {
		res = cancelled
	}
	answered := false
	switch res {
	case finished:
		if len(t.spec.Error) > 0 {
			var e rpcError
			_ = json.Unmarshal(t.spec.Error, &e)
			_ = t.a.send(outMsg{ID: t.reqID, Error: &e})
		} else if isSet(t.spec.Usage) {
			t.answerStopUsage(t.spec.StopReason, t.spec.Usage)
		} else {
			t.answerStop(t.spec.StopReason)
		}
		answered = true
	case cancelled:
		answered = t.onCancel()
	}
	t.a.endTurn(t)
	if answered {
		t.play(t.spec.After, false)
	}
}

func (t *turn) answerStop(reason string) {
	if reason == "" {
		reason = "end_turn"
	}
	t.a.reply(t.reqID, struct {
		StopReason string `json:"stopReason"`
	}{reason})
}

// answerStopUsage answers the prompt with a stop reason and the script's usage.
func (t *turn) answerStopUsage(reason string, usage json.RawMessage) {
	if reason == "" {
		reason = "end_turn"
	}
	t.a.reply(t.reqID, struct {
		StopReason string          `json:"stopReason"`
		Usage      json.RawMessage `json:"usage"`
	}{reason, usage})
}

// onCancel runs the turn's OnCancel behaviour and reports whether the prompt was answered.
func (t *turn) onCancel() bool {
	switch t.spec.OnCancel {
	case "ignore":
		<-t.a.ctx.Done()
		return false
	case "error":
		t.a.replyError(t.reqID, codeInternal, "aborted")
	case "end_turn":
		t.answerStop("end_turn")
	case "await_permission":
		if t.awaitPermissions() == halted {
			return false
		}
		t.answerStop("cancelled")
	case "cancel_request":
		t.cancelOpenRequests()
		fallthrough
	default: // "answer"
		t.failToolCalls()
		t.answerStop("cancelled")
	}
	return true
}

// play plays steps in order. Unless cancellable, session/cancel does not interrupt them.
func (t *turn) play(steps []Step, cancellable bool) result {
	for _, s := range steps {
		if t.a.ctx.Err() != nil {
			return halted
		}
		if cancellable && t.isCancelled() {
			return cancelled
		}
		if res := t.step(s, cancellable); res != finished {
			return res
		}
	}
	return finished
}

func (t *turn) step(s Step, cancellable bool) result {
	if s.IfAnswer != "" && t.wasAllowed() != (s.IfAnswer == "allowed") {
		return finished
	}
	switch {
	case isSet(s.Update):
		t.sendUpdate(t.numbered(s.Update))
	case isSet(s.Permission):
		return t.request(methodPermission, t.numbered(s.Permission), s.NoWait, cancellable)
	case s.Request != nil && s.ForRequest:
		return t.send(s.Request.Method, withField(t.numbered(s.Request.Params), "requestId", t.reqID), s.NoWait, cancellable)
	case s.Request != nil:
		return t.request(s.Request.Method, t.numbered(s.Request.Params), s.NoWait, cancellable)
	case s.Notify != nil:
		t.a.notify(s.Notify.Method, s.Notify.Params)
	case s.WaitAll:
		return t.waitAll(cancellable)
	case s.CancelRequest:
		return t.cancelLatest(cancellable)
	case s.Raw != "":
		_ = t.a.writeLine([]byte(s.Raw + "\n"))
	case s.HugeLine > 0:
		t.sendHuge(s.HugeLine)
	case s.Stderr != "":
		t.a.stderrLine(s.Stderr)
	case s.Exit != nil:
		t.a.exit(*s.Exit)
		return halted
	case s.WaitCancel:
		if t.spec.OnCancel == "continue" {
			return t.wait(t.cancelCh, false)
		}
		return t.wait(nil, cancellable)
	case s.Updates > 0:
		return t.sendBulk(s.Updates, s.UpdatesNumbered, cancellable)
	case s.StopReading:
		return t.a.wedge()
	case len(s.Run) > 0:
		return t.runCommand(s.Run, cancellable)
	case s.MCPCall != nil:
		return t.callMCP(*s.MCPCall, cancellable)
	case s.Delay != "":
		d, _ := time.ParseDuration(s.Delay) // validated
		elapsed := make(chan struct{})
		timer := time.AfterFunc(d, func() { close(elapsed) })
		defer timer.Stop()
		return t.wait(elapsed, cancellable)
	}
	return finished
}

// wait blocks until done is closed, the turn is cancelled (if cancellable) or the agent stops.
func (t *turn) wait(done <-chan struct{}, cancellable bool) result {
	var cancelCh <-chan struct{}
	if cancellable {
		cancelCh = t.cancelCh
	}
	select {
	case <-done:
		return finished
	case <-cancelCh:
		return cancelled
	case <-t.a.ctx.Done():
		return halted
	}
}

// request sends an agent→client request and, unless noWait, waits for its answer.
func (t *turn) request(method string, params json.RawMessage, noWait, cancellable bool) result {
	return t.send(method, withSession(params, t.sid), noWait, cancellable)
}

// send sends an agent→client request with these params and, unless noWait, waits for
// its answer.
func (t *turn) send(method string, params json.RawMessage, noWait, cancellable bool) result {
	var onAnswer func(Message)
	if method == methodPermission {
		t.trackTool(params, "toolCall")
		kinds := optionKinds(params)
		onAnswer = func(m Message) { t.noteAnswer(m, kinds) }
	}
	c, err := t.a.startCall(method, params, onAnswer)
	if err != nil {
		return halted
	}
	t.open = append(t.open, c)
	if noWait {
		return finished
	}
	return t.wait(c.done, cancellable)
}

func (t *turn) waitAll(cancellable bool) result {
	for _, c := range t.open {
		if res := t.wait(c.done, cancellable); res != finished {
			return res
		}
	}
	return finished
}

// awaitPermissions waits, without regard to cancellation, for every open permission request.
func (t *turn) awaitPermissions() result {
	for _, c := range t.open {
		if c.method != methodPermission {
			continue
		}
		if res := t.wait(c.done, false); res != finished {
			return res
		}
	}
	return finished
}

// cancelLatest sends $/cancel_request for the newest unanswered request and waits for its answer.
func (t *turn) cancelLatest(cancellable bool) result {
	for i := len(t.open) - 1; i >= 0; i-- {
		if c := t.open[i]; !c.answered() {
			t.sendCancelRequest(c)
			return t.wait(c.done, cancellable)
		}
	}
	return finished
}

func (t *turn) cancelOpenRequests() {
	for _, c := range t.open {
		if !c.answered() {
			t.sendCancelRequest(c)
		}
	}
}

func (t *turn) sendCancelRequest(c *call) {
	t.a.notify("$/cancel_request", mustJSON(struct {
		RequestID json.RawMessage `json:"requestId"`
	}{c.id}))
}

// noteAnswer records a permission answer for {{answer}} and IfAnswer,
// given the kinds of the options offered; the reader calls it on arrival.
func (t *turn) noteAnswer(m Message, kinds map[string]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.answer = answerOf(m)
	t.allowed = strings.HasPrefix(kinds[t.answer], "allow")
}

func (t *turn) wasAllowed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.allowed
}

// optionKinds maps a permission request's option ids to their kinds.
func optionKinds(params json.RawMessage) map[string]string {
	var p struct {
		Options []Option `json:"options"`
	}
	_ = json.Unmarshal(params, &p)
	kinds := make(map[string]string, len(p.Options))
	for _, o := range p.Options {
		kinds[o.ID] = o.Kind
	}
	return kinds
}

// answerOf is the optionId a permission answer selected, "cancelled" for a cancelled
// outcome, "error" for an error response and "invalid" for anything unreadable.
func answerOf(m Message) string {
	if isSet(m.Error) {
		return "error"
	}
	var r struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	switch {
	case json.Unmarshal(m.Result, &r) != nil || r.Outcome.Outcome == "":
		return "invalid"
	case r.Outcome.Outcome == "selected":
		return r.Outcome.OptionID
	default:
		return r.Outcome.Outcome
	}
}

// numbered replaces {{turn}} in b by the turn's number in its session.
func (t *turn) numbered(b json.RawMessage) json.RawMessage {
	if len(t.number) == 0 || !bytes.Contains(b, turnTag) {
		return b
	}
	return bytes.ReplaceAll(b, turnTag, t.number)
}

// sendUpdate substitutes {{answer}}, tracks tool call status and sends the update.
func (t *turn) sendUpdate(u json.RawMessage) {
	if bytes.Contains(u, answerTag) {
		t.mu.Lock()
		u = bytes.ReplaceAll(u, answerTag, jsonStringBody(t.answer))
		t.mu.Unlock()
	}
	t.trackTool(u, "")
	t.a.sendUpdate(t.sid, u)
}

// trackTool notes the tool call in obj (or in obj[field]) if there is one.
func (t *turn) trackTool(obj json.RawMessage, field string) {
	if field != "" {
		var outer map[string]json.RawMessage
		if json.Unmarshal(obj, &outer) != nil {
			return
		}
		obj = outer[field]
	}
	var v struct {
		Kind   string `json:"sessionUpdate"`
		ID     string `json:"toolCallId"`
		Status string `json:"status"`
	}
	if json.Unmarshal(obj, &v) != nil || v.ID == "" {
		return
	}
	if field == "" && v.Kind != "tool_call" && v.Kind != "tool_call_update" {
		return
	}
	if _, seen := t.toolStatus[v.ID]; !seen {
		t.toolOrder = append(t.toolOrder, v.ID)
		t.toolStatus[v.ID] = "pending"
	}
	if v.Status != "" {
		t.toolStatus[v.ID] = v.Status
	}
}

// failToolCalls reports every unfinished tool call of the turn as failed.
func (t *turn) failToolCalls() {
	for _, id := range t.toolOrder {
		if st := t.toolStatus[id]; st != "completed" && st != "failed" {
			t.sendUpdate(ToolUpdate(id, "failed"))
		}
	}
}

// sendHuge sends one session/update line of exactly n bytes (or the minimum possible).
func (t *turn) sendHuge(n int) {
	base, err := encodeLine(outMsg{JSONRPC: "2.0", Method: "session/update",
		Params: mustJSON(updateParams{t.sid, Text("")})})
	if err != nil {
		return
	}
	pad := max(0, n-(len(base)-1))
	t.a.sendUpdate(t.sid, Text(strings.Repeat("x", pad)))
}

func (t *turn) sendBulk(n int, numbered, cancellable bool) result {
	x := Text("x")
	for i := 0; i < n; i++ {
		if cancellable && t.isCancelled() {
			return cancelled
		}
		if t.a.ctx.Err() != nil {
			return halted
		}
		u := x
		if numbered {
			u = Text(strconv.Itoa(i))
		}
		t.a.sendUpdate(t.sid, u)
	}
	return finished
}

// runCommand runs argv as the agent's own tool and reports it as a tool
// call: in a read-only mode it is not run, in an asking mode only once
// allowed (see Script.ReadOnlyModes, AskingModes).
func (t *turn) runCommand(argv []string, cancellable bool) result {
	id := fmt.Sprintf("run-%d", t.a.nextRun.Add(1))
	title := strings.Join(argv, " ")
	t.sendUpdate(mustJSON(toolCall{SessionUpdate: "tool_call", ToolCallID: id, Title: title, Kind: "execute", Status: "in_progress"}))
	mode := t.a.sessionMode(t.sid)
	status, res, out := "failed", finished, ""
	switch {
	case slices.Contains(t.a.script.ReadOnlyModes, mode):
		out = "not run: the session is in its read-only mode " + strconv.Quote(mode)
	case slices.Contains(t.a.script.AskingModes, mode):
		if res = t.request(methodPermission, PermissionParams(id, title, "execute"), false, cancellable); res != finished {
			return res
		}
		if !t.wasAllowed() {
			out = "not run: not allowed"
			break
		}
		fallthrough
	default:
		status, res, out = t.execute(argv, cancellable)
	}
	t.sendUpdate(mustJSON(toolCall{SessionUpdate: "tool_call_update", ToolCallID: id, Status: status,
		Content: []toolContent{{"content", textBlock{"text", out}}}}))
	return res
}

// execute runs argv in its own process group, killed if the turn is
// cancelled meanwhile; status is "completed" for a zero exit.
func (t *turn) execute(argv []string, cancellable bool) (status string, res result, output string) {
	var out bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second // a child left holding the output must not hold the turn
	ownGroup(cmd)
	status, res = "failed", finished
	if err := cmd.Start(); err != nil {
		out.WriteString(err.Error())
	} else {
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if res = t.wait(exited, cancellable); res != finished {
			killGroup(cmd)
			<-exited
		}
		if cmd.ProcessState.Success() { // its exit status, whatever its children do
			status = "completed"
		}
	}
	return status, res, out.String()
}
