package terminal

import "github.com/acphost/acphost/internal/cgroup"

// FailCgroups makes every cgroup fail with err until restore is called.
func FailCgroups(err error) (restore func()) {
	newCgroup = func(string) (*cgroup.Group, error) { return nil, err }
	return func() { newCgroup = cgroup.New }
}
