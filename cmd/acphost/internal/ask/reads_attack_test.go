package ask

import (
	"context"
	"testing"

	"github.com/acphost/acphost/acp"
	"github.com/stretchr/testify/require"
)

// --permission reads (and the web host's reads) allow what the agent
// calls a read or a search only when it carries nothing that writes: a
// read with a diff of a project file is asked, not allowed.
func TestReadsPolicyAsksAboutAReadThatWrites(t *testing.T) {
	asked := func(context.Context, *acp.PermissionRequest) (string, error) { return "asked", nil }
	policy := AllowingReads(asked)
	for _, kind := range []string{"read", "search"} {
		req, err := acp.ParsePermissionRequest([]byte(`{"sessionId":"s1","toolCall":{"toolCallId":"t1","kind":"` + kind + `",
			"content":[{"type":"diff","path":"/p/main.go","oldText":"a","newText":"b"}]},
			"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}`))
		require.NoError(t, err)
		id, _ := policy(context.Background(), req)
		require.Equal(t, "asked", id, kind)
		req.ToolCall.Content = nil
		id, _ = policy(context.Background(), req)
		require.Equal(t, "allow", id, kind)
	}
}
