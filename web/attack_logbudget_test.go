package web_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acphost/acphost/fakeagent"
	"github.com/acphost/acphost/web"
	"github.com/stretchr/testify/require"
)

// TestAttackMaxLogBytesNotABound: MaxLogBytes is meant to bound the
// transcript kept for later tabs, but the trimming loop always keeps the
// newest message however big, and json.Marshal's HTML escaping turns each
// '<' of agent text into six bytes (\u003c). One 4 MiB text chunk of '<'
// under MaxLogBytes = 1 MiB is kept as 24 MiB, and replayed to every tab
// that connects until the next transcript message pushes it out (here the
// turn goes on: the agent waits).
func TestAttackMaxLogBytesNotABound(t *testing.T) {
	t.Parallel()
	const maxLog = 1 << 20
	script := fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(fakeagent.Text(strings.Repeat("<", 4<<20))),
		{WaitCancel: true},
	}}}}
	r := newRig(t, script, func(c *web.Config) { c.MaxLogBytes = maxLog })
	tb := r.tab()
	r.post("/api/prompt", map[string]string{"text": "go"}, http.StatusOK)
	// 4 MiB through the hub's escaping: 12–27 s under -race on 2 busy
	// cores, where the other messages take milliseconds.
	tb.nextWithin("the text", 2*time.Minute, ofType("text"))

	// A tab that connects now: count the replay up to the state.
	resp := r.request(http.MethodGet, "/events", "", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	br := bufio.NewReaderSize(resp.Body, 1<<16)
	replay := 0
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		replay += len(line)
		if strings.HasPrefix(line, `data: {"type":"state"`) {
			break
		}
	}
	if replay > 2*maxLog {
		t.Errorf("MaxLogBytes %d, yet a new tab was replayed %d bytes (%.1fx)", maxLog, replay, float64(replay)/maxLog)
	}
}
