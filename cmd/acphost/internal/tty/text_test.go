package tty

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDedupe(t *testing.T) {
	for in, want := range map[string]string{
		"initialize: acphost: initialize: agent error -32601": "initialize: agent error -32601",
		"acphost: session/new: acphost: session/new: boom":    "session/new: boom",
		"a: b: a: b": "a: b: a: b",
		"plain":      "plain",
	} {
		if got := Dedupe(in); got != want {
			t.Errorf("dedupe(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestErrMsg(t *testing.T) {
	if got := ErrMsg(nil); got != "" {
		t.Errorf("ErrMsg(nil) = %q", got)
	}
	err := fmt.Errorf("initialize: %w", errors.New("acphost: initialize: bad\x1b[31m"))
	if got := ErrMsg(err); strings.Contains(got, "\x1b") || strings.Count(got, "initialize") != 1 || strings.Contains(got, "acphost") {
		t.Errorf("ErrMsg = %q: want one initialize, no prefix, no escape", got)
	}
}

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"a\n  b\tc ", 10, "a b c"},
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ééééééé", 4, "ééé…"},
	} {
		if got := OneLine(c.in, c.max); got != c.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestAgo(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-5*time.Minute - time.Second), "5m ago"},
		{now.Add(-3*time.Hour - time.Second), "3h ago"},
	} {
		if got := Ago(c.t); got != c.want {
			t.Errorf("Ago(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	old := time.Date(2020, 1, 2, 3, 4, 0, 0, time.Local)
	if got := Ago(old); got != "2020-01-02 03:04" {
		t.Errorf("Ago of a date = %q", got)
	}
}

func TestCompactJSON(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"null":               "",
		"{ \"a\" : [1, 2] }": `{"a":[1,2]}`,
		"{not json":          "{not json",
		"\"x\\u001b[31m\"":   `"x\u001b[31m"`,
	} {
		if got := CompactJSON([]byte(in)); got != want {
			t.Errorf("CompactJSON(%q) = %q, want %q", in, got, want)
		}
	}
}
