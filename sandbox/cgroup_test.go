//go:build linux

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// skipWithoutCgroups skips a test that needs cgroups lathe can create,
// unless LATHE_TEST_CGROUPS=required says the machine has them: then their
// absence is a failure. .ci/vm/run sets it on its cgroup v2 kernel, so that
// the v2 code cannot pass there by skipping.
func skipWithoutCgroups(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("LATHE_TEST_CGROUPS") == "required" {
		t.Fatalf("%s, and LATHE_TEST_CGROUPS=required", why)
	}
	t.Skip(why)
}

// TestCgroupLimits checks that a run's groups hold the limits of its
// Config, read back from the kernel's own files, under v1 or v2.
func TestCgroupLimits(t *testing.T) {
	requireStandard(t)
	files, cleanup := sandbox.NewCgroup(sandbox.Limits{Memory: 64 << 20, Processes: 9, CPUs: 0.5})
	defer cleanup()
	if len(files) == 0 {
		skipWithoutCgroups(t, "no cgroup can be created here")
	}
	want := map[string]string{ // file → value, where the controller is there
		"memory.max":            "67108864",
		"memory.limit_in_bytes": "67108864",
		"pids.max":              "9",
		"cpu.max":               "50000 100000",
		"cpu.cfs_quota_us":      "50000",
		"memory.oom.group":      "1",
	}
	found := map[string]bool{}
	for _, f := range files {
		dir := filepath.Dir(f)
		if !strings.Contains(filepath.Base(dir), fmt.Sprintf("lathe-%d-", os.Getpid())) {
			t.Errorf("the group %s is not named after lathe's process", dir)
		}
		if sandbox.CgroupV2() != (filepath.Base(f) == "cgroup.procs") {
			t.Errorf("the run joins through %s (cgroup v2: %v)", f, sandbox.CgroupV2())
		}
		for name, v := range want {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				continue
			}
			found[name] = true
			if got := strings.TrimSpace(string(b)); got != v {
				t.Errorf("%s/%s = %q, want %q", dir, name, got, v)
			}
		}
	}
	t.Logf("groups %v; limits found: %v", files, found)
	if !found["pids.max"] {
		skipWithoutCgroups(t, "no pids controller for lathe's groups here")
	}
	if sandbox.CgroupV2() && !(found["memory.max"] && found["cpu.max"] && found["memory.oom.group"]) {
		skipWithoutCgroups(t, "the memory and cpu controllers are not all enabled for lathe's groups")
	}
}

// TestCgroupV2Delegated runs where lathe's process was started alone in a
// v2 group whose controllers are not enabled for children, as a systemd
// service with Delegate=yes is (.ci/vm/run arranges it and sets
// LATHE_TEST_CGROUP_DELEGATED). lathe must move itself into a leaf,
// lathe-PID, enable the controllers in its group, and make the runs'
// groups beside its leaf.
func TestCgroupV2Delegated(t *testing.T) {
	group := os.Getenv("LATHE_TEST_CGROUP_DELEGATED")
	if group == "" || !sandbox.CgroupV2() {
		t.Skip("needs a delegated cgroup v2 group (LATHE_TEST_CGROUP_DELEGATED=/its/path, as .ci/vm/run sets)")
	}
	requireStandard(t)
	files, cleanup := sandbox.NewCgroup(sandbox.Limits{Processes: 9})
	defer cleanup()
	if len(files) != 1 {
		t.Fatalf("groups %v, want one", files)
	}
	if got, want := filepath.Dir(filepath.Dir(files[0])), filepath.Join("/sys/fs/cgroup", group); got != want {
		t.Errorf("the run's group is under %s, want %s", got, want)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("0::%s/lathe-%d\n", group, os.Getpid()); string(self) != want {
		t.Errorf("lathe's own group is %q, want %q", self, want)
	}
	ctl, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", group, "cgroup.subtree_control"))
	for _, c := range []string{"memory", "pids", "cpu"} {
		if !strings.Contains(string(ctl), c) {
			t.Errorf("%s is not enabled for the runs' groups: subtree_control %q", c, ctl)
		}
	}
	// The init is cloned into the run's group rather than joining it.
	cfg := sandbox.Config{Workspace: t.TempDir(), Limits: sandbox.Limits{Processes: 9}}
	cmd := exec.Command("/bin/true")
	cleanup2, err := cfg.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup2()
	if cmd.SysProcAttr == nil || !cmd.SysProcAttr.UseCgroupFD || slices.Contains(cmd.Args, "cgroup") {
		t.Errorf("the init is not cloned into its group: %q", cmd.Args)
	}
	out, err := run(t, cfg, "cat /proc/self/cgroup")
	if err != nil || !strings.HasPrefix(out, "0::"+group+"/lathe-") {
		t.Errorf("a run is in %q (%v), want a group under %s", out, err, group)
	}
}

// TestCgroupV2Shared runs where lathe's process shares its v2 group with
// another process, as when it is started from a login shell
// (LATHE_TEST_CGROUP_SHARED names the group; .ci/vm/go-test arranges it).
// lathe must leave the group as it is: enabling even the cpu or pids
// controller in a group with processes makes it a thread root, whose
// children no process can join, so every run would fail. The runs get no
// group, and still run.
func TestCgroupV2Shared(t *testing.T) {
	group := os.Getenv("LATHE_TEST_CGROUP_SHARED")
	if group == "" || !sandbox.CgroupV2() {
		t.Skip("needs a shared cgroup v2 group (LATHE_TEST_CGROUP_SHARED=/its/path, as .ci/vm/go-test sets)")
	}
	if files, cleanup := sandbox.NewCgroup(sandbox.Limits{Memory: 64 << 20, Processes: 9, CPUs: 1}); len(files) > 0 {
		cleanup()
		t.Fatalf("a run got groups %v in a shared group", files)
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	if want := "0::" + group + "\n"; string(self) != want {
		t.Errorf("lathe's own group is %q, want %q: it moved", self, want)
	}
	if ctl, _ := os.ReadFile(filepath.Join("/sys/fs/cgroup", group, "cgroup.subtree_control")); len(strings.TrimSpace(string(ctl))) > 0 {
		t.Errorf("controllers were enabled in the shared group: %q", ctl)
	}
	out, err := run(t, sandbox.Config{Workspace: t.TempDir(), Limits: sandbox.Limits{Processes: 9}}, "echo ok")
	if err != nil || out != "ok\n" {
		t.Errorf("a standard run failed: %v\n%s", err, out)
	}
}
