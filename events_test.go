package lathe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// recorder keeps the events a subscriber received.
type recorder struct {
	mu     sync.Mutex
	events []lathe.Event
	more   chan struct{}
}

func record(e *lathe.Engine, kinds ...lathe.EventKind) (*recorder, func()) {
	r := &recorder{more: make(chan struct{}, 1)}
	cancel := e.Subscribe(func(ev lathe.Event) {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
		select {
		case r.more <- struct{}{}:
		default:
		}
	}, kinds...)
	return r, cancel
}

func (r *recorder) snapshot() []lathe.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// wait waits until ok holds of the events received, for at most 10s.
func (r *recorder) wait(t *testing.T, what string, ok func([]lathe.Event) bool) []lathe.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		evs := r.snapshot()
		if ok(evs) {
			return evs
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("waiting 10s for %s; got %d events: %v", what, len(evs), evs)
		}
	}
}

// finished reports whether n calls have finished among evs.
func finished(n int) func([]lathe.Event) bool {
	return func(evs []lathe.Event) bool {
		k := 0
		for _, ev := range evs {
			if ev.Kind == lathe.EventCallFinished {
				k++
			}
		}
		return k >= n
	}
}

// byCall groups the events of calls by call number.
func byCall(evs []lathe.Event) map[uint64][]lathe.Event {
	m := map[uint64][]lathe.Event{}
	for _, ev := range evs {
		if ev.Call != 0 {
			m[ev.Call] = append(m[ev.Call], ev)
		}
	}
	return m
}

func kinds(evs []lathe.Event) []lathe.EventKind {
	var ks []lathe.EventKind
	for _, ev := range evs {
		ks = append(ks, ev.Kind)
	}
	return ks
}

// progressTool reports progress twice, then answers.
func progressTool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "steps"}, func(ctx context.Context, _ struct{}) (string, error) {
		tool.ReportProgress(ctx, tool.Progress{Progress: 1, Total: 2})
		tool.ReportProgress(ctx, tool.Progress{Progress: 2, Total: 2, Message: "done"})
		return "ok", nil
	}))
}

func questionTool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "ask"}, func(ctx context.Context, _ struct{}) (string, error) {
		a, err := builtin.Ask(ctx, tool.Question{ID: "go", Text: "Go on?", Kind: tool.QuestionBoolean})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(a), nil
	}))
}

