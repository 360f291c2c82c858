package acphost

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// The queue's lift lets a call made from OnUpdate be answered while
// OnUpdate holds the dispatcher. The request budget has no such lift: an
// agent that sends more permission requests than MaxPendingRequests
// before answering that call stops the read loop in requestBudget.acquire
// (the permissions wait behind OnUpdate in the queue), so the answer is
// never read: OnUpdate's call hangs until its ctx ends.
func TestAttackCallFromOnUpdateDeadlocksOnRequestBudget(t *testing.T) {
	var once sync.Once
	setMode := make(chan error, 1)
	var c *ACPClient
	c, h := connectHostile(t, ACPOptions{
		OnUpdate: func(acp.Update) {
			once.Do(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				setMode <- c.Session().SetMode(ctx, "plan")
			})
		},
		OnPermission: func(context.Context, *acp.PermissionRequest) (string, error) { return "allow", nil },
	}, "session/set_mode")
	h.update("s1", textChunk("hello"))
	call := <-h.calls // OnUpdate waits for set_mode now
	for i := range defaultMaxPendingRequests + 1 {
		h.send(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"t%d","title":"ls"},"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}`+"\n", 1000+i, i))
	}
	h.reply(call.ID, `{}`)
	require.NoError(t, <-setMode, "set_mode was answered, but its answer sat behind a full request budget")
}
