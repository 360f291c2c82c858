package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf8"
)

// DefaultMaxTabBytes is what one tab may have queued, not yet written to
// it, when Config.MaxTabBytes is zero.
const DefaultMaxTabBytes = 8 << 20

// maxPieceBytes is the most one transcript message takes: a longer text is
// sent (and kept) in pieces of about this size.
const maxPieceBytes = 256 << 10

// hub fans messages out to the connected tabs and keeps what a tab that
// connects later needs: the transcript (bounded by maxBytes, oldest first
// out, no message larger than the bound kept), the latest state and the
// pending dialogs. Everything happens under
// mu, so a tab sees each message once, in order, after its replay.
type hub struct {
	maxBytes int
	maxTab   int // bytes queued for one tab beyond which it is cut off

	mu       sync.Mutex
	log      [][]byte
	logBytes int
	dropped  int // transcript messages dropped from the front of log
	state    []byte
	dialogs  []*dialog // pending, in the order they opened
	subs     map[*subscriber]struct{}
	closed   bool
}

// subscriber is one connected tab: what is queued for it, bounded in
// bytes. Its messages are the hub's own (shared with the transcript and
// the other tabs); what a tab pins beyond the transcript is its queue.
type subscriber struct {
	wake chan struct{} // buffered 1: something was queued
	done chan struct{} // closed when the hub cuts the tab off or closes

	mu     sync.Mutex // under hub.mu when both are held
	queue  [][]byte
	queued int // bytes in queue, and in the message being written
}

// next takes the oldest message queued, or nil. The tab's writer calls
// written once the message is out, which frees its bytes of the budget.
func (s *subscriber) next() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return nil
	}
	b := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	return b
}

func (s *subscriber) written(b []byte) {
	s.mu.Lock()
	s.queued -= len(b)
	s.mu.Unlock()
}