// Every kind of event, each with what its consumers need, and each call's
// events in the order they happened: started first, finished last.
func TestEventsOfEveryKind(t *testing.T) {
	approver := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "steps", Approval: policy.Ask, Source: "lathe.toml:7"}, {Tool: "ask", Approval: policy.Allow}}}
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{Approver: approver})}})
	t.Cleanup(func() { e.Close() })
	r, cancel := record(e)
	defer cancel()

	if err := e.Register(progressTool(), questionTool(), addTool()); err != nil {
		t.Fatal(err)
	}
	ctx := lathe.WithSession(context.Background(), "client-7")
	var got []string // the outcomes the callers got, to compare with the events
	for _, c := range []*tool.Call{
		{ID: "c1", Name: "steps"},
		{ID: "c2", Name: "ask"},
		{ID: "c3", Name: "add", Arguments: []byte(`{"a":1,"b":-1}`)},
		{ID: "c4", Name: "nope"},
	} {
		out := e.Call(ctx, c)
		switch {
		case out.Question != nil:
			got = append(got, "question")
		case out.Result.IsError:
			got = append(got, string(out.Result.ErrorKind))
		default:
			got = append(got, "ok")
		}
	}
	e.Unregister("ask")
	evs := r.wait(t, "4 finished calls and 2 registry changes", func(evs []lathe.Event) bool {
		return finished(4)(evs) && len(evs) > 0 && evs[len(evs)-1].Kind == lathe.EventToolsChanged
	})

	if first := evs[0]; first.Kind != lathe.EventToolsChanged || !slices.Equal(first.Added, []string{"steps", "ask", "add"}) ||
		len(first.Removed) != 0 || first.Time.IsZero() || first.Call != 0 {
		t.Errorf("first event = %+v, want the three tools added", first)
	}
	if last := evs[len(evs)-1]; !slices.Equal(last.Removed, []string{"ask"}) || len(last.Added) != 0 {
		t.Errorf("last event = %+v, want ask removed", last)
	}

	calls := byCall(evs)
	if len(calls) != 4 {
		t.Fatalf("events of %d calls, want 4: %v", len(calls), evs)
	}
	want := map[string][]lathe.EventKind{
		"c1": {lathe.EventCallStarted, lathe.EventApprovalAsked, lathe.EventApprovalAnswered, lathe.EventProgress,
			lathe.EventProgress, lathe.EventCallFinished},
		"c2": {lathe.EventCallStarted, lathe.EventCallFinished},
		"c3": {lathe.EventCallStarted, lathe.EventCallFinished},
		"c4": {lathe.EventCallStarted, lathe.EventCallFinished},
	}
	outcomes := map[string]string{}
	for n, cevs := range calls {
		id := cevs[0].CallID
		if !slices.Equal(kinds(cevs), want[id]) {
			t.Errorf("call %d (%s): kinds %v, want %v", n, id, kinds(cevs), want[id])
		}
		start := cevs[0].Time
		for i, ev := range cevs {
			if ev.CallID != id || ev.Session != "client-7" || ev.Tool == "" || ev.Time.Before(start) {
				t.Errorf("call %d event %d = %+v, want call ID %s, session client-7, a tool and a time", n, i, ev, id)
			}
		}
		end := cevs[len(cevs)-1]
		if end.Duration <= 0 || end.Duration != end.Time.Sub(start) {
			t.Errorf("call %s: duration %v, want the time from start (%v) to end (%v)", id, end.Duration, start, end.Time)
		}
		outcomes[id] = end.Outcome
	}
	if w := map[string]string{"c1": got[0], "c2": got[1], "c3": got[2], "c4": got[3]}; fmt.Sprint(outcomes) != fmt.Sprint(w) ||
		got[1] != "question" || got[3] != "unknown_tool" || got[2] != "invalid_arguments" || got[0] != "ok" {
		t.Errorf("outcomes in events %v; callers got %v", outcomes, got)
	}

	var steps []lathe.Event
	for _, cevs := range calls {
		if cevs[0].CallID == "c1" {
			steps = cevs
		}
	}
	if steps == nil {
		t.Fatal("no events of call c1")
	}
	if a := steps[1].Approval; a == nil || a.Rule != "lathe.toml:7" || a.Reason == "" || a.Answer != "" {
		t.Errorf("approval asked = %+v, want the rule's source and a reason", a)
	}
	if a := steps[2].Approval; a == nil || a.Rule != "lathe.toml:7" || a.Answer != "once" || a.By != "approver" {
		t.Errorf("approval answered = %+v, want once, by the approver", a)
	}
	if p := steps[3].Progress; p == nil || p.Progress != 1 || p.Total != 2 {
		t.Errorf("first progress = %+v", p)
	}
	if p := steps[4].Progress; p == nil || p.Progress != 2 || p.Message != "done" {
		t.Errorf("second progress = %+v", p)
	}
	if steps[1].Tool != "steps" || steps[5].Tool != "steps" {
		t.Errorf("tool names in events: %+v", steps)
	}
}

