package web

import (
	"encoding/json"
	"sync"
)

// subscriberBuffer is how many messages a tab may fall behind before it is
// dropped; its EventSource then reconnects and replays from the start.
const subscriberBuffer = 4096

// hub fans messages out to the connected tabs and keeps what a tab that
// connects later needs: the transcript (bounded by maxBytes, oldest first
// out), the latest state and the pending dialogs. Everything happens under
// mu, so a tab sees each message once, in order, after its replay.
type hub struct {
	maxBytes int

	mu       sync.Mutex
	log      [][]byte
	logBytes int
	dropped  int // transcript messages dropped from the front of log
	state    []byte
	dialogs  []*dialog // pending, in the order they opened
	subs     map[*subscriber]struct{}
	closed   bool
}

// subscriber is one connected tab.
type subscriber struct {
	ch   chan []byte
	done chan struct{} // closed when the hub drops the tab or closes
}

func newHub(maxBytes int) *hub {
	return &hub{maxBytes: maxBytes, subs: map[*subscriber]struct{}{}}
}

// encode marshals a message; every message type is this package's own, so
// it cannot fail.
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("web: " + err.Error())
	}
	return b
}

// transcript appends a transcript message and sends it to every tab.
func (h *hub) transcript(v any) {
	b := encode(v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.appendLocked(b)
	h.sendLocked(b)
}

// appendLocked keeps b in the transcript, dropping the oldest messages
// beyond maxBytes.
func (h *hub) appendLocked(b []byte) {
	h.log = append(h.log, b)
	h.logBytes += len(b)
	for h.logBytes > h.maxBytes && len(h.log) > 1 {
		h.logBytes -= len(h.log[0])
		h.log[0] = nil
		h.log = h.log[1:]
		h.dropped++
	}
}

// restart starts the transcript again (another session): every tab gets
// reset and then msgs, which become the transcript kept.
func (h *hub) restart(reset []byte, msgs [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	clear(h.log)
	h.log, h.logBytes, h.dropped = nil, 0, 0
	h.sendLocked(reset)
	for _, b := range msgs {
		h.appendLocked(b)
		h.sendLocked(b)
	}
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

// sendLocked queues b for every tab; a tab whose queue is full is dropped.
func (h *hub) sendLocked(b []byte) {
	for s := range h.subs {
		select {
		case s.ch <- b:
		default:
			delete(h.subs, s)
			close(s.done)
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
	s := &subscriber{ch: make(chan []byte, subscriberBuffer), done: make(chan struct{})}
	h.subs[s] = struct{}{}
	return s, first
}

// unsubscribe forgets a tab that went away.
func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.done)
	}
}

// shutdown ends every tab's stream; nothing is sent after it.
func (h *hub) shutdown() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.done)
	}
}
