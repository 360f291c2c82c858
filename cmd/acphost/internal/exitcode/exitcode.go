// Package exitcode is acphost's exit statuses (the command's package doc
// says when each is given), shared by the command and its subcommands.
package exitcode

// Exit statuses.
const (
	OK        = 0
	Failed    = 1
	Usage     = 2
	Interrupt = 130 // 128 + SIGINT
	Term      = 143 // 128 + SIGTERM
)
