//go:build linux && amd64

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestEscapeNamespaces checks that a run can neither make namespaces of its
// own, which would give it back capabilities, nor use the capabilities of
// the namespaces it is in.
func TestEscapeNamespaces(t *testing.T) {
	requireStandard(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is needed to make raw system calls")
	}
	cfg := sandbox.Config{Workspace: t.TempDir()}
	cases := []struct {
		name, script, want string
	}{
		// clone(CLONE_NEWUSER|SIGCHLD): refused by seccomp.
		{"clone new user", `perl -e '$r = syscall(56, 0x10000011, 0, 0, 0, 0); print "$r $!\n"'`, "-1 Operation not permitted"},
		// clone(CLONE_NEWNET|SIGCHLD)
		{"clone new net", `perl -e '$r = syscall(56, 0x40000011, 0, 0, 0, 0); print "$r $!\n"'`, "-1 Operation not permitted"},
		// clone3 cannot be inspected, so it is not there at all.
		{"clone3", `perl -e '$r = syscall(435, 0, 0); print "$r $!\n"'`, "-1 Function not implemented"},
		{"unshare", `perl -e '$r = syscall(272, 0x10000000); print "$r $!\n"'`, "-1 Operation not permitted"},
		// A plain fork still works.
		{"fork", `sh -c 'echo child'`, "child"},
		{"capabilities", `grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status | tr -s '\t' ' '`,
			"CapPrm: 0000000000000000\nCapEff: 0000000000000000\nCapBnd: 0000000000000000\nCapAmb: 0000000000000000"},
		// Root of the namespace gains nothing by executing a program.
		{"capabilities after exec", `sh -c "grep ^CapEff /proc/self/status" | tr -s '\t' ' '`, "CapEff: 0000000000000000"},
		{"mount", `mount -t tmpfs none /tmp 2>/dev/null && echo mounted || echo refused`, "refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := run(t, cfg, c.script)
			if strings.TrimSpace(out) != c.want {
				t.Errorf("got %q (%v), want %q", strings.TrimSpace(out), err, c.want)
			}
		})
	}
}

// TestRunsShareTemplate checks what runs of one shape share (the network
// namespace, built once) and what each has of its own (PID, mount and IPC
// namespaces, /tmp). The runs overlap, so that no namespace's number can be
// reused by the kernel between them.
func TestRunsShareTemplate(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Workspace: t.TempDir()}
	script := `readlink /proc/self/ns/net /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/ipc; ` +
		`cat /tmp/mine 2>/dev/null; echo here > /tmp/mine; sleep 0.5`
	outs := make([][]string, 3)
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := run(t, cfg, script)
			if err != nil {
				t.Errorf("%v: %s", err, out)
			}
			outs[i] = strings.Fields(out)
		}()
	}
	wg.Wait()
	for _, o := range outs {
		if len(o) != 4 {
			t.Fatalf("want four namespaces and no file left in /tmp by another run, got %q", outs)
		}
	}
	for i, n := range []string{"network", "PID", "mount", "IPC"} {
		seen := map[string]bool{}
		for _, o := range outs {
			seen[o[i]] = true
		}
		if i == 0 && len(seen) != 1 {
			t.Errorf("runs of one shape are in different network namespaces: %v", seen)
		}
		if i > 0 && len(seen) != len(outs) {
			t.Errorf("runs share a %s namespace: %v", n, seen)
		}
	}
	// Another shape has another network namespace.
	other, err := run(t, sandbox.Config{Workspace: t.TempDir()}, "readlink /proc/self/ns/net")
	if err != nil || strings.TrimSpace(other) == outs[0][0] {
		t.Errorf("another workspace shares the network namespace %s: %v", other, err)
	}
}

// TestConcurrentRuns runs many commands of one shape at once; each must
// see its own /tmp and nothing of the others'.
func TestConcurrentRuns(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Workspace: t.TempDir()}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 3 {
				name := fmt.Sprintf("f%d-%d", i, j)
				out, err := run(t, cfg, "touch /tmp/"+name+" && ls /tmp | grep ^f")
				if err != nil || strings.TrimSpace(out) != name {
					t.Errorf("run %s: /tmp holds %q (%v), want only its own file", name, out, err)
				}
			}
		}()
	}
	wg.Wait()
}

// TestWorkspaceReplaced checks that a workspace removed and made again is
// the one a run sees, not the old directory its namespaces were built with.
func TestWorkspaceReplaced(t *testing.T) {
	requireStandard(t)
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := sandbox.Config{Workspace: ws}
	if out, err := run(t, cfg, "echo old > f && cat f"); err != nil || strings.TrimSpace(out) != "old" {
		t.Fatalf("%v: %s", err, out)
	}
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "f"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, cfg, "cat f && echo written > g")
	if err != nil || strings.TrimSpace(out) != "new" {
		t.Fatalf("the run saw %q (%v), want the new workspace's file", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "g")); err != nil || string(b) != "written\n" {
		t.Errorf("a file written in the run is not in the new workspace: %q, %v", b, err)
	}
}

