//go:build !linux

package confine

func abi() int { return 0 }

func onMainThread() bool { return false }

func restrictThread(int, []string) error { return ErrUnsupported }

// RestrictedThreads reports none: nothing is ever restricted here.
func RestrictedThreads() ([]int, error) { return nil, nil }
