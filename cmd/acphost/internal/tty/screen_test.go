package tty

import (
	"testing"
)

func TestVisibleCutAndCutStyled(t *testing.T) {
	s := "\x1b[2mabcdé\x1b[0mfg"
	if i := visibleCut(s, 5); s[:i] != "\x1b[2mabcdé" {
		t.Errorf("visibleCut 5: %q", s[:i])
	}
	if i := visibleCut(s, 8); i != -1 {
		t.Errorf("visibleCut past the end: %d", i)
	}
	head, tail := cutStyled(s, visibleCut(s, 3))
	if head != "\x1b[2mabc\x1b[0m" || tail != "\x1b[2mdé\x1b[0mfg" {
		t.Errorf("cutStyled: %q %q (the style is closed before the cut and reopened after)", head, tail)
	}
	head, tail = cutStyled(s, len(s)-1)
	if head != "\x1b[2mabcdé\x1b[0mf" || tail != "g" {
		t.Errorf("cutStyled after a reset: %q %q", head, tail)
	}
}
