//go:build temporal

package temporal_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// TestRoundTrip: a caller whose configuration routes tools to a queue
// lists the tools the queue's worker publishes, and a call goes to the
// worker and comes back whole: its result, a question and the answer to
// it, and the worker's progress.
func TestRoundTrip(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", map[string]string{"noop": "read_only = true"}))
	d, ok := ws.Engine.Lookup("noop")
	if !ok {
		t.Fatalf("the caller has no tool noop from the queue; it has %v", ws.Engine.Tools())
	}
	if d.Runtime != "temporal" || d.Description != "a test tool" || string(d.InputSchema) != `{"type":"object"}` {
		t.Errorf("noop's definition did not come across whole: %+v", d)
	}
	// The worker says noop is read-only and ask is too; the caller takes
	// the first from its own table, and not the second from the worker.
	if !d.Annotations.ReadOnlyHint {
		t.Errorf("the caller's read_only = true did not apply: %+v", d.Annotations)
	}
	if d, _ := ws.Engine.Lookup("ask"); d.Annotations.ReadOnlyHint {
		t.Errorf("the worker's claim that ask is read-only was taken: %+v", d.Annotations)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	out := call(ctx, ws, "c1", "noop", `{}`)
	if err := out.Err(); err != nil || !strings.HasPrefix(out.Result.Text(), "w1 ") {
		t.Fatalf("noop: %v %q", err, out.Result.Text())
	}

	out = call(ctx, ws, "c2", "ask", `{}`)
	if out.Question == nil || out.Question.ID != "color" || strings.Join(out.Question.Options, ",") != "red,green" || out.Question.Default != "red" {
		t.Fatalf("ask did not come back as its question: %+v %+v", out.Question, out.Result)
	}
	out = ws.Engine.Call(ctx, &tool.Call{ID: "c2", Name: "ask", Arguments: []byte(`{}`), Answers: map[string]any{"color": "green"}})
	if err := out.Err(); err != nil || out.Result.Text() != "color green" || string(out.Result.Structured) != `{"color":"green"}` {
		t.Fatalf("the answer did not reach the tool: %v %q %s", err, out.Result.Text(), out.Result.Structured)
	}

	out = call(ctx, ws, "c3", "slow_once", `{"ms":10,"tag":"id"}`)
	if err := out.Err(); err != nil || out.Result.Text() != "done by w1 as c3" {
		t.Fatalf("the call's ID did not reach the tool as its idempotency key: %v %q", err, out.Result.Text())
	}

	var got []tool.Progress
	pctx := tool.WithHooks(ctx, tool.Hooks{Progress: func(p tool.Progress) { got = append(got, p) }})
	out = call(pctx, ws, "c4", "progress", `{}`)
	if err := out.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[len(got)-1].Total != 3 || !strings.HasPrefix(got[len(got)-1].Message, "step ") {
		t.Errorf("no progress came across: %+v", got)
	}
}

// TestToolErrorNotRetried: a tool's own error result is the call's
// outcome, run once, not a failure the machinery retries.
func TestToolErrorNotRetried(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", map[string]string{"fails": "idempotent = true"}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := call(ctx, ws, "f1", "fails", `{"tag":"f"}`)
	if out.Result == nil || !out.Result.IsError || out.Result.ErrorKind != tool.KindToolError || out.Result.Text() != "it broke" {
		t.Fatalf("want the tool's error result, got %+v", out.Result)
	}
	time.Sleep(time.Second)
	if n := len(e.marked("f.attempt.f1.")); n != 1 {
		t.Errorf("the tool ran %d times, want once", n)
	}
}

// TestWorkerPolicyHolds: the caller's configuration allows danger, the
// worker's denies it; the worker's holds, and the tool never runs. The
// same tool that the worker does not deny runs, so the denial is the
// policy's.
func TestWorkerPolicyHolds(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := call(ctx, ws, "d1", "danger", `{"tag":"d","ms":1}`)
	if out.Result == nil || out.Result.ErrorKind != tool.KindDenied {
		t.Fatalf("want the worker's denial, got %+v", out.Result)
	}
	out = call(ctx, ws, "d2", "danger_allowed", `{"tag":"da","ms":1}`)
	if err := out.Err(); err != nil {
		t.Fatalf("the same tool, not denied by the worker: %v", err)
	}
	if len(e.marked("d.started")) != 0 {
		t.Error("the denied tool ran on the worker")
	}
	if len(e.marked("da.started")) != 1 {
		t.Error("the allowed tool did not run on the worker")
	}
}

// TestCancelReachesTool: cancelling a call on the caller cancels the
// tool's context on the worker within a second.
func TestCancelReachesTool(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cctx, stop := context.WithCancel(ctx)
	done := make(chan *tool.Outcome, 1)
	go func() { done <- call(cctx, ws, "x1", "slow_once", `{"tag":"x","ms":30000}`) }()
	e.waitMarked("x.started.", 30*time.Second)
	at := time.Now()
	stop()
	select {
	case out := <-done:
		if out.Result == nil || out.Result.ErrorKind != tool.KindCancelled {
			t.Errorf("want a cancelled outcome, got %+v", out.Result)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return within 10s")
	}
	e.waitMarked("x.cancelled", 5*time.Second)
	b := readMarker(t, e, "x.cancelled")
	when, err := time.Parse(time.RFC3339Nano, b)
	if err != nil {
		t.Fatal(err)
	}
	d := when.Sub(at)
	t.Logf("the cancellation reached the tool after %s", d)
	if d > time.Second {
		t.Errorf("the cancellation reached the tool after %s, want under a second", d)
	}
}

// TestTwoWorkersShareQueue: two workers of one queue both take calls.
func TestTwoWorkersShareQueue(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	e.startWorker("w2", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seen := map[string]int{}
	type res struct {
		out *tool.Outcome
	}
	const n = 12
	ch := make(chan res, n)
	for i := range n {
		go func() {
			ch <- res{call(ctx, ws, "s"+string(rune('a'+i)), "slow_idempotent", `{"tag":"s`+string(rune('a'+i))+`","ms":1500}`)}
		}()
	}
	for range n {
		r := <-ch
		if err := r.out.Err(); err != nil {
			t.Fatal(err)
		}
		who, _, _ := strings.Cut(strings.TrimPrefix(r.out.Result.Text(), "done by "), " ")
		seen[who]++
	}
	if seen["w1"] == 0 || seen["w2"] == 0 {
		t.Errorf("one worker took every call: %v", seen)
	}
}

func readMarker(t *testing.T, e *env, name string) string {
	t.Helper()
	b, err := readFile(e.markers, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRegistryChange: when a worker's tools change, the caller learns it
// from the next result that worker sends, and takes the new definitions.
func TestRegistryChange(t *testing.T) {
	e := newEnv(t, nil)
	e.startWorker("w1", "q1", "")
	ws := e.caller(routeAll("q1", nil))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if d, _ := ws.Engine.Lookup("noop"); d.Description != "a test tool" {
		t.Fatalf("noop before: %q", d.Description)
	}
	if err := call(ctx, ws, "g1", "grow", `{}`).Err(); err != nil {
		t.Fatal(err)
	}
	for ctx.Err() == nil {
		if d, _ := ws.Engine.Lookup("noop"); d.Description == "grown" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the caller still has noop's old definition after 60s")
}

// TestCachedTools: a caller that opens while no worker of the queue runs
// gets the tools the queue published last, from its cache, and its calls
// run once a worker is back.
func TestCachedTools(t *testing.T) {
	e := newEnv(t, nil)
	w := e.startWorker("w1", "q1", "")
	cache := t.TempDir()
	e.callerCached(routeAll("q1", nil), cache)
	w.kill()
	ws := e.callerCached(routeAll("q1", nil), cache)
	if _, ok := ws.Engine.Lookup("noop"); !ok {
		t.Fatalf("the cache did not give the queue's tools: %v", ws.Engine.Tools())
	}
	e.startWorker("w2", "q1", "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := call(ctx, ws, "c1", "noop", `{}`)
	if err := out.Err(); err != nil || !strings.HasPrefix(out.Result.Text(), "w2 ") {
		t.Fatalf("noop: %v %q", err, out.Result.Text())
	}
}
