package acphost

// The Linux tests' helpers that package acphost_test borrows (see
// export_test.go).
var (
	DaemonScript = daemonScript
	ReadPID      = readPID
)
