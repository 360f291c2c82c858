// The client's system prompt (systemPrompt on session/new, load, resume
// and fork), checked as a conforming agent checks it and kept per session.

package fakeagent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// SystemPrompt is the system prompt a session was last opened with.
type SystemPrompt struct {
	Mode string // "append" or "override"
	Text string // the text blocks, joined by blank lines
}

// SystemPrompt returns the system prompt the session sessionID was last
// opened (new, load, resume or fork) with; ok is false when that open
// carried none, or the session is unknown.
func (a *Agent) SystemPrompt(sessionID string) (p SystemPrompt, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok = a.sysPrompts[sessionID]
	return p, ok
}

// systemPromptCaps reads sessionCapabilities.systemPrompt as the script
// advertises it: taken when it is an object; override too when its
// mode.override is one.
func systemPromptCaps(agentCapabilities json.RawMessage) (takes, override bool) {
	var caps struct {
		SessionCapabilities struct {
			SystemPrompt json.RawMessage `json:"systemPrompt"`
		} `json:"sessionCapabilities"`
	}
	_ = json.Unmarshal(agentCapabilities, &caps)
	sp := caps.SessionCapabilities.SystemPrompt
	if !isObjectJSON(sp) {
		return false, false
	}
	var c struct {
		Mode struct {
			Override json.RawMessage `json:"override"`
		} `json:"mode"`
	}
	_ = json.Unmarshal(sp, &c)
	return true, isObjectJSON(c.Mode.Override)
}

func isObjectJSON(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// checkSystemPrompt reads an open's systemPrompt and refuses, with -32602,
// what a conforming agent refuses: one the script does not advertise, a
// mode it does not take, content that is empty or not all non-empty text
// blocks, and any at all when Script.RefuseSystemPrompt is set. ok is
// false when it answered the request; otherwise p is the prompt (has says
// whether there was one).
func (a *Agent) checkSystemPrompt(m Message) (p SystemPrompt, has, ok bool) {
	var params struct {
		SystemPrompt json.RawMessage `json:"systemPrompt"`
	}
	_ = json.Unmarshal(m.Params, &params)
	if !isSet(params.SystemPrompt) {
		return p, false, true
	}
	refuse := func(why string) (SystemPrompt, bool, bool) {
		a.replyError(m.ID, codeInvalidParams, "Invalid params: systemPrompt: "+why)
		return SystemPrompt{}, false, false
	}
	takes, override := systemPromptCaps(a.script.AgentCapabilities)
	if !takes {
		return refuse("not supported")
	}
	if a.script.RefuseSystemPrompt != "" {
		return refuse(a.script.RefuseSystemPrompt)
	}
	var sp struct {
		Mode    string            `json:"mode"`
		Content []json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(params.SystemPrompt, &sp); err != nil {
		return refuse(err.Error())
	}
	switch {
	case sp.Mode == "append":
	case sp.Mode == "override" && override:
	default:
		return refuse("mode " + strconvQuote(sp.Mode) + " is not supported")
	}
	if len(sp.Content) == 0 {
		return refuse("content is empty")
	}
	texts := make([]string, len(sp.Content))
	for i, raw := range sp.Content {
		var b struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &b) != nil || b.Type != "text" || b.Text == "" {
			return refuse("content blocks must be non-empty text")
		}
		texts[i] = b.Text
	}
	return SystemPrompt{Mode: sp.Mode, Text: strings.Join(texts, "\n\n")}, true, true
}

// noteSystemPrompt keeps the prompt a session was opened with (or that it
// had none).
func (a *Agent) noteSystemPrompt(sid string, p SystemPrompt, has bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if has {
		a.sysPrompts[sid] = p
	} else {
		delete(a.sysPrompts, sid)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