// TestCgroupReused checks that a run after another, with the same limits,
// takes the group the first left empty, and that its limit still holds.
func TestCgroupReused(t *testing.T) {
	requireStandard(t)
	if !pidsCgroup(t) {
		skipWithoutCgroups(t, "no pids cgroup here")
	}
	cfg := sandbox.Config{Workspace: t.TempDir(), Limits: sandbox.Limits{Processes: 9}}
	// The run's groups, as /proc/self/cgroup names them: the pids line
	// under v1, the one line under v2.
	script := `grep -E '^[0-9]+:(pids)?:' /proc/self/cgroup`
	first, err := run(t, cfg, script)
	if err != nil {
		t.Fatalf("%v: %s", err, first)
	}
	second, err := run(t, cfg, script)
	if err != nil {
		t.Fatalf("%v: %s", err, second)
	}
	if first != second || !strings.Contains(first, "lathe-") {
		t.Errorf("the second run is in another group:\n%s\n%s", first, second)
	}
	// The reused group still stops a run at its limit.
	out, _ := run(t, cfg, `i=0; while [ $i -lt 20 ]; do sleep 2 >/dev/null 2>&1 & i=$((i+1)); done 2>&1 | head -c 200`)
	if !strings.Contains(out, "fork") && !strings.Contains(out, "Resource") {
		t.Errorf("20 processes started under a limit of 9 in a reused group: %s", out)
	}
}

// TestCPUCap checks that a run capped at a quarter of a CPU gets no more:
// two busy loops for one second of wall time use about a quarter second of
// processor time between them, not two.
func TestCPUCap(t *testing.T) {
	requireStandard(t)
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is needed for the busy loop")
	}
	files, cleanup := sandbox.NewCgroup(sandbox.Limits{CPUs: 0.25})
	defer cleanup()
	capped := false
	for _, f := range files {
		for _, name := range []string{"cpu.cfs_quota_us", "cpu.max"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), name)); err == nil {
				capped = true
			}
		}
	}
	if !capped {
		skipWithoutCgroups(t, "no cpu cgroup can be created here")
	}
	busy := `perl -MTime::HiRes=time -e 'fork; $t = time + 1; 1 while time < $t; wait; @t = times; printf "%.2f\n", $t[0] + $t[1] + $t[2] + $t[3]'`
	out, err := run(t, sandbox.Config{Workspace: t.TempDir(), Limits: sandbox.Limits{CPUs: 0.25}}, busy)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var used float64
	if _, err := fmt.Sscan(out, &used); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	// One second of wall time at a quarter of a CPU: about 0.25 s.
	if used > 0.6 {
		t.Errorf("the run used %.2f s of processor time under a cap of 0.25 CPUs", used)
	}
	t.Logf("%.2f s of processor time", used)
}

// TestReadFileReplaced checks that a read path replaced by renaming a new
// file over it, as programs update /etc/resolv.conf, is seen anew.
func TestReadFileReplaced(t *testing.T) {
	requireStandard(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "conf")
	write := func(content string) {
		tmp := f + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, f); err != nil {
			t.Fatal(err)
		}
	}
	write("first\n")
	cfg := sandbox.Config{Workspace: t.TempDir(), Perms: sandbox.Permissions{Read: []string{f}}}
	if out, err := run(t, cfg, "cat "+f); err != nil || strings.TrimSpace(out) != "first" {
		t.Fatalf("%v: %s", err, out)
	}
	write("second\n")
	if out, err := run(t, cfg, "cat "+f); err != nil || strings.TrimSpace(out) != "second" {
		t.Errorf("after the file was replaced the run read %q (%v), want the new file", out, err)
	}
}

// TestReadPathHoldsWorkspace gives the sandbox the temporary directory to
// read, with the workspace inside it: the run sees the host's temporary
// directory (/tmp, or TMPDIR where it is set), read only, with the
// workspace writable inside it.
func TestReadPathHoldsWorkspace(t *testing.T) {
	requireStandard(t)
	ws := t.TempDir()
	tmp := filepath.Dir(filepath.Dir(ws)) // t.TempDir makes two levels in TMPDIR
	if err := os.WriteFile(filepath.Join(ws, "in"), []byte("here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := sandbox.Config{Workspace: ws, Perms: sandbox.Permissions{Read: []string{tmp}}}
	out, err := run(t, cfg, "cat "+ws+"/in && echo made > "+ws+"/out && cat out")
	if err != nil || out != "here\nmade\n" {
		t.Errorf("got %q (%v), want the workspace's file and a written one", out, err)
	}
}
