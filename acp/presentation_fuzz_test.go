package acp

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzParsePermissionRequest(f *testing.F) {
	for _, name := range presVectors(f) {
		f.Add([]byte(presLoad(f, name)))
	}
	for _, s := range []string{
		``, `null`, `{}`, `{"options":[]}`, `{"options":[1,"x",null,{}]}`,
		`{"options":[{"optionId":"a","_meta":{"permission":{"version":1,"changes":[{"type":"x","targets":[{"matcher":7}]}]}}}]}`,
		`{"options":[],"_meta":{"jetbrains":{"air":{"permission":{"version":1,"title":"T","defaultToNo":true}}}}}`,
		`{"options":[],"title":"T","description":null,"subject":{"type":"tool_call","toolCall":{"toolCallId":"x"}}}`,
		`{"options":[],"toolCall":{"toolCallId":"x","_meta":{"claudeCode":{"mcpServer":{}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		req, err := ParsePermissionRequest(params)
		if err != nil {
			if req != nil {
				t.Fatal("request and error")
			}
			return
		}
		var top map[string]json.RawMessage
		if json.Unmarshal(params, &top) != nil {
			t.Fatalf("accepted params that are not a JSON object: %q", params)
		}
		var opts []json.RawMessage
		if err := json.Unmarshal(top["options"], &opts); err != nil || opts == nil {
			t.Fatalf("accepted params without an options array: %q", params)
		}
		if len(req.Options) != len(opts) {
			t.Fatalf("%d options decoded, %d sent", len(req.Options), len(opts))
		}
		p := req.Presentation
		if p.Present() && strings.TrimSpace(p.Title) == "" {
			t.Fatal("decoded presentation without a title")
		}
		if p.Source == PresentationUnknown && (p.Title != "" || p.Description != "" || p.HasDescription || p.DefaultToNo) {
			t.Fatal("unknown presentation half-decoded")
		}
		if p.Source != PresentationNone && p.Raw == nil {
			t.Fatal("presentation without Raw")
		}
		h, fromP := req.Heading()
		if fromP != p.Present() || (fromP && h != p.Title) {
			t.Fatal("heading does not follow the presentation")
		}
		_, _ = req.ToolCall.ClaudeCode()
		for _, o := range req.Options {
			if o.Raw == nil {
				t.Fatal("option without Raw")
			}
			if o.Meta.Version != 0 && o.Meta.Version != 1 {
				t.Fatalf("option meta version %d", o.Meta.Version)
			}
			for _, c := range o.Meta.Changes {
				d := c.Describe()
				if d == "" || strings.ContainsAny(d, "\n\r\x1b") || SafeText(d) != d {
					t.Fatalf("bad description %q", d)
				}
				for _, tg := range c.Targets {
					_ = tg.Describe()
					if tg.Matcher != nil {
						_ = tg.Matcher.Describe()
					}
				}
			}
		}
		_ = p.SafeTitle()
		_ = p.SafeDescription()
	})
}

func FuzzSafeText(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b[31mred\x1b[0m", "\x1b]8;;http://x\x1b\\l\x1b]8;;\x1b\\", "\x9b31m", "\u009b31m",
		"\x1b]0;t\x07", "\x1bP\x9c", "\xc2", "\xc2\x9c", "a\u202eb", "日本語\n\t", "a\ufe0f\ufe0f", "\u200d\U000E0041", "x\u2028y", "\x1b", "\x1b[", "\x1b]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := SafeText(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 in %q", out)
		}
		for i := 0; i < len(out); i++ {
			c := out[i]
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				t.Fatalf("control byte %#x in %q", c, out)
			}
		}
		for _, r := range out {
			if (r >= 0x80 && r <= 0x9f) || bidiControl(r) || invisible(r) || r == 0x2028 || r == 0x2029 {
				t.Fatalf("control rune %U in %q", r, out)
			}
		}
		if len(out) > len(s) {
			t.Fatalf("output longer than input")
		}
		if again := SafeText(out); again != out {
			t.Fatalf("not idempotent: %q then %q", out, again)
		}
		if SafeText(out) != out {
			t.Fatalf("not idempotent: %q", out)
		}
	})
}
