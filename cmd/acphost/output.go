package main

import (
	"fmt"

	"github.com/acphost/acphost/cmd/acphost/internal/render"
	"github.com/acphost/acphost/cmd/acphost/internal/tty"
)

// output is a run's output side: the screens and the sink a turn's events
// go to. Its fields are set by newApp (errs again by newLineEditor, before the
// first turn) and read by any goroutine after.
type output struct {
	out   *tty.Screen      // human output on stdout; nil with --json
	errs  *tty.Screen      // diagnostics (and, with --json, questions) on stderr
	human *render.Human    // the human sink, nil with --json
	json  *render.JSONSink // the --json sink, nil without
	// sink is where a turn's events go: the human, --json or --quiet
	// sink, wrapped by refusals and by the transcript (see newApp).
	sink     render.Sink
	refusals *refusalCount // the run's permission answers, nil at a terminal
}

// questions is the screen the person is asked on: stdout's with human
// output, else stderr's.
func (o *output) questions() *tty.Screen {
	if o.out != nil {
		return o.out
	}
	return o.errs
}

// diag prints a diagnostic on stderr, on a line of its own.
func (o *output) diag(code, format string, args ...any) {
	if o.out != nil {
		o.out.BreakLine() // stdout and stderr often share a terminal
		o.out.Forget()    // and the line above is no longer the last tool line
	}
	o.errs.Line(code, "acphost: "+fmt.Sprintf(format, args...))
}

// note prints information for the person: on stdout for human output, on
// stderr with --json.
func (o *output) note(code, text string) {
	if o.out != nil {
		o.out.Line(code, text)
		return
	}
	o.errs.Line(code, text)
}
