package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

const cgroupRoot = "/sys/fs/cgroup"

var cgroupSeq atomic.Int64

// A cgroupSet is the cgroups of one run: one group under v2, one per
// controller under v1.
type cgroupSet struct {
	limits Limits   // the memory and process limits written to it
	dirs   []string // the groups
	join   []string // the files the init writes to join them
	clone  *os.File // v2: the group, open for the init to be cloned into; nil where it joins instead
	pids   bool     // whether a pids group bounds the run's processes
}

// maxIdleCgroups bounds the groups kept for reuse.
const maxIdleCgroups = 8

// idleCgroups holds sets whose run has ended and that are empty again.
// Making and removing a group costs about 0.2 ms on cgroup v1, a tenth of
// the sandbox's whole cost; a run that finds a set with its limits takes
// it instead. Memory a previous run left charged to the group (its page
// cache) is reclaimed when the next run needs it.
var idleCgroups struct {
	sync.Mutex
	sets  []*cgroupSet
	swept bool
}

// newCgroup returns cgroups for one run with the memory, process and CPU
// limits of l, where the machine lets lathe create them: under cgroup v2 one
// group under lathe's own, under v1 one group per controller (memory,
// pids, and cpu when l caps CPUs). It returns them, nil where the machine
// has no writable cgroups (the rlimits still hold), and a cleanup that
// gives them back once the run is over.
//
// Under v1 the init joins through the tasks file, which moves only the
// writing thread; the init has one. Joining through cgroup.procs would
// take the kernel's lock on every thread group, which waits for an RCU
// grace period: about a millisecond on each call. Under v2 the init is
// cloned into its group instead (enter).
func newCgroup(l Limits) (s *cgroupSet, cleanup func()) {
	l = Limits{Memory: l.Memory, Processes: l.Processes, CPUs: max(l.CPUs, 0)}
	idleCgroups.Lock()
	if !idleCgroups.swept {
		idleCgroups.swept = true
		sweepCgroups()
	}
	for i, s := range idleCgroups.sets {
		if s.limits == l {
			idleCgroups.sets = append(idleCgroups.sets[:i], idleCgroups.sets[i+1:]...)
			idleCgroups.Unlock()
			return s, func() { putCgroup(s) }
		}
	}
	idleCgroups.Unlock()
	s = makeCgroup(l)
	if s == nil {
		return nil, func() {}
	}
	return s, func() { putCgroup(s) }
}

// enter puts the init of a run in the groups of s: it sets attr to clone
// the init into its v2 group, or returns the init's arguments that join
// the groups. A nil s has no groups.
func (s *cgroupSet) enter(attr *syscall.SysProcAttr) (initArgs []string) {
	switch {
	case s == nil:
		return nil
	case s.clone != nil:
		attr.UseCgroupFD, attr.CgroupFD = true, int(s.clone.Fd())
		return nil
	}
	for _, p := range s.join {
		initArgs = append(initArgs, "cgroup", p)
	}
	return initArgs
}

// putCgroup keeps s for another run if it is empty and there is room,
// and removes it otherwise.
func putCgroup(s *cgroupSet) {
	empty := true
	for _, d := range s.dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			empty = false
			break
		}
	}
	if !empty {
		s.remove()
		return
	}
	// The newest set stays; the oldest makes room for it.
	idleCgroups.Lock()
	idleCgroups.sets = append(idleCgroups.sets, s)
	var old *cgroupSet
	if len(idleCgroups.sets) > maxIdleCgroups {
		old = idleCgroups.sets[0]
		idleCgroups.sets = idleCgroups.sets[1:]
	}
	idleCgroups.Unlock()
	if old != nil {
		old.remove()
	}
}

func (s *cgroupSet) remove() {
	if s.clone != nil {
		s.clone.Close()
	}
	for _, d := range s.dirs {
		removeCgroup(d)
	}
}

