package sandbox

import (
	"os"
	"path/filepath"
)

// NewCgroup lets the escape suite check that a fork bomb would meet a pids
// cgroup before it starts one: it returns the files of the run's groups
// that an init joins through.
func NewCgroup(l Limits) ([]string, func()) {
	s, cleanup := newCgroup(l)
	if s == nil {
		return nil, cleanup
	}
	return s.join, cleanup
}

// CgroupV2 reports whether the machine has the unified hierarchy.
var CgroupV2 = cgroupV2

// AddressReserve is the address space a process may have beyond its run's
// memory limit.
var AddressReserve = addressReserve

// MemoryCgroup reports whether a run under c gets a memory cgroup, which
// bounds its memory to c.Limits.Memory; without one only the address
// space is bounded, at the limit and AddressReserve more.
func MemoryCgroup(c Config) bool {
	switch c.Profile {
	case Dev:
		return false
	case Hardened:
		// runsc makes the run's group where lathe runs as root, on v2
		// under the parent lathe makes the standard runs' groups in.
		if os.Geteuid() != 0 {
			return false
		}
		if !cgroupV2() {
			return true
		}
		parent, ctrls := v2Parent()
		return parent != "" && ctrls["memory"]
	}
	s, cleanup := newCgroup(c.Limits.WithDefaults())
	defer cleanup()
	if s == nil {
		return false
	}
	for _, d := range s.dirs {
		for _, f := range []string{"memory.max", "memory.limit_in_bytes"} {
			if _, err := os.Stat(filepath.Join(d, f)); err == nil {
				return true
			}
		}
	}
	return false
}
