// Package zero is an ACP agent that costs next to nothing per line, for
// measuring a client's own cost per turn (bench/cmd/turncost).
//
// It is one goroutine: it reads a line, and writes what the line calls
// for from bytes built once, one write per message (only the JSON-RPC id
// is appended per message, into a reused buffer). No goroutine hand-off,
// no encoding/json on the turn's path, no buffering: every message
// reaches the client as the real agents send them, one write each.
//
// A session/prompt's text picks the turn, as the flood agent's does
// (see Plan): "n=K" streams K agent_message_chunk updates of 64 bytes and
// answers end_turn; "perm=1" first sends one session/request_permission
// and, once it is answered, one tool_call_update (completed) before the
// chunks. The turn a prompt plays is parsed once per distinct params.
package zero

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/acphost/acphost/bench/clients"
)

// Plan is the turn a prompt plays.
type Plan struct {
	N    int  // chunks
	Perm bool // one permission request first, then a completed tool call update
}

// ParsePlan reads the prompt text's fields: n=K and perm=1.
func ParsePlan(text string) (Plan, error) {
	var p Plan
	for _, f := range strings.Fields(text) {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "n":
			p.N, err = strconv.Atoi(v)
		case "perm":
			p.Perm, err = strconv.ParseBool(v)
		default:
			err = errors.New("zero: unknown field " + f)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

// Session is the id of the one session the agent opens.
const Session = "zero-1"

// The lines it writes, built once; the id goes between a prefix and a
// suffix.
var (
	idPrefix   = []byte(`{"jsonrpc":"2.0","id":`)
	initResult = []byte(`,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false,"promptCapabilities":{}},"authMethods":[],"agentInfo":{"name":"zero","version":"1"}}}` + "\n")
	newResult  = []byte(`,"result":{"sessionId":"` + Session + `"}}` + "\n")
	endTurn    = []byte(`,"result":{"stopReason":"end_turn"}}` + "\n")
	noMethod   = []byte(`,"error":{"code":-32601,"message":"method not found"}}` + "\n")
	badPrompt  = []byte(`,"error":{"code":-32602,"message":"zero: bad prompt"}}` + "\n")
	permTail   = []byte(`,"method":"session/request_permission","params":{"sessionId":"` + Session + `","toolCall":{"toolCallId":"call_1","title":"run ls","kind":"execute","status":"pending","rawInput":{"command":"ls"}},"options":[{"optionId":"allow-once","name":"Allow","kind":"allow_once"},{"optionId":"reject-once","name":"Reject","kind":"reject_once"}]}}` + "\n")
	toolDone   = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + Session + `","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed"}}}` + "\n")
	chunk      = []byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + Session + `","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-_"}}}}` + "\n")
)

type agent struct {
	w     io.Writer
	buf   []byte
	plans map[string]Plan
	next  int64

	// The turn waiting for its permission's answer.
	waitID   []byte // the request's id, as written
	promptID []byte // the prompt's id, as the client wrote it
	plan     Plan
}

// Serve plays the agent over r and w until r ends; it returns nil at EOF.
func Serve(r io.Reader, w io.Writer) error {
	a := &agent{w: w, plans: map[string]Plan{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var env clients.Envelope
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return err // no client line of the bench is that long
		}
		if len(line) > 1 && env.Read(line) {
			if werr := a.handle(&env); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// reply writes the prefix, id and tail in one write.
func (a *agent) reply(id, tail []byte) error {
	a.buf = append(append(append(a.buf[:0], idPrefix...), id...), tail...)
	_, err := a.w.Write(a.buf)
	return err
}

func (a *agent) write(line []byte) error {
	_, err := a.w.Write(line)
	return err
}

func (a *agent) handle(env *clients.Envelope) error {
	switch string(env.Method) {
	case "":
		if a.waitID != nil && string(env.ID) == string(a.waitID) {
			a.waitID = nil
			if err := a.write(toolDone); err != nil {
				return err
			}
			return a.finish(a.promptID, a.plan)
		}
		return nil
	case "initialize":
		return a.reply(env.ID, initResult)
	case "session/new":
		return a.reply(env.ID, newResult)
	case "session/prompt":
		p, ok := a.plans[string(env.Params)]
		if !ok {
			var err error
			if p, err = ParsePlan(promptText(env.Params)); err != nil {
				return a.reply(env.ID, badPrompt)
			}
			a.plans[string(env.Params)] = p
		}
		if p.Perm {
			a.next++
			a.waitID = strconv.AppendInt(a.waitID[:0], a.next, 10)
			a.promptID = append(a.promptID[:0], env.ID...)
			a.plan = p
			return a.reply(a.waitID, permTail)
		}
		return a.finish(env.ID, p)
	case "session/cancel":
		return nil
	}
	if len(env.ID) > 0 && string(env.ID) != "null" {
		return a.reply(env.ID, noMethod)
	}
	return nil
}

// finish streams the plan's chunks and answers the prompt.
func (a *agent) finish(id []byte, p Plan) error {
	for range p.N {
		if err := a.write(chunk); err != nil {
			return err
		}
	}
	return a.reply(id, endTurn)
}

// promptText is the text of a prompt's blocks (set-up only: once per
// distinct params).
func promptText(params []byte) string {
	// The bench's prompts are one text block: take what follows "text":".
	s := string(params)
	const key = `"text":"`
	i := strings.Index(s, key)
	if i < 0 {
		return ""
	}
	s = s[i+len(key):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		s = s[:j]
	}
	return s
}
