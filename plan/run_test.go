package plan

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// interval is when a call ran, on a logical clock: one counter that every
// start and end takes the next value of. Its order is the order in which
// those events happened, so an overlap shows whatever the scheduler did,
// without any assumption about durations.
type interval struct{ start, end int64 }

// recorder runs calls and records their intervals and how many ran at once,
// overall and per cap.
type recorder struct {
	clock     atomic.Int64
	intervals []interval

	mu      sync.Mutex
	running int
	inCap   map[string]int
	peak    int
	peakCap map[string]int
}

func newRecorder(n int) *recorder {
	return &recorder{intervals: make([]interval, n), inCap: map[string]int{}, peakCap: map[string]int{}}
}

func (r *recorder) enter(c *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running++
	r.peak = max(r.peak, r.running)
	for _, name := range c.Caps {
		r.inCap[name]++
		r.peakCap[name] = max(r.peakCap[name], r.inCap[name])
	}
}

func (r *recorder) leave(c *Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running--
	for _, name := range c.Caps {
		r.inCap[name]--
	}
}

// run is a task: it records its interval, yields or sleeps a little so that
// calls free to overlap do, and ends with status.
func (r *recorder) run(p *Plan, status func(i int) Status) func(context.Context, int) Status {
	return func(ctx context.Context, i int) Status {
		r.intervals[i].start = r.clock.Add(1)
		r.enter(&p.Calls[i])
		if i%3 == 0 {
			time.Sleep(time.Duration(i%4) * 100 * time.Microsecond)
		}
		r.leave(&p.Calls[i])
		r.intervals[i].end = r.clock.Add(1)
		return status(i)
	}
}

// checkRun checks a finished run: conflicting calls that both ran did not
// overlap and ran in the model's order; a call ran exactly when every call it
// follows ended done or failed; no cap was exceeded.
func checkRun(t *testing.T, p *Plan, opts RunOptions, rep Report, rec *recorder) {
	t.Helper()
	ran := func(i int) bool { return rep.Status[i] == Done || rep.Status[i] == Failed || rep.Status[i] == Asked }
	for i := range p.Calls {
		for j := range i {
			if !ran(i) || !ran(j) || !p.Calls[j].Effects.Conflicts(&p.Calls[i].Effects) {
				continue
			}
			if a, b := rec.intervals[j], rec.intervals[i]; a.end > b.start {
				t.Fatalf("conflicting calls %d %v and %d %v overlap or run out of order", j, a, i, b)
			}
		}
		free := true
		for _, j := range p.After[i] {
			free = free && (rep.Status[j] == Done || rep.Status[j] == Failed)
		}
		if !opts.StopOnError && free != ran(i) {
			t.Fatalf("call %d: free to run %v, but status %v (after %v)", i, free, rep.Status[i], p.After[i])
		}
		if !free && ran(i) {
			t.Fatalf("call %d ran before the calls it follows ended: status %v", i, rep.Status[i])
		}
		if !free && !ran(i) && !opts.StopOnError && rep.Status[i] != Waiting {
			t.Fatalf("call %d blocked by a question has status %v", i, rep.Status[i])
		}
	}
	if opts.Max > 0 && rec.peak > opts.Max {
		t.Fatalf("%d calls ran at once, cap %d", rec.peak, opts.Max)
	}
	for name, size := range opts.Caps {
		if size > 0 && rec.peakCap[name] > size {
			t.Fatalf("%d calls of cap %s ran at once, cap %d", rec.peakCap[name], name, size)
		}
	}
}

// TestRunProperty runs random batches with random caps, some calls failing
// and some asking, and checks every run.
func TestRunProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 100 {
		cs := randomCalls(r, 1+r.IntN(30))
		for i := range cs {
			cs[i].Caps = []string{fmt.Sprint("tool:", r.IntN(3))}
			if r.IntN(2) == 0 {
				cs[i].Caps = append(cs[i].Caps, "mcp.s")
			}
		}
		p := New(cs)
		opts := RunOptions{Max: r.IntN(5), Caps: map[string]int{"tool:0": 1, "tool:1": 2, "mcp.s": r.IntN(3)}}
		statuses := make([]Status, len(cs))
		for i := range statuses {
			statuses[i] = []Status{Done, Done, Done, Failed, Asked}[r.IntN(5)]
		}
		rec := newRecorder(len(cs))
		rep := p.Run(context.Background(), opts, rec.run(p, func(i int) Status { return statuses[i] }))
		checkRun(t, p, opts, rep, rec)
		if rep.StoppedBy != -1 {
			t.Fatalf("stopped by %d without StopOnError", rep.StoppedBy)
		}
		if t.Failed() {
			t.Fatalf("round %d", round)
		}
	}
}

// TestRunOverlaps proves that independent calls run at once: each waits
// until all have started, which only happens if they overlap.
func TestRunOverlaps(t *testing.T) {
	const n = 4
	p := New(calls(uses(read(pathRes("a"))), uses(read(pathRes("a"))), uses(write(pathRes("b"))), Effects{}))
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	rep := p.Run(context.Background(), RunOptions{Max: n}, func(ctx context.Context, i int) Status {
		started.Done()
		select {
		case <-all:
			return Done
		case <-time.After(10 * time.Second):
			return Failed
		}
	})
	if want := []Status{Done, Done, Done, Done}; !reflect.DeepEqual(rep.Status, want) {
		t.Fatalf("status = %v: the calls did not all run at once", rep.Status)
	}
}

