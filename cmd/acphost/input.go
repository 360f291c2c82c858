package main

import (
	"bufio"
	"io"
	"strings"
	"sync"
)

// lineReader hands out the lines of standard input, shared by the prompt
// loop (between turns) and the approval prompt (during a turn). It starts
// reading on first use, so a run that never asks does not touch stdin.
type lineReader struct {
	r     io.Reader
	once  sync.Once
	lines chan string
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: r, lines: make(chan string)}
}

// C returns the channel of lines (without their line ending); it is closed
// at end of input.
func (l *lineReader) C() <-chan string {
	l.once.Do(func() { go l.read() })
	return l.lines
}

func (l *lineReader) read() {
	defer close(l.lines)
	br := bufio.NewReader(l.r)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			l.lines <- strings.TrimRight(s, "\r\n")
		}
		if err != nil {
			return
		}
	}
}
