package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
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
// group beside lathe's own, under v1 one group per controller (memory,
// pids, and cpu when l caps CPUs). It
// returns the files the init writes to join them and a cleanup that gives
// the groups back once the run is over. A machine without writable cgroups
// gives no files: the rlimits still hold.
//
// Under v1 the init joins through the tasks file, which moves only the
// writing thread; the init has one. Joining through cgroup.procs would
// take the kernel's lock on every thread group, which waits for an RCU
// grace period: about a millisecond on each call.
func newCgroup(l Limits) (join []string, cleanup func()) {
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
			return s.join, func() { putCgroup(s) }
		}
	}
	idleCgroups.Unlock()
	s := makeCgroup(l)
	if s == nil {
		return nil, func() {}
	}
	return s.join, func() { putCgroup(s) }
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
	for _, d := range s.dirs {
		removeCgroup(d)
	}
}

// makeCgroup creates a set with the limits of l, or returns nil.
func makeCgroup(l Limits) *cgroupSet {
	name := fmt.Sprintf("lathe-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	s := &cgroupSet{limits: l}
	own := ownCgroups()
	if cgroupV2() {
		d := filepath.Join(cgroupRoot, own[""], name)
		if os.Mkdir(d, 0o755) != nil {
			return nil
		}
		// A limit the group cannot take (its controller not enabled for
		// lathe's group) leaves the group without it; pids.max then does
		// not exist, which the escape suite checks.
		okMem := l.Memory > 0 && writeFile(filepath.Join(d, "memory.max"), l.Memory) == nil
		okPids := l.Processes > 0 && writeFile(filepath.Join(d, "pids.max"), int64(l.Processes)) == nil
		okCPU := l.CPUs > 0 && os.WriteFile(filepath.Join(d, "cpu.max"),
			[]byte(fmt.Sprintf("%d %d", cpuQuota(l.CPUs), cpuPeriod)), 0) == nil
		if !okMem && !okPids && !okCPU {
			removeCgroup(d)
			return nil
		}
		writeFile(filepath.Join(d, "memory.swap.max"), 0)
		s.dirs = []string{d}
		s.join = []string{filepath.Join(d, "cgroup.procs")}
		return s
	}
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
	}
	if len(s.dirs) == 0 {
		return nil
	}
	return s
}

// sweepCgroups removes the groups that lathe processes no longer running
// kept for reuse (an exiting process leaves its idle groups behind).
func sweepCgroups() {
	own := ownCgroups()
	var parents []string
	if cgroupV2() {
		parents = []string{filepath.Join(cgroupRoot, own[""])}
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
