package acphost

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// known()/refuseForeign check the session of an fs or terminal request
// with sessionIDIn (the first "sessionId" key, exact case), but the handler
// decodes the params with encoding/json (the last key, matched without
// regard to case). An agent names its own session first and any other
// second: the check passes and the hook sees the other session's id, the
// impersonation issue 13 §4 forbids (in a Pool, another process's session).
func TestAttackForeignSessionViaDuplicateKey(t *testing.T) {
	for name, params := range map[string]string{
		"duplicate key": `{"sessionId":"s1","sessionId":"victim","path":%q}`,
		"folded key":    `{"sessionId":"s1","SessionID":"victim","path":%q}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "f.txt")
			require.NoError(t, os.WriteFile(file, []byte("x\n"), 0o644))
			seen := make(chan string, 1)
			_, h := connectHostile(t, ACPOptions{Dir: dir, FS: &FSOptions{Read: true,
				OnReadFile: func(_ context.Context, sid, _ string) (string, bool, error) {
					seen <- sid
					return "", false, nil
				}}})
			h.send([]byte(`{"jsonrpc":"2.0","id":77,"method":"fs/read_text_file","params":` + sprintf(params, file) + "}\n"))
			answer := <-h.answers
			require.Contains(t, string(answer), `unknown session`, "the session the handler would serve is the one checked")
			select {
			case sid := <-seen:
				t.Fatalf("OnReadFile was told the request came from %q", sid)
			default:
			}
		})
	}
}

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// A failed LoadSession leaves the record agent.open made for the id in
// agent.sessions (only its pub is restored): the connection now "knows" a
// session it never opened, and the agent's updates for it reach the
// client's OnUpdate as that session instead of being counted foreign.
func TestAttackFailedLoadLeavesSessionKnown(t *testing.T) {
	got := make(chan acp.Update, 4)
	c, h := connectHostile(t, ACPOptions{OnUpdate: func(u acp.Update) { got <- u }}, "session/load")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	loadErr := make(chan error, 1)
	go func() {
		_, err := c.LoadSession(ctx, "other-tenant", SessionOptions{})
		loadErr <- err
	}()
	call := <-h.calls
	h.send([]byte(`{"jsonrpc":"2.0","id":` + string(call.ID) + `,"error":{"code":-32002,"message":"no such session"}}` + "\n"))
	require.Error(t, <-loadErr)
	h.update("other-tenant", textChunk("spoof"))
	h.update("s1", textChunk("marker"))
	u := <-got
	require.Equal(t, "s1", u.SessionID(), "an update for a session whose load failed reached OnUpdate")
	require.EqualValues(t, 1, c.Stats().ForeignMessages)
}
