package render

import (
	"io"
	"strings"
	"sync"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
)

// QuietSink is --quiet: each turn's final answer on stdout and nothing
// else. The final answer is the agent's last message: text after the last
// tool call, or after a message id change (a new message) the last run.
type QuietSink struct {
	w io.Writer

	mu    sync.Mutex
	text  strings.Builder
	msgID string
	fresh bool // a tool call came: the next text starts a new answer
}

func NewQuietSink(w io.Writer) *QuietSink { return &QuietSink{w: w} }

func (q *QuietSink) BeginTurn(string, bool) {
	q.mu.Lock()
	q.text.Reset()
	q.msgID, q.fresh = "", false
	q.mu.Unlock()
}

func (q *QuietSink) Event(ev acphost.StreamEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch ev.Type {
	case acphost.EventText:
		if mc, ok := ev.Update.(*acp.MessageChunk); ok && mc.MessageID != "" {
			if q.msgID != "" && mc.MessageID != q.msgID {
				q.fresh = true
			}
			q.msgID = mc.MessageID
		}
		if q.fresh {
			q.text.Reset()
			q.fresh = false
		}
		q.text.WriteString(ev.Delta)
	case acphost.EventToolCall:
		q.fresh = true
	}
}

func (q *QuietSink) EndTurn(TurnResult) {
	q.mu.Lock()
	text := strings.TrimSpace(acp.SafeText(q.text.String()))
	q.text.Reset()
	q.mu.Unlock()
	if text != "" {
		io.WriteString(q.w, text+"\n")
	}
}

func (q *QuietSink) ElicitationComplete(acp.ElicitationComplete) {}
