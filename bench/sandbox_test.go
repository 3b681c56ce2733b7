//go:build linux

package bench

import (
	"bytes"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// BenchmarkSandbox runs the same command, /bin/sh -c 'echo ok', under each
// sandbox profile against a bare os/exec of it, timed in the same run in
// alternating rounds (compare). The standard profile builds its namespaces
// once per workspace (a template); standard-cold has a new workspace for
// every run, so each run pays for building them, as the first run of a
// one-shot lathe call does.
func BenchmarkSandbox(b *testing.B) {
	ws := b.TempDir()
	script := "echo ok"
	bare := func() {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Dir = ws
		cmd.Env = minimalEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil || out.String() != "ok\n" {
			b.Fatalf("bare: %v, %q", err, out.String())
		}
	}
	cases := []struct {
		name string
		cfg  sandbox.Config
		cold bool
	}{
		{"dev", sandbox.Config{Profile: sandbox.Dev, Workspace: ws}, false},
		{"standard", sandbox.Config{Profile: sandbox.Standard, Workspace: ws}, false},
		// The share of the network namespace and of the cgroups.
		{"standard-network", sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
			Perms: sandbox.Permissions{Network: true}}, false},
		{"standard-nocgroup", sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
			Limits: sandbox.Limits{Memory: -1, Processes: -1}}, false},
		{"standard-cold", sandbox.Config{Profile: sandbox.Standard}, true},
		{"hardened", sandbox.Config{Profile: sandbox.Hardened, Workspace: ws}, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg, p := c.cfg, c.name
			run := func() {
				if c.cold {
					dir, err := os.MkdirTemp(ws, "cold")
					if err != nil {
						b.Fatal(err)
					}
					cfg.Workspace = dir
				}
				cmd := exec.Command("/bin/sh", "-c", script)
				cmd.Dir = cfg.Workspace
				cmd.Env = cfg.Env()
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				cleanup, err := cfg.Wrap(cmd)
				defer cleanup()
				if err != nil {
					b.Skipf("%s: %v", p, err)
				}
				if err := cmd.Run(); err != nil || out.String() != "ok\n" {
					b.Fatalf("%s: %v, %q, %s", p, err, out.String(), errOut.String())
				}
			}
			compare(b, 1, bare, run)
		})
	}
}

// BenchmarkSupervise starts /bin/true through sandbox.Supervise, as every
// process tool without a profile and every MCP server starts, against a bare
// os/exec of it in a session of its own. Besides the wall-time ratio it
// reports the processor time the children used per run (child-cpu-ns/op for
// the supervised runs, floor-child-cpu-ns/op for the bare ones), which a busy
// machine's scheduling delays do not inflate: the supervisor adds a process
// that must run once more when the tool exits.
func BenchmarkSupervise(b *testing.B) {
	var floorCPU, superCPU time.Duration
	timed := func(super bool) func() {
		return func() {
			cmd := exec.Command("/bin/true")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if super {
				sandbox.Supervise(cmd)
			}
			before := childCPU()
			if err := cmd.Run(); err != nil {
				b.Fatalf("supervised %v: %v", super, err)
			}
			if super {
				superCPU += childCPU() - before
			} else {
				floorCPU += childCPU() - before
			}
		}
	}
	compare(b, 1, timed(false), timed(true))
	// compare runs each once to warm up and then in rounds of b.N/10+1.
	n := float64((b.N/10+1)*10 + 1)
	b.ReportMetric(float64(superCPU.Nanoseconds())/n, "child-cpu-ns/op")
	b.ReportMetric(float64(floorCPU.Nanoseconds())/n, "floor-child-cpu-ns/op")
}

// childCPU returns the processor time, user and system, of this process's
// waited-for children so far.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