// The registry publishes what actually changed: a replaced tool in both
// lists, nothing for a change that failed or changed nothing.
func TestToolsChangedEvents(t *testing.T) {
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	r, cancel := record(e, lathe.EventToolsChanged)
	defer cancel()
	if err := e.Register(addTool()); err != nil {
		t.Fatal(err)
	}
	if err := e.Register(addTool()); err == nil {
		t.Fatal("a second tool named add was registered")
	}
	if err := e.Replace([]string{"add", "none"}, addTool()); err != nil {
		t.Fatal(err)
	}
	e.Unregister("none")
	e.Unregister("add")
	// A call: not of the subscribed kinds, so it must not reach the recorder.
	call(t, e, "add", `{}`)
	if err := e.Register(sleeper()); err != nil {
		t.Fatal(err)
	}
	evs := r.wait(t, "four registry changes", func(evs []lathe.Event) bool { return len(evs) >= 4 })
	want := []string{"added=[add] removed=[]", "added=[add] removed=[add]", "added=[] removed=[add]", "added=[sleep] removed=[]"}
	for i, ev := range evs {
		if i >= len(want) || ev.Kind != lathe.EventToolsChanged || ev.String() != "tools_changed "+want[i] {
			t.Errorf("event %d = %v, want tools_changed %s", i, ev, want[min(i, len(want)-1)])
		}
	}
}

// Calls from many goroutines: every call's events arrive whole and in
// order, with call numbers no two calls share (run with -race).
func TestEventsUnderConcurrency(t *testing.T) {
	e := newEngine(t, lathe.Options{}, progressTool(), addTool())
	r, cancel := record(e)
	defer cancel()
	const callers, each = 8, 40
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				name, args := "steps", `{}`
				if i%2 == 1 {
					name, args = "add", `{"a":1,"b":2}`
				}
				out := e.Call(context.Background(), &tool.Call{ID: fmt.Sprintf("g%d-%d", g, i), Name: name, Arguments: []byte(args)})
				if err := out.Err(); err != nil {
					t.Errorf("call %d of goroutine %d: %v", i, g, err)
				}
			}
		})
	}
	wg.Wait()
	evs := r.wait(t, "every call finished", finished(callers*each))
	calls := byCall(evs)
	if len(calls) != callers*each {
		t.Fatalf("events of %d calls, want %d", len(calls), callers*each)
	}
	ids := map[string]bool{}
	for n, cevs := range calls {
		ks := kinds(cevs)
		want := []lathe.EventKind{lathe.EventCallStarted, lathe.EventCallFinished}
		if cevs[0].Tool == "steps" {
			want = []lathe.EventKind{lathe.EventCallStarted, lathe.EventProgress, lathe.EventProgress, lathe.EventCallFinished}
		}
		if !slices.Equal(ks, want) {
			t.Errorf("call %d: %v, want %v", n, ks, want)
		}
		if ids[cevs[0].CallID] {
			t.Errorf("call ID %s under two call numbers", cevs[0].CallID)
		}
		ids[cevs[0].CallID] = true
	}
}

// A subscriber that stops taking events holds no call: calls go on at full
// speed, its queue fills, and what it missed is counted, exactly, in the
// Dropped of the next event it gets. Another subscriber loses nothing.
func TestBlockedSubscriberDoesNotStallCalls(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	var received, dropped atomic.Uint64
	blocked := make(chan struct{})
	var blockOnce sync.Once
	cancelSlow := e.Subscribe(func(ev lathe.Event) {
		blockOnce.Do(func() { close(blocked) })
		<-release
		received.Add(1)
		dropped.Add(ev.Dropped)
	}, lathe.EventCallStarted, lathe.EventCallFinished)
	defer cancelSlow()
	fast, cancelFast := record(e, lathe.EventCallFinished)
	defer cancelFast()

	// 3000 events: far more than a subscriber may fall behind. The calls
	// go in rounds, and the other subscriber must have every call of a
	// round before the next: it keeps up while the blocked one falls
	// behind, and a slow machine cannot make it fall behind too.
	const n, round = 1500, 250
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		if out := e.Call(ctx, &tool.Call{Name: "add", Arguments: []byte(`{"a":1,"b":2}`)}); out.Err() != nil {
			t.Fatalf("call %d with a blocked subscriber: %v", i, out.Err())
		}
		if (i+1)%round == 0 {
			fast.wait(t, "the other subscriber to get every call", finished(i+1))
		}
	}
	select {
	case <-blocked:
	case <-ctx.Done():
		t.Fatal("the blocked subscriber never got its first event")
	}

	unblock()
	// Calls after the gap: once the subscriber has caught up, the next event
	// queued for it carries the count of what was lost. Until then, further
	// events may be lost too, and are counted the same way.
	extra := 0
	deadline := time.After(30 * time.Second)
	for dropped.Load() == 0 {
		select {
		case <-deadline:
			t.Fatalf("after release and %d more calls: %d received, none counted as dropped", extra, received.Load())
		case <-time.After(time.Millisecond):
		}
		call(t, e, "add", `{"a":1,"b":2}`)
		extra++
	}
	total := uint64(2 * (n + extra))
	for received.Load()+dropped.Load() < total {
		select {
		case <-deadline:
			t.Fatalf("after release: %d received + %d counted as dropped, want %d", received.Load(), dropped.Load(), total)
		case <-time.After(time.Millisecond):
		}
	}
	if got := received.Load() + dropped.Load(); got != total {
		t.Errorf("%d received + %d dropped = %d, want every one of the %d events accounted for once",
			received.Load(), dropped.Load(), got, total)
	}
}

