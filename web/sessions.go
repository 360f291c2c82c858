package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// errBusy refuses a session switch while a turn runs or another switch is
// under way.
var errBusy = errors.New("a turn is running (or a session opening): stop it or wait")

// openTimeout bounds opening a session from the page: a load replays a
// whole conversation.
const openTimeout = 2 * time.Minute

// replayBuf gathers the transcript a session being loaded replays, shown
// once the load succeeds (a failed load leaves the page as it was).
type replayBuf struct {
	id       string // the session being loaded
	turn     int    // replayed turns are numbered -1, -2, … (live ones from 1)
	lastUser bool   // the last message was the person's
	msgs     []any
}

// add turns one replayed update into a transcript message.
func (rb *replayBuf) add(u acp.Update) {
	if rb.turn == 0 {
		rb.turn = -1
	}
	var m any
	switch u := u.(type) {
	case *acp.MessageChunk:
		text := blockText(u.Content)
		switch u.Kind() {
		case acp.KindUserMessageChunk:
			if !rb.lastUser && len(rb.msgs) > 0 {
				rb.turn-- // a new turn of the history
			}
			rb.lastUser = true
			rb.msgs = append(rb.msgs, msgUser{Type: "user", Turn: rb.turn, Text: text, Replay: true})
			return
		case acp.KindAgentThoughtChunk:
			m = msgDelta{Type: "thought", Turn: rb.turn, Delta: text, Replay: true}
		default:
			m = msgDelta{Type: "text", Turn: rb.turn, Delta: text, Replay: true}
		}
	case *acp.ToolCallUpdate:
		if u.State.ID == "" {
			return
		}
		m = msgTool{Type: "tool", Turn: rb.turn, Tool: viewTool(u.State), Replay: true}
	case *acp.PlanUpdate:
		m = msgPlan{Type: "plan", Turn: rb.turn, Entries: viewPlan(u.Entries), Replay: true}
	default:
		return
	}
	rb.lastUser = false
	rb.msgs = append(rb.msgs, m)
}

// resetMsg starts a tab's transcript: the agent, the current session.
func (s *Server) resetMsg(dropped int) []byte {
	info := s.c.AgentInfo()
	s.mu.Lock()
	sess, wt := s.sess, s.wt
	s.mu.Unlock()
	return encode(msgReset{Type: "reset", Agent: agentMsg{Name: acp.SafeText(info.Name), Version: acp.SafeText(info.Version)},
		Session: viewSession(sess, wt), Dropped: dropped})
}

// setMode asks for Config.Mode on sess, noting a refusal in the transcript.
func (s *Server) setMode(ctx context.Context, sess *acphost.Session, mode string) {
	if mode == "" || sess.Modes().CurrentModeID == mode {
		return
	}
	if err := sess.SetMode(ctx, mode); err != nil {
		s.log.Warn("web: setting the session mode", "mode", mode, "err", err)
		s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "mode", Text: "mode " + safe(mode) + " not set: " + errText(err)})
	}
}

// setOptions sets Config.ConfigOptions on sess, noting in the transcript
// each the agent does not take.
func (s *Server) setOptions(ctx context.Context, sess *acphost.Session) {
	for _, id := range slices.Sorted(maps.Keys(s.cfg.ConfigOptions)) {
		var value any = s.cfg.ConfigOptions[id]
		opts := sess.ConfigOptions()
		i := slices.IndexFunc(opts, func(o acp.ConfigOption) bool { return o.ID == id })
		err := errors.New("the agent offers no such option")
		if i >= 0 {
			err = nil
			if opts[i].Type == "boolean" {
				value, err = onOff(s.cfg.ConfigOptions[id])
			}
			if err == nil {
				_, err = sess.SetConfigOption(ctx, id, value)
			}
		}
		if err != nil {
			s.log.Warn("web: setting a config option", "option", id, "err", err)
			s.hub.transcript(msgNote{Type: "note", Turn: s.turnID(), Kind: "config", Text: "option " + safe(id) + " not set: " + errText(err)})
		}
	}
}

