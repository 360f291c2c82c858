//go:build unix

package acphost

// ProcessRunning is processRunning, for package acphost_test (see
// export_test.go).
var ProcessRunning = processRunning
