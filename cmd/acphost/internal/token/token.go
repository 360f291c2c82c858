// Package token is how acphost takes a bearer token (for --url, and for
// acphost serve) without leaving it where other users can read it.
//
// A bearer token on a command line is in /proc/PID/cmdline (ps) for every
// user of the machine, who can then drive the agent as the person. The
// token comes from the environment ($ACPHOST_TOKEN, which only the owner
// can read in /proc), a file only its owner may read (--token-file), or
// stdin (--token-file -); --token and a token in a --url are taken, with a
// warning.
package token

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Env carries a bearer token without putting it on a command line.
const Env = "ACPHOST_TOKEN"

// maxTokenBytes bounds a token read from a file or stdin.
const maxTokenBytes = 4 << 10

// argvWarning is the warning for a token given on a command line.
const argvWarning = "%s: the token given %s is on this process's command line, which every user of this machine can read (ps): " +
	"use $" + Env + " or --token-file FILE (mode 600) instead\n"

// From resolves a token from the flags (--token, --token-file) and
// the environment, warning on stderr (as prefix) about one on the command
// line. "" when none was given.
func From(prefix, flagToken, tokenFile string, stderr io.Writer) (string, error) {
	switch {
	case flagToken != "" && tokenFile != "":
		return "", errors.New("--token and --token-file: give one")
	case tokenFile != "":
		return readTokenFile(tokenFile, os.Stdin)
	case flagToken != "":
		fmt.Fprintf(stderr, argvWarning, prefix, "with --token")
		return flagToken, nil
	}
	return os.Getenv(Env), nil
}

// readTokenFile reads a token from path, or one line of stdin for "-". A
// file that its group or others may read is refused: so would ssh a key.
func readTokenFile(path string, stdin io.Reader) (string, error) {
	var b []byte
	if path == "-" {
		line, err := readLineRaw(stdin, maxTokenBytes)
		if err != nil {
			return "", fmt.Errorf("--token-file -: %w", err)
		}
		b = line
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("--token-file %s: others may read it (mode %04o): chmod 600 %s", path, fi.Mode().Perm(), path)
		}
		if b, err = io.ReadAll(io.LimitReader(f, maxTokenBytes+1)); err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		if len(b) > maxTokenBytes {
			return "", fmt.Errorf("--token-file %s: longer than a token (%d bytes at most)", path, maxTokenBytes)
		}
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", fmt.Errorf("--token-file %s: want one token on one line", path)
	}
	return tok, nil
}

// readLineRaw reads up to a newline, a byte at a time: what follows stays
// in r (the prompts, for the chat).
func readLineRaw(r io.Reader, max int) ([]byte, error) {
	var line []byte
	var c [1]byte
	for len(line) <= max {
		n, err := r.Read(c[:])
		if n == 1 {
			if c[0] == '\n' {
				return line, nil
			}
			line = append(line, c[0])
		}
		if errors.Is(err, io.EOF) {
			return line, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("longer than a token (%d bytes at most)", max)
}

// FromURL takes a "token" query parameter out of a --url: it is sent as
// a header instead (a URL ends up in the server's logs), and warned about.
func FromURL(raw string, stderr io.Writer) (string, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return raw, ""
	}
	q := u.Query()
	tok := q.Get("token")
	if tok == "" {
		return raw, ""
	}
	q.Del("token")
	u.RawQuery = q.Encode()
	fmt.Fprintf(stderr, argvWarning, "acphost", "in --url (?token=)")
	return u.String(), tok
}

// WriteFile keeps a token made up by acphost serve in a file only
// its owner can read, in a directory of its own; remove removes both.
func WriteFile(token string) (path string, remove func(), err error) {
	dir, err := os.MkdirTemp("", "acphost-serve-")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return path, func() { os.RemoveAll(dir) }, nil
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
