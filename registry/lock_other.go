//go:build !unix && !windows

package registry

import (
	"errors"
	"os"
)

func tryLock(*os.File) (bool, error) {
	return false, errors.New("registry: installing needs file locks, which this system lacks")
}

func unlock(*os.File) {}