// onOff reads a boolean option's value: true/on/yes/1 or false/off/no/0.
func onOff(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "on", "yes", "y", "1":
		return true, nil
	case "false", "off", "no", "n", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not on or off", v)
}

// recorded is Config.Sessions' record of id, the most recently used one.
func (s *Server) recorded(id string) (SessionRecord, bool) {
	if s.cfg.Sessions == nil || id == "" {
		return SessionRecord{}, false
	}
	recs, err := s.cfg.Sessions.List() // most recently used first
	if err != nil {
		return SessionRecord{}, false
	}
	i := slices.IndexFunc(recs, func(r SessionRecord) bool { return r.ID == id })
	if i < 0 {
		return SessionRecord{}, false
	}
	return recs[i], true
}

// record writes sess's record to Config.Sessions: it is in use now, in
// worktree wt (nil: none).
func (s *Server) record(sess *acphost.Session, wt *Worktree) {
	st := s.cfg.Sessions
	if st == nil {
		return
	}
	r := SessionRecord{ID: sess.ID(), Cwd: s.cfg.Agent.Dir, Title: sess.Details().Title, Mode: sess.Enforcement().OwnMode(), LastUsed: time.Now()}
	if wt != nil {
		w := *wt
		r.Cwd, r.Worktree = w.Dir, &w
	}
	if r.ID == "" {
		return
	}
	if err := st.Put(r); err != nil {
		s.log.Warn("web: recording the session", "session", r.ID, "err", err)
	}
}

// capabilities reads which ways of continuing a session the agent offers.
func (s *Server) capabilities() (load, resume bool) {
	var caps struct {
		LoadSession         bool `json:"loadSession"`
		SessionCapabilities struct {
			Resume json.RawMessage `json:"resume"`
		} `json:"sessionCapabilities"`
	}
	if json.Unmarshal(s.c.AgentCapabilities(), &caps) != nil {
		return false, false
	}
	r := caps.SessionCapabilities.Resume
	return caps.LoadSession, len(r) > 0 && string(r) != "null"
}

// NewSession opens a new session on the agent and makes it the one the
// page prompts; the transcript starts again on every tab. It fails while
// a turn runs.
func (s *Server) NewSession(ctx context.Context) error {
	_, err := s.open(ctx, "", nil)
	return err
}

// NewWorktreeSession opens a new session, as NewSession does, in a new
// worktree that Config.Worktree makes, named name ("": the hook picks
// one). It fails without Config.Worktree, when Make fails, and while a
// turn runs; a worktree the agent would not open a session in is
// discarded (WorktreeHooks.Discard).
func (s *Server) NewWorktreeSession(ctx context.Context, name string) error {
	if s.cfg.Worktree == nil || s.cfg.Worktree.Make == nil {
		return errNoWorktrees
	}
	if len(name) > MaxWorktreeName {
		return fmt.Errorf("web: a worktree name of %d bytes (at most %d)", len(name), MaxWorktreeName)
	}
	_, err := s.open(ctx, "", &name)
	return err
}

// errNoWorktrees refuses a worktree without Config.Worktree.
var errNoWorktrees = errors.New("web: this server offers no worktrees")

// ResumeSession continues a stored session of the agent, by id, and makes
// it the one the page prompts: through session/load when the agent offers
// it (the replayed history is shown dimmed), else session/resume. The
// client's first session, which stays open when the page leaves it, is
// taken back as it is, not opened a second time: the transcript the page
// kept of it is shown dimmed. The current session stays as it is.
// Config.Mode, else the mode recorded in Config.Sessions, is asked for
// afterwards. It fails while a turn runs.
func (s *Server) ResumeSession(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("web: no session id")
	}
	_, err := s.open(ctx, id, nil)
	return err
}