// push queues b, false if the budget would be exceeded: a tab with nothing
// queued takes any one message (a message is at most a piece, or one
// tool call the transcript would not keep).
func (s *subscriber) push(b []byte, budget int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued > 0 && s.queued+len(b) > budget {
		return false
	}
	s.queue = append(s.queue, b)
	s.queued += len(b)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// cutLocked ends the tab's stream and releases its queue; hub.mu is held.
func (h *hub) cutLocked(s *subscriber) {
	delete(h.subs, s)
	close(s.done)
	s.mu.Lock()
	clear(s.queue)
	s.queue, s.queued = nil, 0
	s.mu.Unlock()
}

func newHub(maxBytes, maxTab int) *hub {
	return &hub{maxBytes: maxBytes, maxTab: maxTab, subs: map[*subscriber]struct{}{}}
}

// encode marshals a message; every message type is this package's own, so
// it cannot fail. '<', '>' and '&' stay as they are (the page inserts text
// with textContent): HTML escaping would make them six bytes each.
func encode(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("web: " + err.Error())
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// transcript appends a transcript message and sends it to every tab.
func (h *hub) transcript(v any) {
	live, kept := h.fit(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for _, b := range kept {
		h.appendLocked(b)
	}
	for _, b := range live {
		h.sendLocked(b)
	}
}

// fit encodes a transcript message: what the tabs get now, and what is
// kept for later ones. A text (the agent's, the person's) too long for one
// piece is cut into several, each sent and kept; another message longer
// than maxBytes is sent whole and kept as a note that it is not.
func (h *hub) fit(v any) (live, kept [][]byte) {
	b := encode(v)
	max := min(h.maxBytes, maxPieceBytes)
	if len(b) <= max {
		return [][]byte{b}, [][]byte{b}
	}
	var pieces [][]byte
	switch m := v.(type) {
	case msgDelta:
		pieces = cut(m.Delta, max, func(t string) any { m.Delta = t; return m })
	case msgUser:
		pieces = cut(m.Text, max, func(t string) any { m.Text = t; return m })
	default:
		if len(b) <= h.maxBytes {
			return [][]byte{b}, [][]byte{b}
		}
		var head struct {
			Type string `json:"type"`
			Turn int    `json:"turn"`
		}
		json.Unmarshal(b, &head)
		note := encode(msgNote{Type: "note", Turn: head.Turn, Kind: "dropped",
			Text: fmt.Sprintf("a %s message of %d bytes was shown here, too large to keep for tabs opened later", head.Type, len(b))})
		return [][]byte{b}, [][]byte{note}
	}
	return pieces, pieces
}

// cut encodes the message with(piece) for each piece of text, the pieces
// cut so that each message takes at most max bytes.
func cut(text string, max int, with func(string) any) [][]byte {
	var pieces [][]byte
	for _, t := range splitText(text, max-len(encode(with("")))) {
		pieces = append(pieces, encode(with(t)))
	}
	return pieces
}

// splitText cuts s, at rune boundaries, into pieces whose JSON encoding
// (quotes aside) takes at most n bytes each.
func splitText(s string, n int) []string {
	n = max(n, 6) // one rune, however escaped
	var out []string
	start, size := 0, 0
	for i, r := range s {
		w := jsonRuneLen(r)
		if size+w > n && i > start {
			out = append(out, s[start:i])
			start, size = i, 0
		}
		size += w
	}
	return append(out, s[start:])
}

// jsonRuneLen is the most bytes r takes in a JSON string (encoding/json,
// without HTML escaping).
func jsonRuneLen(r rune) int {
	switch {
	case r == '"' || r == '\\':
		return 2
	case r < 0x20 || r == utf8.RuneError || r == '\u2028' || r == '\u2029':
		return 6
	default:
		return utf8.RuneLen(r)
	}
}

// appendLocked keeps b in the transcript, dropping the oldest messages
// beyond maxBytes. A message larger than maxBytes on its own (only with a
// tiny bound: fit cuts texts and notes the rest) is not kept, nor is
// anything before it.
func (h *hub) appendLocked(b []byte) {
	if len(b) > h.maxBytes {
		h.dropped += len(h.log) + 1
		clear(h.log)
		h.log, h.logBytes = nil, 0
		return
	}
	h.log = append(h.log, b)
	h.logBytes += len(b)
	for h.logBytes > h.maxBytes && len(h.log) > 0 {
		h.logBytes -= len(h.log[0])
		h.log[0] = nil
		h.log = h.log[1:]
		h.dropped++
	}
}

// restart starts the transcript again (another session): every tab gets
// reset, then kept (messages already fitted, from a snapshot) and msgs;
// they become the transcript kept, with dropped messages before them.
func (h *hub) restart(reset []byte, dropped int, kept [][]byte, msgs []any) {
	live := append([][]byte(nil), kept...)
	kept = append([][]byte(nil), kept...)
	for _, v := range msgs {
		l, k := h.fit(v)
		live = append(live, l...)
		kept = append(kept, k...)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	clear(h.log)
	h.log, h.logBytes, h.dropped = nil, 0, dropped
	for _, b := range kept {
		h.appendLocked(b)
	}
	h.sendLocked(reset)
	for _, b := range live {
		h.sendLocked(b)
	}
}

// snapshot returns the transcript kept and how many messages were dropped
// before it.
func (h *hub) snapshot() ([][]byte, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]byte(nil), h.log...), h.dropped
}

// setState replaces the state and sends it to every tab.
func (h *hub) setState(v any) {
	b := encode(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.state = b
	h.sendLocked(b)
}

// open adds a pending dialog and shows it on every tab.
func (h *hub) open(d *dialog) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dialogs = append(h.dialogs, d)
	h.sendLocked(d.msg)
}

// find returns the pending dialog with this id, or nil.
func (h *hub) find(id string) *dialog {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.dialogs {
		if d.id == id {
			return d
		}
	}
	return nil
}

// close removes a dialog and tells every tab why it closed.
func (h *hub) close(d *dialog, how string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, o := range h.dialogs {
		if o == d {
			h.dialogs = append(h.dialogs[:i], h.dialogs[i+1:]...)
			break
		}
	}
	h.sendLocked(encode(msgDialogClose{Type: "dialog_close", ID: d.id, How: how}))
}

// sendLocked queues b for every tab; a tab that has fallen more than its
// budget behind is cut off (it comes back to the replay, as a reconnecting
// tab does).
func (h *hub) sendLocked(b []byte) {
	for s := range h.subs {
		if !s.push(b, h.maxTab) {
			h.cutLocked(s)
		}
	}
}

// subscribe registers a tab and returns what it must be sent first: a reset,
// the transcript kept, the state and the pending dialogs. nil when closed.
func (h *hub) subscribe(reset func(dropped int) []byte) (*subscriber, [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, nil
	}
	first := make([][]byte, 0, len(h.log)+len(h.dialogs)+2)
	first = append(first, reset(h.dropped))
	first = append(first, h.log...)
	if h.state != nil {
		first = append(first, h.state)
	}
	for _, d := range h.dialogs {
		first = append(first, d.msg)
	}
	s := &subscriber{wake: make(chan struct{}, 1), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, first
}

// unsubscribe forgets a tab that went away.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		h.cutLocked(s)
	}
}

// shutdown ends every tab's stream; nothing is sent after it.
func (h *hub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		h.cutLocked(s)
	}
}
