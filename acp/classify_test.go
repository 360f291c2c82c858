package acp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		name, params string
		want         Surface
		check        func(t *testing.T, c Classification)
	}{
		{"claude exit plan", `{"toolCall":{"toolCallId":"t","title":"Ready to code?","kind":"switch_mode","rawInput":{"plan":"1. do it"},"_meta":{"claudeCode":{"toolName":"ExitPlanMode"}}},"options":[]}`,
			SurfacePlanExit, func(t *testing.T, c Classification) { assert.Equal(t, "1. do it", c.Plan) }},
		{"plan text in content", `{"toolCall":{"toolCallId":"t","kind":"switch_mode","content":[{"type":"content","content":{"type":"text","text":"the plan"}}]},"options":[]}`,
			SurfacePlanExit, func(t *testing.T, c Classification) { assert.Equal(t, "the plan", c.Plan) }},
		{"file change with diff", `{"toolCall":{"toolCallId":"t","kind":"edit","content":[{"type":"diff","path":"/a.go","oldText":"a\n","newText":"b\n"}]},"options":[]}`,
			SurfaceFileChange, func(t *testing.T, c Classification) {
				require.Len(t, c.Changes, 1)
				assert.Equal(t, "-a\n+b\n", UnifiedDiff(c.Changes[0])[len("--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n"):])
			}},
		{"edit without diff", `{"toolCall":{"toolCallId":"t","kind":"delete"},"options":[]}`, SurfaceFileChange, nil},
		{"claude ask user question", `{"toolCall":{"toolCallId":"t","title":"AskUserQuestion","kind":"other","rawInput":{"questions":[{"header":"Color","question":"Which color?","multiSelect":false,"options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cool"}]}]},"_meta":{"claudeCode":{"toolName":"AskUserQuestion"}}},"options":[]}`,
			SurfaceQuestion, func(t *testing.T, c Classification) {
				assert.Equal(t, []Question{{Header: "Color", Question: "Which color?", Options: []QuestionOption{{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool"}}}}, c.Questions)
			}},
		{"command string", `{"toolCall":{"toolCallId":"t","kind":"execute","title":"npm test","rawInput":{"command":"npm test -- -u"}},"options":[]}`,
			SurfaceCommand, func(t *testing.T, c Classification) { assert.Equal(t, "npm test -- -u", c.Command) }},
		{"command argv", `{"toolCall":{"toolCallId":"t","kind":"execute","rawInput":{"command":["git","push"]}},"options":[]}`,
			SurfaceCommand, func(t *testing.T, c Classification) { assert.Equal(t, "git push", c.Command) }},
		{"fetch", `{"toolCall":{"toolCallId":"t","kind":"fetch","rawInput":{"url":"https://example.org"}},"options":[]}`,
			SurfaceFetch, func(t *testing.T, c Classification) { assert.Equal(t, "https://example.org", c.URL) }},
		{"other", `{"toolCall":{"toolCallId":"t","kind":"think"},"options":[]}`, SurfaceOther, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := ParsePermissionRequest(json.RawMessage(tc.params))
			require.NoError(t, err)
			c := Classify(req)
			assert.Equal(t, tc.want, c.Surface)
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
