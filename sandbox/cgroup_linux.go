package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const cgroupRoot = "/sys/fs/cgroup"

var cgroupSeq atomic.Int64

// newCgroup creates cgroups for one run with the memory and process limits
// of l, where the machine lets lathe create them: under cgroup v2 one group
// beside lathe's own, under v1 one group per controller (memory, pids). It
// returns the cgroup.procs files the init joins and a cleanup that removes
// the groups. A machine without writable cgroups gives no files: the
// rlimits still hold.
func newCgroup(l Limits) (procs []string, cleanup func()) {
	name := fmt.Sprintf("lathe-%d-%d", os.Getpid(), cgroupSeq.Add(1))
	var dirs []string
	cleanup = func() {
		for _, d := range dirs {
			removeCgroup(d)
		}
	}
	own := ownCgroups()
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		d := filepath.Join(cgroupRoot, own[""], name)
		if os.Mkdir(d, 0o755) != nil {
			return nil, cleanup
		}
		dirs = append(dirs, d)
		// A limit the group cannot take (its controller not enabled for
		// lathe's group) leaves the group without it; pids.max then does
		// not exist, which the escape suite checks.
		okMem := l.Memory > 0 && writeFile(filepath.Join(d, "memory.max"), l.Memory) == nil
		okPids := l.Processes > 0 && writeFile(filepath.Join(d, "pids.max"), int64(l.Processes)) == nil
		if !okMem && !okPids {
			cleanup()
			return nil, func() {}
		}
		writeFile(filepath.Join(d, "memory.swap.max"), 0)
		return []string{filepath.Join(d, "cgroup.procs")}, cleanup
	}
	limits := map[string]struct {
		file string
		v    int64
	}{
		"memory": {"memory.limit_in_bytes", l.Memory},
		"pids":   {"pids.max", int64(l.Processes)},
	}
	for _, ctrl := range []string{"memory", "pids"} {
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
		if writeFile(filepath.Join(d, lim.file), lim.v) != nil {
			removeCgroup(d)
			continue
		}
		if ctrl == "memory" {
			// Without swap accounting the file is missing, and the
			// address-space rlimit still bounds each process.
			writeFile(filepath.Join(d, "memory.memsw.limit_in_bytes"), lim.v)
		}
		dirs = append(dirs, d)
		procs = append(procs, filepath.Join(d, "cgroup.procs"))
	}
	return procs, cleanup
}

// ownCgroups maps each v1 controller ("" for v2) to lathe's own cgroup.
func ownCgroups() map[string]string {
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
