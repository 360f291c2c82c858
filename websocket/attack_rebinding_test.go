//go:build unix

package websocket

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/fakeagent"
)

// TestRebindingNeverReachesTheBridge: a bridge allowed to serve
// without a token (AllowNoToken) serves any loopback connection. A page
// of evil.example whose name an attacker rebinds to 127.0.0.1 opens a
// WebSocket: the browser sends Host and Origin both "evil.example:PORT",
// which originAllowed takes for the bridge's own page. Nothing checks the
// Host, so the page gets an agent process to drive (prompts, permission
// answers, fs writes it serves itself).
func TestRebindingNeverReachesTheBridge(t *testing.T) {
	t.Parallel()
	s := serveFake(t, fakeagent.Script{}, func(b *Bridge) { b.Token, b.AllowNoToken = "", true })
	_, port, _ := net.SplitHostPort(s.addr)
	host := "evil.example:" + port
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	require.NoError(t, err)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /acp HTTP/1.1\r\nHost: %s\r\nOrigin: http://%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", host, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusSwitchingProtocols, resp.StatusCode,
		"a rebound page (Host and Origin %q) was upgraded by a tokenless bridge", host)
}

func TestABridgeWithoutATokenRefusesEveryone(t *testing.T) {
	t.Parallel()
	b := &Bridge{Command: "true"}
	defer b.Close()
	r, err := http.NewRequest("GET", "http://127.0.0.1/acp", nil)
	require.NoError(t, err)
	w := &statusRecorder{header: http.Header{}}
	b.ServeHTTP(w, r)
	require.Equal(t, http.StatusUnauthorized, w.status, "no token to check: refused, loopback or not")

	r.Host = "evil.example"
	b.Token = testToken
	r.Header.Set("Authorization", "Bearer "+testToken)
	w = &statusRecorder{header: http.Header{}}
	b.ServeHTTP(w, r)
	require.Equal(t, http.StatusForbidden, w.status, "a Host that is no IP, localhost or listed name is refused, token or not")
}

type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(p []byte) (int, error) { return len(p), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.status = code }
