// MCP server lists: the config file's mcpServers and --mcp-config FILE.

package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/acphost/acphost/acp"
)

// MCPList is a list of MCP servers as a config file writes it: an array
// of ACP McpServer objects, or the {"name": {...}} object that Claude
// Code, Cursor and Zed read under "mcpServers" (see mcpEntry).
type MCPList []acp.MCPServer

// UnmarshalJSON reads either form; the names of the object form are
// taken in sorted order, so the list sent is the same every run.
func (l *MCPList) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var servers []acp.MCPServer
		if err := json.Unmarshal(b, &servers); err != nil {
			return err
		}
		*l = servers
		return nil
	}
	var named map[string]json.RawMessage
	if err := json.Unmarshal(b, &named); err != nil {
		return errors.New("want an array of ACP McpServer objects or an object of named servers")
	}
	names := make([]string, 0, len(named))
	for n := range named {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(MCPList, 0, len(names))
	for _, n := range names {
		s, err := parseMCPEntry(n, named[n])
		if err != nil {
			return fmt.Errorf("server %q: %w", n, err)
		}
		out = append(out, s)
	}
	*l = out
	return nil
}

// mcpEntry is one server of the {"mcpServers": {"name": {...}}} format:
// a stdio server with command, args and env (an object), or a remote one
// with type ("http", "streamable-http" or "sse"; without a type, a url
// means http), url and headers (an object).
type mcpEntry struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func parseMCPEntry(name string, raw json.RawMessage) (acp.MCPServer, error) {
	var e mcpEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return acp.MCPServer{}, fmt.Errorf("want an object with a \"command\" (stdio) or a \"url\" (http, sse): %v", err)
	}
	typ := e.Type
	if typ == "" && e.URL != "" {
		typ = "http"
	}
	switch typ {
	case "", "stdio":
		if e.Command == "" || e.URL != "" || len(e.Headers) > 0 {
			return acp.MCPServer{}, errors.New("a stdio server wants a \"command\" (with \"args\", \"env\"), and no \"url\" or \"headers\"")
		}
		return acp.MCPServer{Name: name, Command: e.Command, Args: e.Args, Env: nameValues(e.Env)}, nil
	case "http", "streamable-http", "sse":
		if e.URL == "" || e.Command != "" || len(e.Args) > 0 || len(e.Env) > 0 {
			return acp.MCPServer{}, fmt.Errorf("a %s server wants a \"url\" (with \"headers\"), and no \"command\", \"args\" or \"env\"", typ)
		}
		t := acp.MCPHTTP
		if typ == "sse" {
			t = acp.MCPSSE
		}
		return acp.MCPServer{Name: name, Type: t, URL: e.URL, Headers: nameValues(e.Headers)}, nil
	}
	return acp.MCPServer{}, fmt.Errorf("unknown type %q (want stdio, http or sse)", typ)
}

// nameValues turns an env or headers object into a list, sorted by name.
func nameValues(m map[string]string) []acp.NameValue {
	out := make([]acp.NameValue, 0, len(m))
	for k, v := range m {
		out = append(out, acp.NameValue{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b acp.NameValue) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// ReadMCPConfig reads --mcp-config FILE: {"mcpServers": {...}} (either
// form of MCPList). Other top-level keys (Claude Code's, Cursor's) are
// left alone.
func ReadMCPConfig(path string) (MCPList, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	var file struct {
		MCPServers *MCPList `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &file); err != nil {
		return nil, fmt.Errorf("--mcp-config %s: %v", path, err)
	}
	if file.MCPServers == nil {
		return nil, fmt.Errorf("--mcp-config %s: no \"mcpServers\" object", path)
	}
	if err := checkMCP("mcpServers", *file.MCPServers); err != nil {
		return nil, fmt.Errorf("--mcp-config %s: %w", path, err)
	}
	return *file.MCPServers, nil
}

// checkMCP checks MCP server entries: each with a name, and a command
// (stdio) or a url (http, sse); an entry kept raw is the agent's to judge.
func checkMCP(where string, servers MCPList) error {
	for i, s := range servers {
		switch {
		case s.Name == "":
			return fmt.Errorf("%s[%d]: want an object with a \"name\" (and a \"command\", or a \"type\" and \"url\")", where, i)
		case s.Raw == nil && s.Command == "" && s.URL == "":
			return fmt.Errorf("%s[%d] %q: want a \"command\" (stdio) or a \"url\" (http, sse)", where, i, s.Name)
		}
	}
	return nil
}

// MergeMCP is base with more appended, an entry of more replacing base's
// entry of the same name.
func MergeMCP(base, more MCPList) MCPList {
	out := slices.Clone(base)
	for _, m := range more {
		if i := slices.IndexFunc(out, func(b acp.MCPServer) bool { return b.Name == m.Name }); i >= 0 {
			out[i] = m
			continue
		}
		out = append(out, m)
	}
	return out
}
