//go:build !linux

package cgroup

import (
	"syscall"
	"time"
)

// Group is a cgroup; there are none here.
type Group struct{}

// New fails: cgroups are a Linux feature.
func New(string) (*Group, error) { return nil, unavailable("cgroups are a Linux feature") }

// SweepStale has nothing to sweep here.
func SweepStale() ([]string, error) { return nil, nil }

func (*Group) Path() string                { return "" }
func (*Group) Watched() bool               { return false }
func (*Group) Attach(*syscall.SysProcAttr) {}
func (*Group) Populated() bool             { return false }
func (*Group) Kill() error                 { return nil }
func (*Group) Remove(time.Duration) error  { return nil }