// makeCgroup creates a set with the limits of l, or returns nil.
func makeCgroup(l Limits) *cgroupSet {
	name := fmt.Sprintf("lathe-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	if cgroupV2() {
		return makeCgroupV2(l, name)
	}
	s := &cgroupSet{limits: l}
	own := ownCgroups()
	limits := map[string]struct {
		file string
		v    int64
	}{
		"memory": {"memory.limit_in_bytes", l.Memory},
		"pids":   {"pids.max", int64(l.Processes)},
		"cpu":    {"cpu.cfs_quota_us", cpuQuota(l.CPUs)},
	}
	for _, ctrl := range []string{"memory", "pids", "cpu"} {
		lim := limits[ctrl]
		if lim.v <= 0 {
			continue
		}
		base := filepath.Join(cgroupRoot, ctrl)
		if _, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil {
			continue
		}
		d := filepath.Join(base, own[ctrl], name)
		if os.Mkdir(d, 0o755) != nil {
			continue
		}
		if ctrl == "cpu" && writeFile(filepath.Join(d, "cpu.cfs_period_us"), cpuPeriod) != nil {
			removeCgroup(d)
			continue
		}
		if writeFile(filepath.Join(d, lim.file), lim.v) != nil {
			removeCgroup(d)
			continue
		}
		if ctrl == "memory" {
			// Without swap accounting the file is missing, and the
			// address-space rlimit still bounds each process.
			writeFile(filepath.Join(d, "memory.memsw.limit_in_bytes"), lim.v)
		}
		s.dirs = append(s.dirs, d)
		s.join = append(s.join, filepath.Join(d, "tasks"))
		s.pids = s.pids || ctrl == "pids"
	}
	if len(s.dirs) == 0 {
		return nil
	}
	return s
}

// makeCgroupV2 creates the one group of a run under cgroup v2, in the
// parent [v2Parent] prepared, with the limits whose controllers it could
// enable there.
func makeCgroupV2(l Limits, name string) *cgroupSet {
	parent, ctrls := v2Parent()
	if parent == "" {
		return nil
	}
	var want [][2]string // file, value
	if l.Memory > 0 && ctrls["memory"] {
		want = append(want, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)})
	}
	if l.Processes > 0 && ctrls["pids"] {
		want = append(want, [2]string{"pids.max", strconv.Itoa(l.Processes)})
	}
	if l.CPUs > 0 && ctrls["cpu"] {
		want = append(want, [2]string{"cpu.max", fmt.Sprintf("%d %d", cpuQuota(l.CPUs), cpuPeriod)})
	}
	if len(want) == 0 {
		return nil
	}
	d := filepath.Join(parent, name)
	if os.Mkdir(d, 0o755) != nil {
		return nil
	}
	for _, w := range want {
		if os.WriteFile(filepath.Join(d, w[0]), []byte(w[1]), 0) != nil {
			removeCgroup(d)
			return nil
		}
	}
	if ctrls["memory"] {
		// Swap would let a run hold more than memory.max; the file is
		// missing where the kernel does not account swap. An
		// out-of-memory kill takes the whole run, as the wall time does,
		// rather than one process of it.
		writeFile(filepath.Join(d, "memory.swap.max"), 0)
		writeFile(filepath.Join(d, "memory.oom.group"), 1)
	}
	s := &cgroupSet{limits: l, dirs: []string{d}, join: []string{filepath.Join(d, "cgroup.procs")},
		pids: l.Processes > 0 && ctrls["pids"]}
	// The group stays open as long as the set, which runs reuse.
	if f, err := os.Open(d); err == nil {
		if canCloneInto(f) {
			s.clone = f
		} else {
			f.Close()
		}
	}
	return s
}

// v2Parent returns the group under which the runs' groups are made under
// cgroup v2, and the controllers enabled for its children; "" where lathe
// can make no group.
//
// The runs' groups are children of lathe's own group. A v2 group gives
// its children the memory controller only while no process is in it (the
// root excepted): the rule of no internal processes. The cpu and pids
// controllers it may give with processes in it, but that makes it a thread
// root, whose children cannot hold processes at all: a run could not join
// its group. So where lathe's group has processes, lathe enables nothing
// unless it is the only one: then it moves itself into a leaf child,
// lathe-PID, and enables the controllers, as container engines do for their
// own process (a service or a container given its own delegated group).
// Where other processes share the group (a login shell's session, say) it
// moves nothing and enables nothing: the runs get no group, and the rlimits
// still hold.
var v2Parent = sync.OnceValues(func() (string, map[string]bool) {
	rel := ownCgroups()[""]
	own := filepath.Join(cgroupRoot, rel)
	if procs := readFields(filepath.Join(own, "cgroup.procs")); rel != "/" && len(procs) > 0 {
		alone := len(procs) == 1 && procs[0] == strconv.Itoa(os.Getpid())
		if !alone || moveSelf(own) != nil {
			return "", nil
		}
	}
	available := map[string]bool{}
	for _, c := range readFields(filepath.Join(own, "cgroup.controllers")) {
		available[c] = true
	}
	enabled := map[string]bool{}
	for _, c := range readFields(filepath.Join(own, "cgroup.subtree_control")) {
		enabled[c] = true
	}
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !enabled[c] && available[c] && enableController(own, c) == nil {
			enabled[c] = true
		}
	}
	if len(enabled) == 0 {
		return "", nil
	}
	return own, enabled
})

func enableController(group, ctrl string) error {
	return os.WriteFile(filepath.Join(group, "cgroup.subtree_control"), []byte("+"+ctrl), 0)
}

