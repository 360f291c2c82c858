package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// ErrDenied is the error a denied write proposal is refused with (the
// client wraps it for the agent).
var ErrDenied = errors.New("web: the write was denied in the browser")

// dialog is a pending permission, write proposal or elicitation: the hook
// that opened it waits on answer.
type dialog struct {
	id   string
	kind string
	msg  []byte // its msgDialog, sent to every tab

	perm *acp.PermissionRequest
	prop *acphost.WriteProposal
	elic *acp.ElicitationRequest

	mu       sync.Mutex
	answered bool
	answer   chan answer // buffered 1: the first answer only
}

// answer is what a tab answered.
type answer struct {
	option  string // permission
	content string // proposal: the content to write
	deny    bool   // proposal
	elicit  acphost.ElicitationAnswer
}

// take marks the dialog answered; false if it already was.
func (d *dialog) take(a answer) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.answered {
		return false
	}
	d.answered = true
	d.answer <- a
	return true
}

// openDialog shows a dialog on every tab.
func (s *Server) openDialog(kind string, fill func(*msgDialog)) *dialog {
	s.mu.Lock()
	s.dialogs++
	id := fmt.Sprintf("d%d", s.dialogs)
	s.mu.Unlock()
	m := msgDialog{Type: "dialog", ID: id, Kind: kind}
	fill(&m)
	d := &dialog{id: id, kind: kind, msg: encode(m), answer: make(chan answer, 1)}
	return d
}

// wait shows d and blocks until a tab answers it or ctx ends; the dialog
// closes on every tab either way.
func (s *Server) wait(ctx context.Context, d *dialog) (answer, error) {
	s.hub.open(d)
	select {
	case a := <-d.answer:
		s.hub.close(d, "answered")
		return a, nil
	case <-ctx.Done():
		d.take(answer{}) // a late click finds it answered
		s.hub.close(d, "ended")
		return answer{}, ctx.Err()
	}
}

func (s *Server) onPermission(ctx context.Context, req *acp.PermissionRequest) (string, error) {
	d := s.openDialog("permission", func(m *msgDialog) { m.Permission = viewPermission(req) })
	d.perm = req
	a, err := s.wait(ctx, d)
	if err != nil {
		return "", err
	}
	s.clickedBy(req)
	return a.option, nil
}

// maxClicked bounds the requests remembered as answered in the page
// (each forgotten when its answer is shown; one outside a turn never is).
const maxClicked = 256

// clickedBy remembers that the person answered req (a permission or an
// elicitation request) in the page, for the answer's note to say "you".
func (s *Server) clickedBy(req any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clicked == nil || len(s.clicked) >= maxClicked {
		s.clicked = map[any]bool{}
	}
	s.clicked[req] = true
}

// answeredBy says who answered req, for the answer's note: "you" for the
// person's click, else what the reason says.
func (s *Server) answeredBy(req any, reason acphost.AnswerReason) string {
	s.mu.Lock()
	clicked := s.clicked[req]
	delete(s.clicked, req)
	s.mu.Unlock()
	switch {
	case clicked:
		return "you"
	case reason == acphost.ReasonHook && s.cfg.PermissionLabel != "":
		return "the policy: " + safe(s.cfg.PermissionLabel)
	case reason == acphost.ReasonHook:
		return "without asking (an earlier \"always\", or the server's policy)"
	case reason == acphost.ReasonPlanMode:
		return "plan mode"
	case reason == acphost.ReasonTimeout:
		return "the timeout"
	case reason == acphost.ReasonCancelled:
		return "the turn's cancellation"
	case reason == acphost.ReasonWithdrawn:
		return "the agent, which withdrew it"
	}
	return safe(string(reason))
}

func (s *Server) onWriteFile(ctx context.Context, p *acphost.WriteProposal) (string, error) {
	d := s.openDialog("proposal", func(m *msgDialog) { m.Proposal = viewProposal(p) })
	d.prop = p
	a, err := s.wait(ctx, d)
	note := func(text string) {
		s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "proposal", Text: text + " " + acp.SafeText(p.Path)})
	}
	switch {
	case err != nil:
		note("write not answered:")
		return "", err
	case a.deny:
		note("write denied:")
		return "", ErrDenied
	case a.content != p.Proposed:
		// What landed, not the agent's version (which its tool card may
		// show): the diff of the amended content.
		applied := *p
		applied.Proposed = a.content
		s.hub.transcript(msgWrite{Type: "write", Turn: s.turnID(), Diff: diffView(applied.FileDiff())})
		note("amended write applied:")
	default:
		note("write applied:")
	}
	return a.content, nil
}

