package usage

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// PrintFlags lists fs's flags as acphost's own usage spells them:
// --name VALUE, then what it does, indented; not the flag package's
// single-dash -name.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		value, usage := flag.UnquoteUsage(f)
		line := "  " + dashes(f.Name)
		if value != "" {
			line += " " + strings.ToUpper(value)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "[]" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}

// FlagError rewords the flag package's errors for the long flags people
// type: "-bogus" becomes "--bogus", "provided but not defined" becomes
// "unknown flag".
func FlagError(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag %s", dashes(name))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("flag %s needs a value", dashes(name))
	}
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		// invalid value "soon" for flag -timeout: parse error
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			value := rest[:i]
			name, why, _ := strings.Cut(rest[i+len(" for flag -"):], ": ")
			return fmt.Errorf("%s %s: %s", dashes(name), value, why)
		}
	}
	return err
}

// dashes spells a flag as typed: -p, --prompt.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
