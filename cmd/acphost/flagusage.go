package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// printFlags lists fs's flags as acphost's own usage spells them:
// --name VALUE, then what it does, indented; not the flag package's
// single-dash -name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
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