func (s *Server) onElicitation(ctx context.Context, req *acp.ElicitationRequest) (acphost.ElicitationAnswer, error) {
	d := s.openDialog("elicitation", func(m *msgDialog) { m.Elicitation = viewElicitation(req) })
	d.elic = req
	a, err := s.wait(ctx, d)
	if err != nil {
		return acphost.ElicitationAnswer{Action: acp.ElicitCancel}, err
	}
	s.clickedBy(req)
	return a.elicit, nil
}

// onUpdate follows mode, config and title changes of the current session,
// gathers the history a session being loaded replays, and passes every
// update on to Config.Agent.OnUpdate.
func (s *Server) onUpdate(u acp.Update) {
	if s.userUp != nil {
		defer s.userUp(u)
	}
	s.showMu.Lock()
	defer s.showMu.Unlock()
	s.mu.Lock()
	if u.Replay() {
		if rb := s.replay; rb != nil && rb.id == u.SessionID() {
			rb.add(u)
		}
		s.mu.Unlock()
		return
	}
	sess := s.sess
	if sess == nil {
		// The agent spoke before it answered session/new: New shows it
		// once it knows the session.
		if shown(u) && len(s.early) < maxEarlyUpdates {
			s.early = append(s.early, u)
		}
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.show(sess, u)
}

// maxEarlyUpdates bounds the updates kept from before the first session
// is known; later ones are not shown (the state, sent once it is, still
// holds the mode and options they set).
const maxEarlyUpdates = 64

// shown reports whether the page shows u outside a turn's stream.
func shown(u acp.Update) bool {
	switch u.(type) {
	case *acp.CurrentModeUpdate, *acp.ConfigOptionUpdate, *acp.SessionInfoUpdate:
		return true
	}
	return false
}

// show puts an update outside a turn's stream on the page: a mode change
// as a note, and the state. s.showMu is held.
func (s *Server) show(sess *acphost.Session, u acp.Update) {
	if u.SessionID() != sess.ID() {
		return // a session the page has left
	}
	switch u := u.(type) {
	case *acp.CurrentModeUpdate:
		s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "mode", Text: "mode: " + acp.SafeText(u.ModeID)})
		s.publishState()
	case *acp.ConfigOptionUpdate, *acp.SessionInfoUpdate:
		s.publishState()
	}
}

// setFirstSession makes the client's session the page's and shows what
// the agent said before it was known, in order, before any later update.
func (s *Server) setFirstSession(sess *acphost.Session) {
	s.showMu.Lock()
	defer s.showMu.Unlock()
	s.mu.Lock()
	s.sess = sess
	early := s.early
	s.early = nil
	s.mu.Unlock()
	for _, u := range early {
		s.show(sess, u)
	}
}

// session returns the session prompts go to.
func (s *Server) session() *acphost.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

func (s *Server) turnID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return s.turn.id
	}
	return s.turns
}

// publishState sends the controls' state to every tab.
func (s *Server) publishState() {
	s.mu.Lock()
	st := msgState{Type: "state", Turn: s.turns, Running: s.turn != nil, Switching: s.switching, Modes: []choiceView{}, Config: []configView{},
		Permission: safe(s.cfg.PermissionLabel), Recording: s.cfg.Sessions != nil}
	sess, wt := s.sess, s.wt
	s.mu.Unlock()
	st.Session = viewSession(sess, wt)
	st.Worktrees = s.cfg.Worktree != nil && s.cfg.Worktree.Make != nil
	st.PlanMode = s.c.PlanMode()
	e := sess.Enforcement()
	if e.PlanMode || s.cfg.PermissionLabel != "allow" {
		st.Holds = e.String()
	}
	st.Containment = s.c.Containment().Word()
	modes := sess.Modes()
	st.Mode = modes.CurrentModeID
	if e.Mode != "" {
		st.Mode = e.Mode // the agent's word, or the mode the host set and the agent accepted
	}
	for _, m := range modes.AvailableModes {
		st.Modes = append(st.Modes, choiceView{Value: m.ID, Name: label(m.Name, m.ID), Description: safe(m.Description)})
	}
	// One mode picker: a config option of category "mode" repeats the
	// modes (Claude's adapter offers both) or, for an agent that offers
	// its modes only so (opencode), is the picker.
	for _, o := range sess.ConfigOptions() {
		if o.Category == acp.CategoryMode && o.Type == "select" {
			if len(st.Modes) > 0 || st.ModeOption != "" {
				continue
			}
			v := viewConfig(o)
			st.Modes, st.ModeOption = v.Options, v.ID
			if val, ok := v.Value.(string); ok && e.Mode == "" {
				st.Mode = val
			}
			continue
		}
		st.Config = append(st.Config, viewConfig(o))
	}
	if err := s.c.Err(); err != nil {
		st.AgentError = safe(err.Error())
	}
	s.hub.setState(st)
}