// A subscriber that panics on every event crashes nothing: calls succeed, it
// gets every event after the one it panicked on, and the panics are logged.
func TestPanickingSubscriber(t *testing.T) {
	var logs syncBuffer
	e := newEngine(t, lathe.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, addTool())
	var calls atomic.Int64
	cancel := e.Subscribe(func(ev lathe.Event) {
		calls.Add(1)
		panic("subscriber broke")
	}, lathe.EventCallFinished)
	defer cancel()
	other, cancelOther := record(e, lathe.EventCallFinished)
	defer cancelOther()
	for range 3 {
		if out := call(t, e, "add", `{"a":1,"b":2}`); out.Err() != nil {
			t.Fatalf("call with a panicking subscriber: %v", out.Err())
		}
	}
	other.wait(t, "three calls finished", finished(3))
	deadline := time.After(10 * time.Second)
	for calls.Load() < 3 || strings.Count(logs.String(), "subscriber broke") < 3 {
		select {
		case <-deadline:
			t.Fatalf("the panicking subscriber was called %d times, want 3; log:\n%s", calls.Load(), logs.String())
		case <-time.After(time.Millisecond):
		}
	}
	if !strings.Contains(logs.String(), "event subscriber panicked") {
		t.Errorf("log = %s", logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// After cancel, a subscriber gets nothing published later; a subscriber
// that stayed is the witness that later events were published.
func TestUnsubscribeStopsDelivery(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	gone, cancelGone := record(e)
	stays, cancelStays := record(e)
	defer cancelStays()
	call(t, e, "add", `{"a":1,"b":2}`)
	gone.wait(t, "the first call", finished(1))
	cancelGone()
	cancelGone() // a second cancel does nothing
	for range 3 {
		call(t, e, "add", `{"a":1,"b":2}`)
	}
	e.Unregister("add")
	stays.wait(t, "four calls and a change", func(evs []lathe.Event) bool {
		return finished(4)(evs) && evs[len(evs)-1].Kind == lathe.EventToolsChanged
	})
	for _, ev := range gone.snapshot() {
		if ev.Call > 1 || ev.Kind == lathe.EventToolsChanged {
			t.Errorf("event published after cancel reached the subscriber: %v", ev)
		}
	}
}

// A subscriber may cancel its own subscription, or close the engine, from
// inside its function.
func TestSubscriberCancelsItself(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	var cancel func()
	got := make(chan lathe.Event, 10)
	ready := make(chan struct{})
	cancel = e.Subscribe(func(ev lathe.Event) {
		<-ready
		cancel()
		got <- ev
	})
	close(ready)
	call(t, e, "add", `{"a":1,"b":2}`)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	call(t, e, "add", `{"a":1,"b":2}`)
	// Close waits for nothing; the check is that the subscription's
	// goroutine is gone by the end of the tests (goleak), and no deadlock.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(got); n > 1 {
		t.Errorf("%d more events after the subscriber cancelled itself", n)
	}
}

// Closing the engine ends every subscription; subscribing to a closed
// engine delivers nothing.
func TestCloseEndsSubscriptions(t *testing.T) {
	e := lathe.New(lathe.Options{})
	r, cancel := record(e)
	defer cancel()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var late atomic.Int64
	cancelLate := e.Subscribe(func(lathe.Event) { late.Add(1) })
	defer cancelLate()
	_ = e.Register(addTool()) // fails: the engine is closed
	call(t, e, "add", `{}`)
	if n := len(r.snapshot()) + int(late.Load()); n != 0 {
		t.Errorf("%d events after Close", n)
	}
}

// Progress a tool reports after its call returned (it ignored its
// deadline and goes on) is not published after the call's end.
func TestNoEventsAfterACallFinished(t *testing.T) {
	late := make(chan struct{})
	reported := make(chan struct{})
	rt := tool.RuntimeFunc(func(ctx context.Context, _ *tool.Definition, _ *tool.Call) (*tool.Outcome, error) {
		go func() {
			<-late
			tool.ReportProgress(ctx, tool.Progress{Progress: 1})
			close(reported)
		}()
		return &tool.Outcome{Result: tool.TextResult("ok")}, nil
	})
	e := newEngine(t, lathe.Options{}, tool.Tool{Definition: tool.Definition{Name: "late"}, Runtime: rt}, addTool())
	r, cancel := record(e)
	defer cancel()
	call(t, e, "late", `{}`)
	close(late)
	select {
	case <-reported:
	case <-time.After(10 * time.Second):
		t.Fatal("the late progress report hung")
	}
	call(t, e, "add", `{"a":1,"b":2}`) // a witness that later events were delivered
	evs := r.wait(t, "two calls", finished(2))
	if ks := kinds(byCall(evs)[1]); !slices.Equal(ks, []lathe.EventKind{lathe.EventCallStarted, lathe.EventCallFinished}) {
		t.Errorf("events of the call = %v, want its start and end only", ks)
	}
}

// Calls made while nobody listens to call events are not traced: the
// policy's approval events go nowhere and cost nothing, and a subscriber to
// registry changes alone does not make calls pay for tracing.
func TestStagesEmitOnlyWhileSomebodyListens(t *testing.T) {
	var emitted atomic.Int64
	stage := func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			inv.Emit(lathe.Event{Kind: lathe.EventApprovalAsked, Approval: &lathe.Approval{Rule: "r"}})
			inv.Emit(lathe.Event{Kind: lathe.EventCallFinished, Outcome: "forged"}) // not a stage's to publish
			emitted.Add(1)
			return next(ctx, inv)
		}
	}
	e := newEngine(t, lathe.Options{Middleware: []lathe.Middleware{stage}}, addTool())
	changes, cancelChanges := record(e, lathe.EventToolsChanged)
	defer cancelChanges()
	call(t, e, "add", `{"a":1,"b":2}`)
	all, cancelAll := record(e)
	defer cancelAll()
	call(t, e, "add", `{"a":1,"b":2}`)
	evs := all.wait(t, "the second call", finished(1))
	if ks := kinds(evs); !slices.Equal(ks, []lathe.EventKind{lathe.EventCallStarted, lathe.EventApprovalAsked, lathe.EventCallFinished}) {
		t.Errorf("events = %v, want start, the stage's approval, end", evs)
	}
	if evs[len(evs)-1].Outcome != lathe.OutcomeOK || evs[0].Call != evs[1].Call {
		t.Errorf("events = %v", evs)
	}
	if emitted.Load() != 2 || len(changes.snapshot()) != 0 {
		t.Errorf("stage ran %d times; registry subscriber got %v", emitted.Load(), changes.snapshot())
	}
}

