package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxPromptFile bounds a prompt read with -f (a file, or stdin).
const maxPromptFile = 16 << 20

// promptFile is -f/--file PATH: the whole of PATH ("-": standard input)
// is one prompt, in order among the -p prompts. stdin is read once.
type promptFile struct {
	prompts   *repeated
	stdin     io.Reader
	readStdin bool
}

func (f *promptFile) String() string { return "" }

func (f *promptFile) Set(path string) error {
	var r io.Reader
	if path == "-" {
		if f.readStdin {
			return errors.New("standard input holds one prompt: -f - is given once")
		}
		f.readStdin, r = true, f.stdin
	} else {
		file, err := os.Open(path)
		if err != nil {
			return err
		}
		defer file.Close()
		r = file
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPromptFile+1))
	switch {
	case err != nil:
		return err
	case len(b) > maxPromptFile:
		return fmt.Errorf("%s is over %d MiB", shownPath(path), maxPromptFile>>20)
	}
	text := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%s is empty", shownPath(path))
	}
	return f.prompts.Set(text)
}

func shownPath(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}
