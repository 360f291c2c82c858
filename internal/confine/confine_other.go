//go:build !linux

package confine

func abi() int { return 0 }

func restrictThread(int, []string) error { return ErrUnsupported }