// open opens a new session (id "") or continues one, and switches to it;
// with worktree set, the new session runs in a worktree of that name
// (Config.Worktree). It returns how, for the transcript's note.
func (s *Server) open(ctx context.Context, id string, worktree *string) (string, error) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return "", acphost.ErrClosed
	case s.turn != nil || s.switching:
		s.mu.Unlock()
		return "", errBusy
	}
	s.switching = true
	rb := &replayBuf{id: id}
	if id != "" {
		s.replay = rb
	}
	s.mu.Unlock()
	s.publishState()
	defer func() {
		s.mu.Lock()
		s.switching, s.replay = false, nil
		s.mu.Unlock()
		s.publishState()
	}()

	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel) // Close ends the open
	defer stop()
	opts := acphost.SessionOptions{Dir: s.cfg.Agent.Dir}
	var sess *acphost.Session
	var wt *Worktree // the worktree the session runs in
	var err error
	how := "new session"
	mode := s.cfg.Mode
	def := s.c.Session()
	if id != "" {
		if r, ok := s.recorded(id); ok {
			if mode == "" {
				mode = r.Mode
			}
			if r.Worktree != nil && id != def.ID() && id != s.session().ID() {
				w := *r.Worktree
				if err := s.worktreeUsable(w); err != nil {
					return "", err
				}
				wt, opts.Dir = &w, w.Dir
			}
		}
	}
	switch {
	case id == "" && worktree != nil:
		w, err := s.cfg.Worktree.Make(ctx, *worktree)
		if err != nil {
			return "", fmt.Errorf("worktree: %w", err)
		}
		if err := s.worktreeUsable(w); err != nil {
			s.discard(ctx, w)
			return "", err
		}
		opts.Dir = w.Dir
		if sess, err = s.c.NewSession(ctx, opts); err != nil {
			s.discard(ctx, w)
			return "", err
		}
		wt = &w
		how = "new session in worktree " + safe(w.Path) + " on branch " + safe(w.Branch)
	case id == "":
		sess, err = s.c.NewSession(ctx, opts)
	case id == s.session().ID():
		return "session " + safe(id) + " is the current one", nil
	case id == def.ID():
		// The client's first session never closes: back to it, without a
		// second handle on the same id (and without the agent replaying
		// what the page kept).
		sess = def
		how = "back to session " + safe(id) + ": still open, its transcript as this page kept it is shown dimmed above"
	default:
		how = "session " + safe(id) + " loaded: its history is shown dimmed above"
		sess, err = s.c.LoadSession(ctx, id, opts)
		if errors.Is(err, acphost.ErrUnsupported) {
			how = "session " + safe(id) + " resumed (the agent does not replay its history)"
			sess, err = s.c.ResumeSession(ctx, id, opts)
			if errors.Is(err, acphost.ErrUnsupported) {
				err = errors.New("the agent offers neither session/load nor session/resume")
			}
		}
	}
	if err != nil {
		return "", err
	}
	var kept [][]byte
	dropped := 0
	s.mu.Lock()
	old := s.sess
	s.sess, s.wt = sess, wt
	msgs := rb.msgs
	s.replay = nil
	if sess == def {
		kept, dropped, s.left, s.leftDropped = s.left, s.leftDropped, nil, 0
	}
	s.mu.Unlock()
	if old == def && sess != def {
		// Kept for coming back to it (the page's transcript of it), as
		// history.
		log, n := s.hub.snapshot()
		for i, b := range log {
			log[i] = markReplay(b)
		}
		s.mu.Lock()
		s.left, s.leftDropped = log, n
		s.mu.Unlock()
	}
	if old != def && old != sess {
		if err := old.Close(ctx); err != nil {
			s.log.Warn("web: closing the session left", "session", old.ID(), "err", err)
		}
	}
	msgs = append(msgs, msgNote{Type: "note", Turn: s.turnID(), Kind: "session", Text: how})
	s.hub.restart(s.resetMsg(dropped), dropped, kept, msgs)
	s.setMode(ctx, sess, mode)
	s.setOptions(ctx, sess)
	if id != "" || wt != nil {
		s.record(sess, wt) // a worktree's session at once: the worktree is not forgotten
	}
	return how, nil
}