// A policy that denies publishes no approval events and the call ends
// denied; one that asks with nobody to ask publishes the answer "deny" by
// "nobody".
func TestApprovalEventsOfDenials(t *testing.T) {
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "add", Approval: policy.Deny},
		{Tool: "steps", Approval: policy.Ask},
	}}
	e := newEngine(t, lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{})}}, addTool(), progressTool())
	r, cancel := record(e)
	defer cancel()
	if out := call(t, e, "add", `{"a":1,"b":2}`); !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("add: %v, want denied", out.Err())
	}
	if out := call(t, e, "steps", `{}`); !errors.Is(out.Err(), tool.ErrDenied) {
		t.Fatalf("steps: %v, want denied", out.Err())
	}
	calls := byCall(r.wait(t, "two calls", finished(2)))
	if ks := kinds(calls[1]); !slices.Equal(ks, []lathe.EventKind{lathe.EventCallStarted, lathe.EventCallFinished}) ||
		calls[1][1].Outcome != "denied" {
		t.Errorf("denied call: %v", calls[1])
	}
	ks := kinds(calls[2])
	if !slices.Equal(ks, []lathe.EventKind{lathe.EventCallStarted, lathe.EventApprovalAnswered, lathe.EventCallFinished}) {
		t.Fatalf("asked call: %v", calls[2])
	}
	if a := calls[2][1].Approval; a.Answer != "deny" || a.By != "nobody" || a.Rule != `tool "steps"` || calls[2][2].Outcome != "denied" {
		t.Errorf("asked call: %+v, %v", a, calls[2])
	}
}

