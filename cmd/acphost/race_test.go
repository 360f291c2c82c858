//go:build race

package main

// The command under test is built with -race too when the tests are.
func init() { raceEnabled = true }