// TestRunCapHolds: with a cap of 2 on three calls, two run at once and the
// third starts only when one of them has ended.
func TestRunCapHolds(t *testing.T) {
	p := New(calls(Effects{}, Effects{}, Effects{}))
	for i := range p.Calls {
		p.Calls[i].Caps = []string{"tool:x"}
	}
	release := make(chan struct{})
	var running, peak, started atomic.Int32
	rep := p.Run(context.Background(), RunOptions{Caps: map[string]int{"tool:x": 2}}, func(ctx context.Context, i int) Status {
		n := running.Add(1)
		for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
		}
		if started.Add(1) == 2 {
			close(release) // both slots are taken; let them go
		}
		<-release
		running.Add(-1)
		return Done
	})
	if !reflect.DeepEqual(rep.Status, []Status{Done, Done, Done}) {
		t.Fatalf("status = %v", rep.Status)
	}
	if peak.Load() != 2 {
		t.Errorf("%d calls ran at once, want 2", peak.Load())
	}
}

func TestRunQuestionHoldsWhatFollows(t *testing.T) {
	// 0 writes a and asks; 1 reads a; 2 reads b; 3 lists everything under the root.
	p := New(calls(uses(write(pathRes("a"))), uses(read(pathRes("a"))), uses(read(pathRes("b"))), uses(read(pathRes("")))))
	rep := p.Run(context.Background(), RunOptions{}, func(ctx context.Context, i int) Status {
		if i == 0 {
			return Asked
		}
		return Done
	})
	if want := []Status{Asked, Waiting, Done, Waiting}; !reflect.DeepEqual(rep.Status, want) {
		t.Errorf("status = %v, want %v", rep.Status, want)
	}
}

func TestRunStopOnError(t *testing.T) {
	// 0 fails at once; 1 runs until cancelled; 2 must follow 1; 3 is free but
	// held back by the cap of 2 until the stop.
	p := New(calls(Effects{}, uses(write(pathRes("a"))), uses(read(pathRes("a"))), Effects{}))
	started1 := make(chan struct{})
	var cancelled atomic.Bool
	run := func(ctx context.Context, i int) Status {
		switch i {
		case 0:
			<-started1
			return Failed
		case 1:
			close(started1)
			<-ctx.Done()
			cancelled.Store(true)
			return Failed
		}
		return Done
	}
	rep := p.Run(context.Background(), RunOptions{Max: 2, StopOnError: true}, run)
	if want := []Status{Failed, Failed, NotRun, NotRun}; !reflect.DeepEqual(rep.Status, want) {
		t.Errorf("status = %v, want %v", rep.Status, want)
	}
	if rep.StoppedBy != 0 || !cancelled.Load() {
		t.Errorf("stopped by %d, running call cancelled: %v", rep.StoppedBy, cancelled.Load())
	}
}

func TestRunFailureStopsNothingByDefault(t *testing.T) {
	p := New(calls(uses(write(pathRes("a"))), uses(read(pathRes("a"))), Effects{}))
	rep := p.Run(context.Background(), RunOptions{}, func(ctx context.Context, i int) Status {
		if i == 0 {
			return Failed
		}
		return Done
	})
	if want := []Status{Failed, Done, Done}; !reflect.DeepEqual(rep.Status, want) {
		t.Errorf("status = %v, want %v", rep.Status, want)
	}
}

func TestRunCancel(t *testing.T) {
	// 0 and 1 run until cancelled; 2 follows 0; 3 is held back by the cap.
	p := New(calls(uses(write(pathRes("a"))), Effects{}, uses(read(pathRes("a"))), Effects{}))
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	running.Add(2)
	go func() { running.Wait(); cancel() }()
	var sawCancel atomic.Int32
	rep := p.Run(ctx, RunOptions{Max: 2}, func(ctx context.Context, i int) Status {
		running.Done()
		<-ctx.Done()
		sawCancel.Add(1)
		return Failed
	})
	if want := []Status{Failed, Failed, NotRun, NotRun}; !reflect.DeepEqual(rep.Status, want) {
		t.Errorf("status = %v, want %v", rep.Status, want)
	}
	if sawCancel.Load() != 2 {
		t.Errorf("%d running calls saw the cancellation, want 2", sawCancel.Load())
	}
	// A run cancelled before it starts starts nothing.
	rep = p.Run(ctx, RunOptions{}, func(context.Context, int) Status {
		t.Error("a call started after cancellation")
		return Done
	})
	if want := []Status{NotRun, NotRun, NotRun, NotRun}; !reflect.DeepEqual(rep.Status, want) {
		t.Errorf("status = %v, want %v", rep.Status, want)
	}
}

func TestRunEmpty(t *testing.T) {
	rep := New(nil).Run(context.Background(), RunOptions{}, nil)
	if len(rep.Status) != 0 || rep.StoppedBy != -1 {
		t.Errorf("report = %+v", rep)
	}
}