// moveSelf moves lathe's process, every thread of it, into the leaf group
// lathe-PID under group.
func moveSelf(group string) error {
	leaf := filepath.Join(group, fmt.Sprintf("lathe-%d", os.Getpid()))
	if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), int64(os.Getpid())); err != nil {
		os.Remove(leaf)
		return err
	}
	return nil
}

func readFields(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// canCloneInto reports whether a process can be cloned into a cgroup
// (CLONE_INTO_CGROUP), found once by starting /bin/true in the group f.
// Joining by a write to cgroup.procs takes the kernel's lock on all thread
// groups for writing, which waits for an RCU grace period; a process cloned
// into its group takes it only for reading. The kernel cannot do it before
// Linux 5.7, nor where a seccomp filter refuses clone3, as the default
// profiles of container runtimes do; the init then joins by the write.
func canCloneInto(f *os.File) bool {
	cloneInto.Do(func() {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(f.Fd())}
		cloneInto.ok = cmd.Run() == nil
	})
	return cloneInto.ok
}

var cloneInto struct {
	sync.Once
	ok bool
}

// sweepCgroups removes the groups that lathe processes no longer running
// kept for reuse (an exiting process leaves its idle groups behind).
func sweepCgroups() {
	own := ownCgroups()
	var parents []string
	if cgroupV2() {
		if p, _ := v2Parent(); p != "" {
			parents = []string{p}
		}
	} else {
		for _, ctrl := range []string{"memory", "pids", "cpu"} {
			parents = append(parents, filepath.Join(cgroupRoot, ctrl, own[ctrl]))
		}
	}
	for _, p := range parents {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), "lathe-")
			if !ok || !e.IsDir() {
				continue
			}
			pid, _, _ := strings.Cut(rest, "-")
			n, err := strconv.Atoi(pid)
			if err != nil || n == os.Getpid() {
				continue
			}
			if syscall.Kill(n, 0) == syscall.ESRCH {
				os.Remove(filepath.Join(p, e.Name()))
			}
		}
	}
}

// cgroupV2 reports whether the machine has the unified hierarchy.
var cgroupV2 = sync.OnceValue(func() bool {
	_, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers"))
	return err == nil
})

// ownCgroups maps each v1 controller ("" for v2) to lathe's own cgroup.
// It is read once: a process that moves itself to another cgroup keeps
// creating the runs' groups beside the first.
var ownCgroups = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m
})

// cpuPeriod is the period of a CPU cap, in microseconds.
const cpuPeriod = 100_000

// cpuQuota is the runtime per period that caps a run at cpus CPUs; 0 for
// no cap.
func cpuQuota(cpus float64) int64 {
	if cpus <= 0 {
		return 0
	}
	// The kernel's smallest quota is 1 ms.
	return max(int64(cpus*cpuPeriod), 1000)
}

func writeFile(path string, v int64) error {
	return os.WriteFile(path, []byte(strconv.FormatInt(v, 10)), 0)
}

// removeCgroup removes a cgroup once the processes in it are gone; they
// may take a moment to leave after the run's init has been reaped.
func removeCgroup(d string) {
	for i := 0; i < 100; i++ {
		if err := os.Remove(d); err == nil || os.IsNotExist(err) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// oomKills returns how many processes the kernel has killed in s's memory
// group for running out of its memory: the oom_kill count of memory.events
// (v2) or memory.oom_control (v1, Linux 4.13 and later). A set is reused
// by later runs, so a run compares the count after it with the count
// before. It is 0 where s has no memory group or the kernel keeps no count.
func (s *cgroupSet) oomKills() int64 {
	if s == nil {
		return 0
	}
	for _, d := range s.dirs {
		for _, name := range []string{"memory.events", "memory.oom_control"} {
			f := readFields(filepath.Join(d, name))
			for i := 0; i+1 < len(f); i += 2 {
				if f[i] == "oom_kill" {
					n, _ := strconv.ParseInt(f[i+1], 10, 64)
					return n
				}
			}
		}
	}
	return 0
}

// reportOOM writes to the run's standard error, once the run is over, that
// the kernel killed a process of it for using more than its memory limit,
// when the count of such kills of its group grew from before. Killed by the
// memory cgroup, a process gets SIGKILL and cannot say why itself; without
// this, its caller saw only "signal: killed".
func reportOOM(cmd *exec.Cmd, cg *cgroupSet, before int64, limit int64) {
	if cmd.Stderr == nil || cg.oomKills() <= before {
		return
	}
	fmt.Fprintf(cmd.Stderr, "lathe: the sandbox killed the tool: it used all of its memory limit (%d MiB, [sandbox.limits] memory)\n", limit>>20)
}
