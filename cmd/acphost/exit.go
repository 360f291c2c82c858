package main

// Exit statuses (the package doc says when each is given).
const (
	exitOK        = 0
	exitFailed    = 1
	exitUsage     = 2
	exitInterrupt = 130 // 128 + SIGINT
	exitTerm      = 143 // 128 + SIGTERM
)
