package main

import (
	"fmt"
	"sync"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/cmd/acphost/internal/render"
)

// refusalCount counts a run's permission answers, around the sink that
// shows them, so that a run nobody could answer for ends saying that
// everything was refused (see closingRefusals).
type refusalCount struct {
	render.Sink
	mu               sync.Mutex
	allowed, refused int
}

func (c *refusalCount) Event(ev acphost.StreamEvent) {
	if ev.Type == acphost.EventPermissionAnswer && ev.Answer != nil {
		c.mu.Lock()
		if render.Refusal(ev.Answer) == "" {
			c.allowed++
		} else if !ev.Answer.Cancelled {
			c.refused++
		}
		c.mu.Unlock()
	}
	c.Sink.Event(ev)
}

// closingLine is the run's last word when every permission the agent
// asked for was refused and nobody was at a terminal to ask: the exit
// status is 0, yet the agent did nothing it asked to. "" otherwise.
func (c *refusalCount) closingLine(cfg config) string {
	c.mu.Lock()
	allowed, refused := c.allowed, c.refused
	c.mu.Unlock()
	if refused == 0 || allowed > 0 {
		return ""
	}
	return fmt.Sprintf("every permission the agent asked for was refused (%d, --permission %s): it changed and ran nothing it asked to; "+
		"--permission allow, --permission-policy FILE or a terminal to be asked at lets it", refused, cfg.permission)
}