// A batch's call of a tool that does not exist never enters the pipeline,
// and is still seen to start and end, like every other call.
func TestBatchCallsAreEvents(t *testing.T) {
	e := newEngine(t, lathe.Options{}, addTool())
	r, cancel := record(e)
	defer cancel()
	outs := e.CallBatch(context.Background(), []*tool.Call{
		{ID: "1", Name: "add", Arguments: []byte(`{"a":1,"b":2}`)},
		{ID: "2", Name: "nope"},
	}, nil)
	if outs[0].Err() != nil || !errors.Is(outs[1].Err(), tool.ErrUnknownTool) {
		t.Fatalf("outcomes: %+v", outs)
	}
	calls := byCall(r.wait(t, "both calls", finished(2)))
	outcomes := map[string]string{}
	for _, cevs := range calls {
		if ks := kinds(cevs); !slices.Equal(ks, []lathe.EventKind{lathe.EventCallStarted, lathe.EventCallFinished}) {
			t.Errorf("call %s: %v", cevs[0].CallID, ks)
		}
		outcomes[cevs[0].CallID] = cevs[len(cevs)-1].Outcome
	}
	if outcomes["1"] != "ok" || outcomes["2"] != "unknown_tool" {
		t.Errorf("outcomes in events: %v", outcomes)
	}
}

// A stage that panics takes its call down, as before; the call's
// subscribers still see it end, as a runtime failure.
func TestPanickingStageStillEndsTheCall(t *testing.T) {
	stage := func(lathe.Handler) lathe.Handler {
		return func(context.Context, *lathe.Invocation) (*tool.Outcome, error) { panic("stage broke") }
	}
	e := newEngine(t, lathe.Options{Middleware: []lathe.Middleware{stage}}, addTool())
	r, cancel := record(e)
	defer cancel()
	func() {
		defer func() {
			if p := recover(); p != "stage broke" {
				t.Errorf("recovered %v, want the stage's panic", p)
			}
		}()
		call(t, e, "add", `{"a":1,"b":2}`)
	}()
	evs := r.wait(t, "the call's end", finished(1))
	if last := evs[len(evs)-1]; last.Outcome != string(tool.KindRuntimeFailure) {
		t.Errorf("end = %v, want runtime_failure", last)
	}
}
