//go:build linux

package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools/command"
)

// BenchmarkRunCommand calls run_command with "echo ok" through the engine
// under the dev and standard profiles, against the floor: a bare os/exec of
// /bin/sh -c 'echo ok' in the same directory with the minimal environment,
// timed in the same run in alternating rounds, with the processor time of
// each side (cpuCompare).
func BenchmarkRunCommand(b *testing.B) {
	ws := b.TempDir()
	floor := func() {
		cmd := exec.Command("/bin/sh", "-c", "echo ok")
		cmd.Dir = ws
		cmd.Env = minimalEnv()
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil || out.String() != "ok\n" {
			b.Fatalf("floor: %v, %q", err, out.String())
		}
	}
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		b.Run(string(p), func(b *testing.B) {
			e := lathe.New(lathe.Options{})
			b.Cleanup(func() { e.Close() })
			rc, err := command.New(ws, sandbox.Config{Profile: p})
			if err != nil {
				b.Fatal(err)
			}
			if err := e.Register(rc); err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(`{"command":"echo ok"}`)
			cpuCompare(b, floor, func() {
				out := e.Call(context.Background(), &tool.Call{Name: "run_command", Arguments: args})
				if out.Result == nil || out.Result.IsError || !strings.Contains(out.Result.Text(), "ok") {
					b.Skipf("run_command under %s: %+v", p, out.Result)
				}
			})
		})
	}
}
