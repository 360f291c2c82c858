package main

import "github.com/acphost/acphost/cmd/acphost/internal/exitcode"

// Exit statuses (the package doc says when each is given).
const (
	exitOK        = exitcode.OK
	exitFailed    = exitcode.Failed
	exitUsage     = exitcode.Usage
	exitInterrupt = exitcode.Interrupt
	exitTerm      = exitcode.Term
)