// readJSON decodes a POST body into v, answering 400 when it does not
// decode.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(encode(v))
}

// apiPrompt starts a turn: {"text": "..."}. 409 while one runs.
func (s *Server) apiPrompt(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text string `json:"text"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Text) == "" {
		http.Error(w, "empty prompt", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "server closed", http.StatusServiceUnavailable)
		return
	}
	if s.turn != nil || s.switching {
		s.mu.Unlock()
		http.Error(w, errBusy.Error(), http.StatusConflict)
		return
	}
	s.turns++
	id := s.turns
	ctx, cancel := context.WithCancel(s.ctx)
	s.turn = &runningTurn{id: id, cancel: cancel}
	sess, wt := s.sess, s.wt
	s.wg.Add(1)
	s.mu.Unlock()
	s.hub.transcript(msgUser{Type: "user", Turn: id, Text: acp.SafeText(req.Text)})
	s.publishState()
	go s.runTurn(ctx, cancel, sess, wt, id, req.Text)
	writeJSON(w, map[string]int{"turn": id})
}

// runTurn runs one turn, streaming its events to the tabs.
func (s *Server) runTurn(ctx context.Context, cancel context.CancelFunc, sess *acphost.Session, wt *Worktree, id int, text string) {
	defer s.wg.Done()
	defer cancel()
	s.record(sess, wt)
	defer s.record(sess, wt)
	ended := false
	recorder, _ := s.cfg.Sessions.(TurnRecorder)
	started := time.Now()
	resp, err := sess.GenerateStream(ctx, acphost.Request{Prompt: text, Discard: recorder == nil}, func(ev acphost.StreamEvent) {
		if ev.Type == acphost.EventDone || ev.Type == acphost.EventError {
			ended = true
		}
		s.emit(id, ev)
	})
	if !ended {
		s.hub.transcript(msgEnd{Type: "error", Turn: id, Error: errText(err)})
	}
	if recorder != nil && sess.ID() != "" {
		if rerr := recorder.RecordTurn(sess.ID(), TurnRecord{Prompt: text, Response: resp, Err: err, Started: started, Duration: time.Since(started)}); rerr != nil {
			s.log.Warn("web: recording the turn", "session", sess.ID(), "err", rerr)
		}
	}
	s.mu.Lock()
	s.turn = nil
	s.mu.Unlock()
	s.publishState()
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return safe(err.Error())
}

// emit turns a stream event into a transcript message.
func (s *Server) emit(turn int, ev acphost.StreamEvent) {
	switch ev.Type {
	case acphost.EventText, acphost.EventThought:
		s.hub.transcript(msgDelta{Type: string(ev.Type), Turn: turn, Delta: acp.SafeText(ev.Delta)})
	case acphost.EventToolCall, acphost.EventToolUpdate:
		if ev.ToolCall != nil {
			s.hub.transcript(msgTool{Type: "tool", Turn: turn, Tool: viewTool(*ev.ToolCall)})
		}
	case acphost.EventPlan:
		s.hub.transcript(msgPlan{Type: "plan", Turn: turn, Entries: viewPlan(ev.Plan)})
	case acphost.EventUsage:
		if u := ev.Usage; u != nil {
			m := msgUsage{Type: "usage", Turn: turn, Used: u.Used, Size: u.Size}
			if u.Cost != nil {
				m.Cost, m.Currency = u.Cost.Amount, safe(u.Cost.Currency)
			}
			s.hub.transcript(m)
		}
	case acphost.EventPermission:
		if p := ev.Permission; p != nil {
			h, _ := p.Heading()
			s.hub.transcript(msgNote{Type: "note", Turn: turn, Kind: "permission", Text: "asked: " + safe(h)})
		}
	case acphost.EventPermissionAnswer:
		if a := ev.Answer; a != nil {
			what := "cancelled"
			if !a.Cancelled {
				what = a.OptionID
				if a.Option != nil && a.Option.Name != "" {
					what = a.Option.Name
				}
			}
			s.hub.transcript(msgNote{Type: "note", Turn: turn, Kind: "answer",
				Text: fmt.Sprintf("answered by %s: %s", s.answeredBy(ev.Permission, a.Reason), safe(what))})
		}
	case acphost.EventElicitationAnswer:
		if a := ev.ElicitationAnswer; a != nil {
			s.hub.transcript(msgNote{Type: "note", Turn: turn, Kind: "elicitation",
				Text: fmt.Sprintf("question answered by %s: %s", s.answeredBy(ev.Elicitation, a.Reason), a.Action)})
		}
	case acphost.EventNotice:
		if n := ev.Notice; n != nil {
			s.hub.transcript(msgNote{Type: "note", Turn: turn, Kind: "notice", Text: safe(strings.TrimSpace(n.Title + "\n" + n.Description))})
		}
	case acphost.EventRestart:
		s.hub.transcript(msgNote{Type: "note", Turn: turn, Kind: "restart", Text: "agent restarted: " + errText(ev.Err)})
	case acphost.EventDone:
		m := msgEnd{Type: "done", Turn: turn, StopReason: safe(string(ev.StopReason)), Error: errText(ev.Err)}
		if errors.Is(ev.Err, context.Canceled) {
			m.Error = "" // the stop button's own cancellation: the stop reason says it
		}
		s.hub.transcript(m)
	case acphost.EventError:
		s.hub.transcript(msgEnd{Type: "error", Turn: turn, Error: errText(ev.Err)})
	}
}

// apiStop cancels the running turn: {"stopping": true} if there was one.
func (s *Server) apiStop(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		t.cancel()
	}
	writeJSON(w, map[string]bool{"stopping": t != nil})
}

// pending finds the dialog a POST names, answering 404 (gone: answered,
// withdrawn or cancelled) or 400 (another kind).
func (s *Server) pending(w http.ResponseWriter, id, kind string) *dialog {
	d := s.hub.find(id)
	if d == nil {
		http.Error(w, "no such pending request: it was answered, withdrawn or cancelled", http.StatusNotFound)
		return nil
	}
	if d.kind != kind {
		http.Error(w, "request "+id+" is not a "+kind, http.StatusBadRequest)
		return nil
	}
	return d
}

func answered(w http.ResponseWriter, ok bool) {
	if !ok {
		http.Error(w, "already answered", http.StatusConflict)
		return
	}
	writeJSON(w, map[string]bool{"ok": true})
}

// apiPermission answers a permission: {"id": "d1", "option": "allow"}.
func (s *Server) apiPermission(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     string `json:"id"`
		Option string `json:"option"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	d := s.pending(w, req.ID, "permission")
	if d == nil {
		return
	}
	if d.perm.Option(req.Option) == nil {
		http.Error(w, "that option was not offered", http.StatusBadRequest)
		return
	}
	answered(w, d.take(answer{option: req.Option}))
}

