package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/cmd/acphost/internal/agents"
	"github.com/acphost/acphost/cmd/acphost/internal/state"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
	"github.com/acphost/acphost/internal/remote"
)

// needsLogin reports an agent's refusal for want of a login: an
// *acphost.AuthError (a session refused), or ACP's -32000 answering any
// other call (claude-agent-acp opens the session and refuses the prompt).
func needsLogin(err error) bool {
	if errors.Is(err, acphost.ErrAuthRequired) {
		return true
	}
	var rpc *acphost.RPCError
	return errors.As(err, &rpc) && rpc.Code == acp.CodeAuthRequired
}

// loginCommand is the acphost login command line for the agent of cfg:
// its name, or its command, and the remote it runs on.
func loginCommand(cfg config) string {
	words := []string{"acphost", "login"}
	if cfg.remote.ssh != "" {
		words = append(words, "--ssh", remote.Quote(cfg.remote.ssh))
	}
	if cfg.remote.url != "" {
		words = append(words, "--url", remote.Quote(cfg.remote.url))
	}
	switch {
	case cfg.agentName != "":
		words = append(words, "--agent", remote.Quote(cfg.agentName))
	case len(cfg.agent) > 0:
		words = append(words, "--")
		for _, w := range cfg.agent {
			words = append(words, remote.Quote(w))
		}
	}
	return acp.SafeText(strings.Join(words, " "))
}

// reportNeedsLogin says, in one line, that the agent wants a login and
// what to run (on o), and remembers the refusal for acphost login (see
// authRefusal).
func reportNeedsLogin(cfg config, o *output, err error) {
	var rpc *acphost.RPCError
	said := "authentication required"
	if errors.As(err, &rpc) && strings.TrimSpace(rpc.Message) != "" {
		said = tty.OneLine(acp.SafeText(rpc.Message), 80)
	}
	o.diag(tty.StyleRed, "the agent needs a login (it said: %s): run %s", said, loginCommand(cfg))
	if hint := cfg.loginHint(); hint != "" {
		o.note(tty.StyleDim, hint)
	}
	cfg.markAuthRefused(true)
}

// authMarkPath is the file that says the agent of cfg refused a prompt
// for want of a login: under the state directory, by the agent's history
// key ("" without a state directory).
func (cfg config) authMarkPath() string {
	dir, err := state.Dir()
	if err != nil {
		return ""
	}
	key := agentHistoryKey(cfg.agentName, cfg.agent)
	if cfg.remote.remote() {
		key += "-" + state.SafeFileName(cfg.remote.ssh+cfg.remote.url)
	}
	return filepath.Join(dir, "auth", key)
}

// markAuthRefused records (refused) or forgets (a prompt went through, a
// login succeeded) that the agent refused a prompt for want of a login.
// It is best effort: the mark only makes acphost login tell the truth.
func (cfg config) markAuthRefused(refused bool) {
	path := cfg.authMarkPath()
	if path == "" {
		return
	}
	if !refused {
		_ = os.Remove(path)
		return
	}
	if err := state.PrivateDir(filepath.Dir(path)); err != nil {
		return
	}
	_ = os.WriteFile(path, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o600)
}

// authRefusal is when the agent last refused a prompt for want of a
// login, zero when it has not since its last good prompt.
func (cfg config) authRefusal() time.Time {
	path := cfg.authMarkPath()
	if path == "" {
		return time.Time{}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339, strings.TrimSpace(string(b)))
	if t.IsZero() {
		t = time.Unix(0, 0)
	}
	return t
}

// loginHint is how the agent of cfg logs in beyond what it offers through
// ACP, from its profile's authHint ("" when none is known, and for a
// remote agent, whose login is its host's).
func (cfg config) loginHint() string {
	if cfg.remote.remote() {
		return ""
	}
	if p := agents.ProfileFor(cfg.agentName, cfg.agent); p != nil && p.AuthHint != "" {
		return "how it logs in: " + p.AuthHint
	}
	return ""
}
