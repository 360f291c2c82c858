package tty

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acphost/acphost/acp"
)

// Text for people: error messages, one-line cuts, times, raw JSON.

// ErrMsg is err's message, safe to print, each part said once: the
// library's "acphost: " prefixes go (ours is there already), and a part
// repeated by a wrapping layer ("initialize: initialize: …") is dropped.
func ErrMsg(err error) string {
	if err == nil {
		return ""
	}
	return acp.SafeText(Dedupe(err.Error()))
}

// Dedupe removes "acphost: " prefixes and consecutive repeats of a
// ": "-separated part.
func Dedupe(msg string) string {
	parts := strings.Split(msg, ": ")
	out := parts[:0]
	for _, p := range parts {
		if p == "acphost" {
			continue
		}
		if len(out) > 0 && out[len(out)-1] == p {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

// OneLine collapses whitespace (line breaks included) and cuts s to max
// runes, for lines that must stay one line.
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// ago formats a past time for a listing.
func Ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return t.Local().Format("2006-01-02 15:04")
}

// CompactJSON returns raw JSON compacted and safe to print, "" for none.
func CompactJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return acp.SafeText(string(raw))
	}
	return acp.SafeText(b.String())
}
