package container

// Argv is the engine's command line for t, for tests.
func Argv(t *Transport) []string {
	argv, _, _ := t.argv()
	return argv
}
