package acphost

import (
	"bytes"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acphost/acphost/acp"
	"github.com/acphost/acphost/fakeagent"
)

func u64(n uint64) *uint64 { return &n }

// The end-of-turn usage is typed on Response with ACPOptions.Unstable,
// and left raw-free and nil without it; the turn's last reported cost
// comes with it either way (usage_update is stable).
func TestTurnUsageIsTypedBehindUnstable(t *testing.T) {
	usage := raw(`{"totalTokens":240,"inputTokens":200,"outputTokens":40,"thoughtTokens":12,"cachedReadTokens":150}`)
	script := fakeagent.Script{Turns: []fakeagent.Turn{{
		Steps: []fakeagent.Step{
			fakeagent.Say(raw(`{"sessionUpdate":"usage_update","used":100,"size":1000,"cost":{"amount":0.01,"currency":"USD"}}`)),
			fakeagent.Say(raw(`{"sessionUpdate":"usage_update","used":240,"size":1000,"cost":{"amount":0.02,"currency":"USD"}}`)),
			fakeagent.Say(raw(`{"sessionUpdate":"usage_update","used":250,"size":1000}`)),
		},
		Usage: usage,
	}}}
	for _, unstable := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			c, _ := connectFake(t, script, ACPOptions{Unstable: unstable})
			resp, err := c.Generate(Request{Prompt: "x"})
			require.NoError(t, err)
			assert.Equal(t, &acp.Cost{Amount: 0.02, Currency: "USD"}, resp.Cost, "the last cost reported")
			if !unstable {
				assert.Nil(t, resp.Usage, "unstable: typed only with ACPOptions.Unstable")
				return
			}
			assert.Equal(t, &acp.Usage{TotalTokens: 240, InputTokens: 200, OutputTokens: 40, ThoughtTokens: u64(12), CachedReadTokens: u64(150)}, resp.Usage)
		})
	}
}

// Attack: a usage of the wrong shape is a defined answer, never a failed
// turn: no Usage (and a Logger line) when it is not an object or a
// required total is not a count; an optional count of the wrong type is
// dropped.
func TestAttackTurnUsageOfTheWrongShape(t *testing.T) {
	for usage, want := range map[string]*acp.Usage{
		`"lots"`:                             nil,
		`[1,2,3]`:                            nil,
		`{"inputTokens":1,"outputTokens":2}`: nil,
		`{"totalTokens":-3,"inputTokens":1,"outputTokens":2}`:                                                                      nil,
		`{"totalTokens":1.5,"inputTokens":1,"outputTokens":2}`:                                                                     nil,
		`{"totalTokens":"3","inputTokens":1,"outputTokens":2}`:                                                                     nil,
		`{"totalTokens":18446744073709551616,"inputTokens":1,"outputTokens":2}`:                                                    nil,
		`{"totalTokens":3,"inputTokens":1,"outputTokens":2,"thoughtTokens":"many","cachedReadTokens":-1,"cachedWriteTokens":null}`: {TotalTokens: 3, InputTokens: 1, OutputTokens: 2},
		`{"totalTokens":18446744073709551615,"inputTokens":0,"outputTokens":0,"cachedWriteTokens":7}`:                              {TotalTokens: 18446744073709551615, CachedWriteTokens: u64(7)},
	} {
		t.Run(usage, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs bytes.Buffer
				script := fakeagent.Script{Turns: []fakeagent.Turn{{Usage: raw(usage)}}}
				c, _ := connectFake(t, script, ACPOptions{Unstable: true, Debug: DebugOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
				resp, err := c.Generate(Request{Prompt: "x"})
				require.NoError(t, err)
				assert.Equal(t, acp.StopEndTurn, resp.StopReason)
				assert.Equal(t, want, resp.Usage)
				if want == nil {
					assert.Contains(t, logs.String(), "usage is malformed")
				}
			})
		})
	}
}

func TestDecodePromptResultKeepsUsage(t *testing.T) {
	r, ok := decodePromptResult(raw(`{"stopReason":"end_turn","usage":{"totalTokens":1,"inputTokens":1,"outputTokens":0},"_meta":{}}`))
	require.True(t, ok)
	assert.JSONEq(t, `{"totalTokens":1,"inputTokens":1,"outputTokens":0}`, string(r.Usage))
}