// worktreeUsable checks that a session can run in w: its directory is
// absolute, it exists (a worktree removed since is not opened), and with
// the file service it is beneath one of the service's roots.
func (s *Server) worktreeUsable(w Worktree) error {
	if !filepath.IsAbs(w.Dir) {
		return fmt.Errorf("worktree: its directory %q is not absolute", safe(w.Dir))
	}
	if fi, err := os.Stat(w.Dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("the worktree %s is gone", safe(w.Dir))
	}
	fsOpts := s.cfg.Agent.FS
	if fsOpts == nil {
		return nil
	}
	for _, root := range append([]string{s.cfg.Agent.Dir}, fsOpts.AdditionalDirs...) {
		if rel, err := filepath.Rel(root, w.Dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("the worktree %s is outside the directories the host's file service serves (%s): it would refuse every read and write there",
		safe(w.Dir), safe(s.cfg.Agent.Dir))
}

// discard hands a worktree no session runs in to WorktreeHooks.Discard.
func (s *Server) discard(ctx context.Context, w Worktree) {
	if h := s.cfg.Worktree; h != nil && h.Discard != nil {
		h.Discard(context.WithoutCancel(ctx), w)
	}
}

// markReplay marks a kept transcript message as history: shown dimmed.
func markReplay(b []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return b
	}
	m["replay"] = json.RawMessage("true")
	return encode(m)
}

// apiSessions lists the recorded sessions: {"current", "sessions": [{id,
// title, cwd, mode, lastUsed, current}], "recording", "canLoad",
// "canResume"}.
func (s *Server) apiSessions(w http.ResponseWriter, r *http.Request) {
	type item struct {
		ID       string    `json:"id"`    // raw: posted back to resume it
		Label    string    `json:"label"` // the id, safe to show
		Title    string    `json:"title,omitempty"`
		Cwd      string    `json:"cwd,omitempty"`
		Mode     string    `json:"mode,omitempty"`
		Branch   string    `json:"branch,omitempty"` // its worktree's
		LastUsed time.Time `json:"lastUsed"`
		Current  bool      `json:"current"`
	}
	load, resume := s.capabilities()
	cur := s.session().ID()
	out := struct {
		Current   string `json:"current"`
		Sessions  []item `json:"sessions"`
		Recording bool   `json:"recording"`
		CanLoad   bool   `json:"canLoad"`
		CanResume bool   `json:"canResume"`
		Error     string `json:"error,omitempty"`
	}{Current: safe(cur), Sessions: []item{}, Recording: s.cfg.Sessions != nil, CanLoad: load, CanResume: resume}
	if st := s.cfg.Sessions; st != nil {
		recs, err := st.List()
		if err != nil {
			out.Error = errText(err)
		}
		for _, rec := range recs {
			it := item{ID: rec.ID, Label: safe(rec.ID), Title: safe(rec.Title), Cwd: safe(rec.Cwd), Mode: safe(rec.Mode),
				LastUsed: rec.LastUsed, Current: rec.ID == cur}
			if rec.Worktree != nil {
				it.Branch = safe(rec.Worktree.Branch)
			}
			out.Sessions = append(out.Sessions, it)
		}
	}
	writeJSON(w, out)
}

// sessionError answers a failed open: 409 while busy, 400 for a worktree
// the server does not offer, else 502 (the agent, or the worktree's
// hook, refused).
func sessionError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBusy) {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	if errors.Is(err, errNoWorktrees) {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Error(w, errText(err), http.StatusBadGateway)
}

// apiNewSession opens a new session: {}, or {"worktree": true, "name":
// "..."} for one in a new worktree (Config.Worktree; name optional).
func (s *Server) apiNewSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Worktree bool   `json:"worktree"`
		Name     string `json:"name"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	var err error
	if req.Worktree {
		err = s.NewWorktreeSession(r.Context(), strings.TrimSpace(req.Name))
	} else {
		err = s.NewSession(r.Context())
	}
	if err != nil {
		sessionError(w, err)
		return
	}
	writeJSON(w, map[string]string{"session": safe(s.session().ID())})
}

// apiResume continues a recorded session: {"id": "..."}; an id the store
// does not hold is refused (404).
func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	if _, known := s.recorded(req.ID); !known {
		http.Error(w, "no such recorded session", http.StatusNotFound)
		return
	}
	if err := s.ResumeSession(r.Context(), req.ID); err != nil {
		sessionError(w, err)
		return
	}
	writeJSON(w, map[string]string{"session": safe(s.session().ID())})
}
