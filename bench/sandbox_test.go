//go:build linux

package bench

import (
	"bytes"
	"os/exec"
	"syscall"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// BenchmarkSandbox runs the same command, /bin/sh -c 'echo ok', under each
// sandbox profile against a bare os/exec of it, timed in the same run in
// alternating rounds (compare).
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
	}{
		{"dev", sandbox.Config{Profile: sandbox.Dev, Workspace: ws}},
		{"standard", sandbox.Config{Profile: sandbox.Standard, Workspace: ws}},
		// The share of the network namespace and of the cgroups.
		{"standard-network", sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
			Perms: sandbox.Permissions{Network: true}}},
		{"standard-nocgroup", sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
			Limits: sandbox.Limits{Memory: -1, Processes: -1}}},
		{"hardened", sandbox.Config{Profile: sandbox.Hardened, Workspace: ws}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			cfg, p := c.cfg, c.name
			run := func() {
				cmd := exec.Command("/bin/sh", "-c", script)
				cmd.Dir = ws
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
