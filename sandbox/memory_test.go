package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// goToolThreads is how many threads of its own the test binary starts as
// a Go tool (threadsMain): as many as a Go program doing parallel work
// runs on a 16-CPU machine, where GOMAXPROCS is 16.
const goToolThreads = 16

// threadsMain lets the test binary play a Go tool that works in parallel,
// when argv[1] is "threads": it holds argv[2] goroutines each on an OS
// thread of its own at once, then prints "threads ok". The binary is linked
// with cgo, as most Go programs are (the net and os/user packages use
// it), so each thread is a pthread with a stack of RLIMIT_STACK, and the C
// library gives each thread a malloc arena of its own.
func threadsMain() {
	if len(os.Args) != 3 || os.Args[1] != "threads" {
		return
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	var all, done sync.WaitGroup
	all.Add(n)
	done.Add(n)
	release := make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			all.Done()
			<-release
			done.Done()
		}()
	}
	all.Wait()
	close(release)
	done.Wait()
	fmt.Println("threads ok")
	os.Exit(0)
}

// TestGoToolStartsUnderDefaultLimits starts a Go tool again and again
// under the default limits of each profile. Every start must succeed: a
// limit on memory that counts the address space a runtime reserves but
// never touches (Go's heap index, glibc's malloc arenas, thread stacks)
// made such tools fail to start a thread, or abort out of memory, with a
// few hundred MiB of the GiB still unused.
func TestGoToolStartsUnderDefaultLimits(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const starts = 10
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		t.Run(string(p), func(t *testing.T) {
			if p == sandbox.Standard {
				requireStandard(t)
			}
			cfg := sandbox.Config{Profile: p, Workspace: t.TempDir(),
				Perms: sandbox.Permissions{Read: []string{filepath.Dir(exe)}}}
			failed := 0
			for i := range starts {
				out, err := runArgv(t, cfg, exe, "threads", strconv.Itoa(goToolThreads))
				if err != nil || !strings.Contains(out, "threads ok") {
					failed++
					if failed == 1 {
						t.Errorf("start %d of %d: %v\n%s", i+1, starts, err, outputTail(out))
					}
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d starts failed", failed, starts)
			}
		})
	}
}

// TestDevMemoryHog checks the one bound on memory under dev, the address
// space, which the reserve for runtimes loosens but does not remove.
func TestDevMemoryHog(t *testing.T) {
	cfg := sandbox.Config{Profile: sandbox.Dev, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Memory: 64 << 20, Wall: 20 * time.Second}}
	requireMemoryLimit(t, cfg)
}

// TestMemoryKillIsReported checks that a tool killed by its memory cgroup,
// which gets SIGKILL and can say nothing itself, is reported on its
// standard error as having used up its memory limit; and that a run after
// it in the same reused group, within the limit, is not.
func TestMemoryKillIsReported(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Memory: 64 << 20, Wall: 20 * time.Second}}
	if !sandbox.MemoryCgroup(cfg) {
		t.Skip("no memory cgroup here: a hog fails to allocate under RLIMIT_AS, and says so itself")
	}
	runHog := func(size int) (stdout, stderr string, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", memoryHog+strconv.Itoa(size))
		var out, errs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errs
		cleanup, err := cfg.Wrap(cmd)
		if err != nil {
			t.Fatalf("Wrap: %v", err)
		}
		err = cmd.Run()
		cleanup()
		if ctx.Err() != nil {
			t.Fatalf("the hog of %d bytes did not end within 20s", size)
		}
		return out.String(), errs.String(), err
	}
	const report = "it used all of its memory limit (64 MiB"
	out, errs, err := runHog(1 << 30)
	if err == nil || !strings.Contains(out, "perl-allocating") || strings.Contains(out, "held") {
		t.Fatalf("a 1 GiB hog under 64 MiB: %v, output %q", err, out)
	}
	if !strings.Contains(errs, report) {
		t.Errorf("the killed hog's standard error: %q, want it to say %q", errs, report)
	}
	out, errs, err = runHog(1 << 20)
	if err != nil || !strings.Contains(out, "held") || strings.Contains(errs, report) {
		t.Errorf("a 1 MiB hog after it: %v, output %q, standard error %q, want it to hold and no report", err, out, errs)
	}
}

// TestProcessLimitIsTheRunsOwn checks that where a pids cgroup bounds a
// run, the run gets no RLIMIT_NPROC: the rlimit counts the processes and
// threads of every run of the same template (of every process of the user,
// under dev), so that a Go tool failed to start a thread while other runs
// were going, far within its own limit. Where there is no pids group, the
// rlimit is the only bound, and stays.
func TestProcessLimitIsTheRunsOwn(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(), Limits: sandbox.Limits{Processes: 77}}
	files, release := sandbox.NewCgroup(cfg.Limits.WithDefaults())
	pids := false
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(filepath.Dir(f), "pids.max")); err == nil {
			pids = true
		}
	}
	release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c",
		`while read a b c d; do [ "$a $b" = "Max processes" ] && echo "$c"; done </proc/self/limits; exit 0`)
	cleanup, err := cfg.Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	cleanup()
	if err != nil {
		t.Fatalf("reading the run's limits: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	t.Logf("pids group: %v; RLIMIT_NPROC in the run: %s", pids, got)
	switch {
	case pids && got == "77":
		t.Errorf("the run has a pids group and RLIMIT_NPROC %s as well, which counts other runs' processes", got)
	case !pids && got != "77":
		t.Errorf("the run has no pids group and RLIMIT_NPROC %s, want 77", got)
	}
}
