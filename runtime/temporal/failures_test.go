//go:build temporal

package temporal_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// startedOn waits for the call tagged tag to start on one of the workers
// and returns that worker.
func (e *env) startedOn(tag string) *workerProc {
	e.t.Helper()
	m := e.waitMarked(tag+".started.", 30*time.Second)
	name := strings.TrimPrefix(m, tag+".started.")
	for _, w := range e.workers {
		if w.name == name {
			return w
		}
	}
	e.t.Fatalf("marker %s names no worker", m)
	return nil
}

// TestWorkerKilledIdempotent: the worker running a call of an idempotent
// tool dies; the call runs again on the other worker of the queue, with
// the same ID, and its result comes back.
func TestWorkerKilledIdempotent(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	e.startWorker("w2", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan *tool.Outcome, 1)
	go func() { done <- call(ctx, ws, "k1", "slow_idempotent", `{"tag":"k","ms":2000}`) }()
	first := e.startedOn("k")
	first.kill()
	var out *tool.Outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not come back within 60s of its worker's death")
	}
	if err := out.Err(); err != nil {
		t.Fatalf("the call of an idempotent tool failed with its worker: %v", err)
	}
	other := "w1"
	if first.name == "w1" {
		other = "w2"
	}
	if want := "done by " + other + " as k1"; out.Result.Text() != want {
		t.Errorf("got %q, want %q", out.Result.Text(), want)
	}
}

// TestWorkerKilledNotIdempotent: the worker running a call of a tool that
// may destroy, and is not idempotent, dies; the call is not run again
// anywhere, and the caller gets a runtime failure that says why. A worker
// that claims its tool is idempotent is not believed: only the caller's
// own table could say so.
func TestWorkerKilledNotIdempotent(t *testing.T) {
	for _, tc := range []struct{ tool, more string }{
		{"slow_once", ""},
		{"slow_idempotent", `timeout = "50s"`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			e := newEnv(t, nil)
			e.startWorker("w1", "q1", "")
			e.startWorker("w2", "q1", "")
			ws := e.caller(routeAll("q1", map[string]string{tc.tool: tc.more}))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			done := make(chan *tool.Outcome, 1)
			go func() { done <- call(ctx, ws, "n1", tc.tool, `{"tag":"n","ms":2000}`) }()
			first := e.startedOn("n")
			first.kill()
			var out *tool.Outcome
			select {
			case out = <-done:
			case <-ctx.Done():
				t.Fatal("the call did not come back within 60s of its worker's death")
			}
			if out.Result == nil || out.Result.ErrorKind != tool.KindRuntimeFailure ||
				!strings.Contains(out.Result.Text(), "not marked idempotent") {
				t.Fatalf("want a runtime failure saying the call was not run again, got %+v", out.Result)
			}
			time.Sleep(time.Second)
			if m := e.marked("n.started."); len(m) != 1 {
				t.Errorf("the call started %d times (%v), want once", len(m), m)
			}
		})
	}
}

// TestServerRestart: the Temporal server stops in the middle of a call and
// comes back with its state; the call of an idempotent tool still ends
// with its result, and the caller does not hang.
func TestServerRestart(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan *tool.Outcome, 1)
	go func() { done <- call(ctx, ws, "r1", "slow_idempotent", `{"tag":"r","ms":3000}`) }()
	e.startedOn("r")
	e.srv.restart(time.Second)
	var out *tool.Outcome
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatal("the call did not come back within 90s of the server's restart")
	}
	if err := out.Err(); err != nil {
		t.Fatalf("the call did not survive the server's restart: %v", err)
	}
	if want := "done by w1 as r1"; out.Result.Text() != want {
		t.Errorf("got %q, want %q", out.Result.Text(), want)
	}
}

// TestWorkerInOtherNetns: a worker in a network namespace of its own,
// reaching the server over a veth pair as another machine would over a
// network, serves the caller's calls.
func TestWorkerInOtherNetns(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("making a network namespace needs root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no ip command (iproute2) to make a network namespace with")
		}
		t.Skip("no ip command (iproute2) to make a network namespace with")
	}
	// Names of our own, from the process ID, so that parallel runs do not
	// meet; the kernel caps an interface's name at 15 bytes.
	id := os.Getpid() % 100000
	ns, hostIf, nsIf := fmt.Sprintf("lathe-t-%d", id), fmt.Sprintf("lth%d", id), fmt.Sprintf("ltn%d", id)
	subnet := fmt.Sprintf("10.%d.%d", 200+id%50, id%250)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() { exec.Command(ip, "netns", "delete", ns).Run() })
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	t.Cleanup(func() { exec.Command(ip, "link", "delete", hostIf).Run() })
	run("link", "set", nsIf, "netns", ns)
	run("addr", "add", subnet+".1/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", ns, "addr", "add", subnet+".2/30", "dev", nsIf)
	run("-n", ns, "link", "set", nsIf, "up")
	run("-n", ns, "link", "set", "lo", "up")

	srv := startDevServer(t, "0.0.0.0")
	e := newEnv(t, srv)
	e.startWorker("far", "q1", fmt.Sprintf("%s.1:%d", subnet, srv.port), ip, "netns", "exec", ns)
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := call(ctx, ws, "f1", "noop", `{}`)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	mine, _ := os.Readlink("/proc/self/ns/net")
	who, theirs, _ := strings.Cut(out.Result.Text(), " ")
	if who != "far" || theirs == "" || theirs == mine {
		t.Errorf("the call did not run in the other namespace: got %q, this one is %s", out.Result.Text(), mine)
	}
}
