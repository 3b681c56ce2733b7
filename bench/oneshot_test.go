package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcptest"
)

// oneShot is a built lathe binary and a workspace to run it in, with
// lathe's state, configuration and cache kept in directories of the
// benchmark, outside the workspace.
type oneShot struct {
	bin, ws string
	env     []string
}

func newOneShot(b *testing.B, bin, config string) *oneShot {
	b.Helper()
	root := b.TempDir()
	o := &oneShot{bin: bin, ws: filepath.Join(root, "ws")}
	for _, d := range []string{"ws", "home", "state", "config", "cache"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			b.Fatal(err)
		}
	}
	o.env = append(os.Environ(), "HOME="+filepath.Join(root, "home"), "XDG_STATE_HOME="+filepath.Join(root, "state"),
		"XDG_CONFIG_HOME="+filepath.Join(root, "config"), "XDG_CACHE_HOME="+filepath.Join(root, "cache"), "LATHE_CACHE_DIR=", "LATHE_LOG=")
	for name, content := range map[string]string{"lathe.toml": config, "a.txt": "hello\n"} {
		if err := os.WriteFile(filepath.Join(o.ws, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if config != "" {
		o.run(b, "trust", "--yes", "lathe.toml")
	}
	return o
}

// run runs lathe with args in the workspace and returns its standard output.
func (o *oneShot) run(b *testing.B, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, append([]string{"--workspace", o.ws}, args...)...)
	cmd.Env = o.env
	cmd.Dir = o.ws
	out, err := cmd.Output()
	if ctx.Err() != nil {
		b.Fatalf("lathe %v did not end within a minute", args)
	}
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		b.Fatalf("lathe %v: %v\n%s", args, err, stderr)
	}
	return string(out)
}

// buildLathe builds the lathe command once for the benchmark.
func buildLathe(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "lathe")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/lathe-tools/lathe/cmd/lathe")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// BenchmarkOneShot runs the built lathe binary, one process per call, as a
// person or a script does:
//
//   - builtin: `lathe call read_file` in a workspace that configures
//     server-everything, against the same call in a workspace with no
//     server (the floor), alternating run by run; x-floor is the ratio of
//     the medians.
//   - upstream: `lathe call ev__echo` (server-everything's echo tool)
//     against the floor of any one-shot MCP call: a go-sdk client that
//     starts the same server, initializes a session, makes the one call and
//     closes, alternating run by run.
//
// A first run before timing lets lathe cache the server's tool list, as
// every run after a user's first does.
func BenchmarkOneShot(b *testing.B) {
	argv := mcptest.Everything(b)
	bin := buildLathe(b)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	withServer := newOneShot(b, bin, "[mcp.ev]\ncommand = ["+strings.Join(quoted, ", ")+"]\n")
	bare := newOneShot(b, bin, "")

	b.Run("builtin", func(b *testing.B) {
		call := func(o *oneShot) {
			if out := o.run(b, "call", "read_file", "path=a.txt"); !strings.Contains(out, "hello") {
				b.Fatalf("read_file printed %q", out)
			}
		}
		call(withServer)
		call(bare)
		compareRuns(b, func() { call(bare) }, func() { call(withServer) })
	})

	b.Run("upstream", func(b *testing.B) {
		call := func() {
			if out := withServer.run(b, "call", "ev__echo", "message=hi"); !strings.Contains(out, "Echo: hi") {
				b.Fatalf("ev__echo printed %q", out)
			}
		}
		// The floor stops its clock at the call's result: how long the
		// server then takes to exit is not part of it, and it is killed.
		var stop func()
		floor := func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.Command(argv[0], argv[1:]...)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).
				Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)})
			if err != nil || r.IsError {
				b.Fatalf("floor call: %v %+v", err, r)
			}
			stop = func() {
				cmd.Process.Kill()
				cs.Close()
			}
		}
		call()
		floor()
		stop()
		compareRuns(b, floor, call, func() { stop() })
	})
}

// compareRuns times floor and op alternately, b.N times each, and reports
// the medians and their ratio; after runs, untimed, after each floor.
func compareRuns(b *testing.B, floor, op func(), after ...func()) {
	fs := make([]time.Duration, 0, b.N)
	ops := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		floor()
		t1 := time.Now()
		for _, f := range after {
			f()
		}
		t2 := time.Now()
		op()
		ops = append(ops, time.Since(t2))
		fs = append(fs, t1.Sub(t0))
	}
	b.StopTimer()
	mf, mo := median(fs), median(ops)
	b.ReportMetric(float64(mo.Microseconds())/1000, "ms/run")
	b.ReportMetric(float64(mf.Microseconds())/1000, "floor-ms/run")
	b.ReportMetric(float64(mo)/float64(mf), "x-floor")
}
