package container

// Argv is the engine's command line for t's agent, for tests.
func Argv(t *Transport) []string {
	var name string
	return t.argv(append([]string{t.Command}, t.Args...), &name)
}