// apiProposal applies or denies a write proposal: {"id", "action": "apply"
// or "deny", "content", "edited"}. Unedited, the agent's proposal is
// written byte for byte; edited, the content (whose line ends a text area
// turned into "\n") gets the proposal's "\r\n" back if it had them.
func (s *Server) apiProposal(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID      string `json:"id"`
		Action  string `json:"action"`
		Content string `json:"content"`
		Edited  bool   `json:"edited"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	d := s.pending(w, req.ID, "proposal")
	if d == nil {
		return
	}
	switch req.Action {
	case "deny":
		answered(w, d.take(answer{deny: true}))
	case "apply":
		content := d.prop.Proposed
		if req.Edited {
			content = req.Content
			if strings.Contains(d.prop.Proposed, "\r\n") {
				content = strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\n", "\r\n")
			}
		}
		answered(w, d.take(answer{content: content}))
	default:
		http.Error(w, `action: want "apply" or "deny"`, http.StatusBadRequest)
	}
}

// apiElicitation answers an elicitation: {"id", "action": "accept",
// "decline" or "cancel", "content": {field: value}}. Accepted content that
// does not fit the form is refused (400) and the dialog stays open.
func (s *Server) apiElicitation(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID      string                     `json:"id"`
		Action  acp.ElicitationAction      `json:"action"`
		Content map[string]json.RawMessage `json:"content"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	d := s.pending(w, req.ID, "elicitation")
	if d == nil {
		return
	}
	a := acphost.ElicitationAnswer{Action: req.Action}
	switch req.Action {
	case acp.ElicitDecline, acp.ElicitCancel:
	case acp.ElicitAccept:
		if f := d.elic.Form; f != nil {
			content, err := formContent(f, req.Content)
			if err == nil {
				_, err = f.Validate(content)
			}
			if err != nil {
				fieldError(w, f, err)
				return
			}
			a.Content = content
		}
	default:
		http.Error(w, `action: want "accept", "decline" or "cancel"`, http.StatusBadRequest)
		return
	}
	answered(w, d.take(answer{elicit: a}))
}

