package usage

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// The Flags section is read whole: entries spread over lines, several
// names for one flag, names running past the description's column.
func TestFlagHelp(t *testing.T) {
	if h := FlagHelp("ssh-known-hosts"); !strings.HasPrefix(h, "verify HOST's key") || !strings.HasSuffix(h, "an unknown host is refused") {
		t.Errorf("--ssh-known-hosts: %q", h)
	}
	if FlagHelp("p") != FlagHelp("prompt") || FlagHelp("p") == "" {
		t.Errorf("-p and --prompt: %q, %q", FlagHelp("p"), FlagHelp("prompt"))
	}
	if FlagHelp("no-such-flag") != "" {
		t.Error("a flag the help does not name has a description")
	}
	helps := FlagHelps()
	if len(helps) < 30 {
		t.Errorf("only %d flags read from Text", len(helps))
	}
	for name, h := range helps {
		if h == "" || strings.Contains(h, "  ") {
			t.Errorf("--%s: %q", name, h)
		}
	}
	delete(helps, "p")
	if FlagHelp("p") == "" {
		t.Error("FlagHelps hands out the help's own map")
	}
}

func TestFlagError(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Duration("timeout", 0, "")
	fs.String("p", "", "")
	for args, want := range map[string]string{
		"--bogus":        "unknown flag --bogus",
		"-p":             "flag -p needs a value",
		"--timeout=soon": `--timeout "soon": parse error`,
	} {
		err := fs.Parse([]string{args})
		if got := FlagError(err).Error(); got != want {
			t.Errorf("%s: %q, want %q", args, got, want)
		}
	}
	other := errors.New("other")
	if FlagError(other) != other {
		t.Error("an error that is not the flag package's is changed")
	}
}

func TestPrintFlags(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("listen", "127.0.0.1:0", "the `address` to listen on")
	fs.Bool("v", false, "be loud")
	fs.Duration("wait", time.Second, "how long")
	var b bytes.Buffer
	PrintFlags(&b, fs)
	want := "  --listen ADDRESS\n      the address to listen on (default 127.0.0.1:0)\n  -v\n      be loud\n  --wait DURATION\n      how long (default 1s)\n"
	if b.String() != want {
		t.Errorf("PrintFlags:\n%s\nwant:\n%s", b.String(), want)
	}
}
