package fakeagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// maxLine is the longest line the agent reads; longer lines are dropped, not fatal.
const maxLine = 256 << 20

var errLineTooLong = errors.New("fakeagent: line too long")

// JSON-RPC and ACP error codes the agent answers with.
const (
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
	codeInternal       = -32603
	codeAuthRequired   = -32000
)

// Message is one message the agent received from the client, as recorded.
type Message struct {
	Method string          `json:"method,omitempty"` // "" for responses
	ID     json.RawMessage `json:"id,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// Raw is the whole line. A line that is not JSON is kept as a JSON string holding it.
	Raw json.RawMessage `json:"raw"`
}

// outMsg is one message the agent writes.
type outMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// readLine returns the next line without its "\n" or "\r\n". A line longer than max is
// consumed and reported as errLineTooLong. At EOF it returns the unterminated rest and io.EOF.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if tooLong || len(line)+len(chunk) > max {
			tooLong, line = true, nil
		} else {
			line = append(line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong && err == nil {
			return nil, errLineTooLong
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), err
	}
}

// parseMessage decodes one line. ok is false for lines that are not JSON-RPC messages;
// they are still returned for the record.
func parseMessage(line []byte) (m Message, ok bool) {
	var env struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		if json.Valid(line) {
			return Message{Raw: line}, false
		}
		return Message{Raw: mustJSON(string(line))}, false
	}
	m = Message{Method: env.Method, ID: env.ID, Params: env.Params, Result: env.Result, Error: env.Error, Raw: line}
	return m, m.Method != "" || m.ID != nil
}

// encodeLine renders v as one compact JSON line ending in "\n". HTML characters are not
// escaped, so ids and other raw values keep their exact bytes.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// idKey maps a request id to a canonical form, so a response matches its request however
// the client spelled the id.
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return string(id)
	}
	return string(mustJSON(v))
}

// withSession returns params with "sessionId":sid inserted first if params is a JSON
// object without a sessionId; anything else is returned unchanged. Key order is kept.
func withSession(params json.RawMessage, sid string) json.RawMessage {
	return withField(params, "sessionId", mustJSON(sid))
}

// withField returns params with "key":value (encoded JSON) inserted first if params is a
// JSON object without key; anything else is returned unchanged. Key order is kept.
func withField(params json.RawMessage, key string, value json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil || fields == nil {
		return params
	}
	if _, ok := fields[key]; ok {
		return params
	}
	t := bytes.TrimSpace(params)
	inner := bytes.TrimSpace(t[1 : len(t)-1])
	out := append([]byte{'{'}, mustJSON(key)...)
	out = append(append(out, ':'), value...)
	if len(inner) > 0 {
		out = append(append(out, ','), inner...)
	}
	return append(out, '}')
}

// jsonStringBody returns s as the inside of a JSON string literal (escaped, unquoted).
func jsonStringBody(s string) []byte {
	b := mustJSON(s)
	return b[1 : len(b)-1]
}

// readAllLines calls fn for every non-blank line of r until EOF or until fn returns false.
// Lines longer than maxLine are skipped.
func readAllLines(r io.Reader, fn func([]byte) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, maxLine)
		if len(bytes.TrimSpace(line)) > 0 && !fn(line) {
			return nil
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil && err != errLineTooLong:
			return err
		}
	}
}
