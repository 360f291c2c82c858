package token

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	t.Setenv(Env, "from-env")
	var warn bytes.Buffer
	if tok, err := From("acphost", "", "", &warn); err != nil || tok != "from-env" || warn.Len() != 0 {
		t.Errorf("env: %q %v %q", tok, err, warn.String())
	}
	if tok, err := From("acphost serve", "argv", "", &warn); err != nil || tok != "argv" || !strings.HasPrefix(warn.String(), "acphost serve: the token given with --token is on this process's command line") {
		t.Errorf("--token: %q %v %q", tok, err, warn.String())
	}
	if _, err := From("acphost", "a", "f", &warn); err == nil {
		t.Error("--token and --token-file both taken")
	}
}

func TestReadTokenFile(t *testing.T) {
	dir := t.TempDir()
	good, open, two := filepath.Join(dir, "good"), filepath.Join(dir, "open"), filepath.Join(dir, "two")
	for path, c := range map[string]struct {
		text string
		mode os.FileMode
	}{good: {"s3cret\n", 0o600}, open: {"s3cret\n", 0o644}, two: {"a b\n", 0o600}} {
		if err := os.WriteFile(path, []byte(c.text), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
	}
	if tok, err := readTokenFile(good, nil); err != nil || tok != "s3cret" {
		t.Errorf("good: %q %v", tok, err)
	}
	if _, err := readTokenFile(open, nil); runtime.GOOS != "windows" && (err == nil || !strings.Contains(err.Error(), "chmod 600")) {
		t.Errorf("mode 644: %v", err)
	}
	if _, err := readTokenFile(two, nil); err == nil || !strings.Contains(err.Error(), "want one token on one line") {
		t.Errorf("two words: %v", err)
	}
	// From stdin, one line is read and the rest left for the prompts.
	stdin := strings.NewReader("tok\nfirst prompt\n")
	if tok, err := readTokenFile("-", stdin); err != nil || tok != "tok" {
		t.Errorf("stdin: %q %v", tok, err)
	}
	if rest := stdin.Len(); rest != len("first prompt\n") {
		t.Errorf("%d bytes of stdin left, want the prompt's", rest)
	}
	if _, err := readTokenFile("-", strings.NewReader(strings.Repeat("x", maxTokenBytes+2))); err == nil {
		t.Error("an endless line is taken")
	}
}

func TestFromURL(t *testing.T) {
	var warn bytes.Buffer
	bare, tok := FromURL("https://h:8080/acp?a=1&token=s3cret", &warn)
	if bare != "https://h:8080/acp?a=1" || tok != "s3cret" || !strings.Contains(warn.String(), "in --url (?token=)") {
		t.Errorf("%q %q %q", bare, tok, warn.String())
	}
	warn.Reset()
	if bare, tok := FromURL("https://h/acp", &warn); bare != "https://h/acp" || tok != "" || warn.Len() != 0 {
		t.Errorf("no token: %q %q %q", bare, tok, warn.String())
	}
}

func TestWriteFileAndShellQuote(t *testing.T) {
	path, remove, err := WriteFile("s3cret")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%v %v", fi, err)
	}
	if tok, err := readTokenFile(path, nil); err != nil || tok != "s3cret" {
		t.Errorf("read back: %q %v", tok, err)
	}
	remove()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("the directory stays: %v", err)
	}
	for in, want := range map[string]string{"/tmp/a-b": "/tmp/a-b", "a b": "'a b'", "it's": `'it'\''s'`, "": "''"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}
