package sandbox

// NewCgroup lets the escape suite check that a fork bomb would meet a pids
// cgroup before it starts one.
var NewCgroup = newCgroup