// formContent types the page's values by the form's fields.
// fieldError answers 400 for content that does not fit the form: JSON
// naming the field, why and its range, for the page to show beside it.
func fieldError(w http.ResponseWriter, f *acp.FormSchema, err error) {
	msg := fieldErrorMsg{Error: safe(err.Error()), Message: safe(err.Error())}
	var fe *acp.FormContentError
	if errors.As(err, &fe) {
		msg.Field, msg.Message = fe.Field, safe(fe.Msg)
		if fl := f.Field(fe.Field); fl != nil {
			msg.Range = fieldRange(fl)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(encode(msg))
}

// fieldErrorMsg is api/elicitation's refusal of content.
type fieldErrorMsg struct {
	Error   string `json:"error"`
	Field   string `json:"field,omitempty"` // raw: the field's name, as the page sent it
	Message string `json:"message"`
	Range   string `json:"range,omitempty"`
}

func formContent(f *acp.FormSchema, raw map[string]json.RawMessage) (map[string]any, error) {
	out := map[string]any{}
	for name, v := range raw {
		fl := f.Field(name)
		if fl == nil {
			return nil, fmt.Errorf("%s: no such field", name)
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		var err error
		switch fl.Kind {
		case acp.FormNumber, acp.FormInteger:
			var n json.Number
			if err = dec.Decode(&n); err == nil {
				if fl.Kind == acp.FormInteger {
					var i int64
					i, err = n.Int64()
					out[name] = i
				} else {
					var x float64
					x, err = n.Float64()
					out[name] = x
				}
			}
		case acp.FormBoolean:
			var b bool
			err = dec.Decode(&b)
			out[name] = b
		case acp.FormMultiSelect:
			var l []string
			err = dec.Decode(&l)
			out[name] = l
		default:
			var str string
			err = dec.Decode(&str)
			out[name] = str
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
	}
	return out, nil
}

// apiPlanMode turns host plan mode on or off: {"on": true}.
func (s *Server) apiPlanMode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		On bool `json:"on"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	s.c.SetPlanMode(req.On)
	s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "mode", Text: map[bool]string{true: "plan mode on", false: "plan mode off"}[req.On]})
	s.publishState()
	writeJSON(w, map[string]bool{"planMode": req.On})
}

// apiMode asks the agent to switch modes: {"id": "code"}. The state follows
// the agent's confirmation.
func (s *Server) apiMode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	sess := s.session()
	if err := sess.SetMode(r.Context(), req.ID); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if e := sess.Enforcement(); e.PlanMode && e.RestoreMode == req.ID && e.Mode != req.ID {
		// Held by plan mode: no confirmation comes to publish the state.
		s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "mode",
			Text: "plan mode keeps the agent in its mode " + safe(e.Mode) + "; " + safe(req.ID) + " is set once plan mode is off"})
		s.publishState()
	}
	writeJSON(w, map[string]bool{"ok": true})
}

// apiConfig sets a config option: {"id": "model", "value": "fast"} (a bool
// for a boolean option).
func (s *Server) apiConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID    string `json:"id"`
		Value any    `json:"value"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	switch req.Value.(type) {
	case string, bool:
	default:
		http.Error(w, "value: want a string or a bool", http.StatusBadRequest)
		return
	}
	if _, err := s.session().SetConfigOption(r.Context(), req.ID, req.Value); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	s.publishState()
	writeJSON(w, map[string]bool{"ok": true})
}
