package sandbox

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
