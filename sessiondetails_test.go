package acphost_test

import (
	"testing"

	"github.com/acphost/acphost"
	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the agent says of a session (its slash commands, title, usage) is
// kept current from its updates and readable at any time.
func TestSessionDetailsFollowUpdates(t *testing.T) {
	c, _ := acphost.ConnectFake(t, fakeagent.Script{Turns: []fakeagent.Turn{{Steps: []fakeagent.Step{
		fakeagent.Say(acphost.Raw(`{"sessionUpdate":"available_commands_update","availableCommands":[{"name":"web","description":"search the web"}]}`)),
		fakeagent.Say(acphost.Raw(`{"sessionUpdate":"session_info_update","title":"Fix the build","updatedAt":"2026-12-01T10:00:00Z"}`)),
		fakeagent.Say(acphost.Raw(`{"sessionUpdate":"usage_update","used":1200,"size":200000,"cost":{"amount":0.25,"currency":"USD"}}`)),
	}}, {Steps: []fakeagent.Step{
		fakeagent.Say(acphost.Raw(`{"sessionUpdate":"session_info_update","title":null}`)),
	}}}}, acphost.ACPOptions{})
	assert.Equal(t, acphost.SessionDetails{}, c.Session().Details(), "nothing said yet")
	_, err := c.Generate(acphost.Request{Prompt: "go"})
	require.NoError(t, err)
	info := c.Session().Details()
	assert.Equal(t, []acp.AvailableCommand{{Name: "web", Description: "search the web"}}, info.Commands)
	assert.Equal(t, "Fix the build", info.Title)
	assert.Equal(t, "2026-12-01T10:00:00Z", info.UpdatedAt)
	require.NotNil(t, info.Usage)
	assert.Equal(t, acphost.ContextUsage{Used: 1200, Size: 200000, Cost: &acp.Cost{Amount: 0.25, Currency: "USD"}}, *info.Usage)
	info.Commands[0].Name = "changed by the caller"
	assert.Equal(t, "web", c.Session().Details().Commands[0].Name, "Info returns a copy")

	_, err = c.Generate(acphost.Request{Prompt: "again"})
	require.NoError(t, err)
	assert.Empty(t, c.Session().Details().Title, "a title cleared with null")
	assert.Equal(t, "2026-12-01T10:00:00Z", c.Session().Details().UpdatedAt, "a field not sent is kept")
}
