package lathe_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

type opIn struct {
	N       int    `json:"n,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// opEngine returns an engine whose tool "ops" records N operations of kind
// "read" on the subjects s0, s1 … (or Subject), and a function that returns
// the invocation of the call of the given ID, as an outer stage saw it.
func opEngine(t *testing.T, opts lathe.Options, extra ...tool.Tool) (*lathe.Engine, func(id string) *lathe.Invocation) {
	t.Helper()
	var mu sync.Mutex
	invs := map[string]*lathe.Invocation{}
	opts.Outer = append(opts.Outer, func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			mu.Lock()
			invs[inv.Call.ID] = inv
			mu.Unlock()
			return next(ctx, inv)
		}
	})
	e := lathe.New(opts)
	t.Cleanup(func() { e.Close() })
	ops := builtin.Must(builtin.Func(tool.Definition{Name: "ops", Summary: "Records operations."},
		func(ctx context.Context, in opIn) (string, error) {
			for i := range in.N {
				s := in.Subject
				if s == "" {
					s = fmt.Sprintf("s%d", i)
				}
				lathe.RecordOperation(ctx, lathe.Operation{Kind: "read", Subject: s, Approval: "allow"})
			}
			return "ok", nil
		}))
	if err := e.Register(append([]tool.Tool{ops}, extra...)...); err != nil {
		t.Fatal(err)
	}
	return e, func(id string) *lathe.Invocation {
		mu.Lock()
		defer mu.Unlock()
		return invs[id]
	}
}

func callOK(t *testing.T, e *lathe.Engine, ctx context.Context, id, name, args string) *tool.Outcome {
	t.Helper()
	out := e.Call(ctx, &tool.Call{ID: id, Name: name, Arguments: []byte(args)})
	if out.Result == nil || out.Result.IsError {
		t.Fatalf("call %s of %s failed: %+v", id, name, out.Result)
	}
	return out
}

func subjects(ops []lathe.Operation) []string {
	var s []string
	for _, op := range ops {
		s = append(s, op.Subject)
	}
	return s
}

func TestRecordOperationKeepsTheCallsOperations(t *testing.T) {
	e, inv := opEngine(t, lathe.Options{})
	callOK(t, e, context.Background(), "a", "ops", `{"n":3}`)
	callOK(t, e, context.Background(), "b", "ops", `{"n":1,"subject":"other"}`)
	if got := subjects(inv("a").Operations()); strings.Join(got, ",") != "s0,s1,s2" {
		t.Errorf("call a's operations = %v, want s0,s1,s2", got)
	}
	if got := subjects(inv("b").Operations()); strings.Join(got, ",") != "other" {
		t.Errorf("call b's operations = %v, want other", got)
	}
	if !inv("a").Ended() {
		t.Error("a finished call's invocation does not say it ended")
	}
}

func TestRecordOperationOutsideACallDoesNothing(t *testing.T) {
	// Nothing to attach it to: it must neither panic nor land anywhere.
	lathe.RecordOperation(context.Background(), lathe.Operation{Kind: "read", Subject: "x"})
	if lathe.InvocationFrom(context.Background()) != nil {
		t.Error("InvocationFrom found an invocation in a bare context")
	}
}

// A tool that leaves a goroutine behind with its context must not be able
// to put operations in the record of a call that comes later: the
// goroutine's operations are dropped and counted against its own call.
func TestOperationOfAGoroutineThatOutlivesItsCallIsDropped(t *testing.T) {
	kept := make(chan context.Context, 1)
	leaky := builtin.Must(builtin.Func(tool.Definition{Name: "leaky", Summary: "Leaves its context behind."},
		func(ctx context.Context, _ struct{}) (string, error) {
			lathe.RecordOperation(ctx, lathe.Operation{Kind: "read", Subject: "during"})
			kept <- ctx
			return "ok", nil
		}))
	for _, deadline := range []bool{false, true} {
		t.Run(fmt.Sprintf("callerDeadline=%v", deadline), func(t *testing.T) {
			e, inv := opEngine(t, lathe.Options{}, leaky)
			ctx := context.Background()
			if deadline {
				// A caller's deadline sooner than the tool's: the engine
				// carries the call in a context of its own.
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Minute)
				defer cancel()
			}
			callOK(t, e, ctx, "first", "leaky", `{}`)
			var old context.Context
			select {
			case old = <-kept:
			case <-time.After(10 * time.Second):
				t.Fatal("the leaky tool never handed its context over")
			}
			// The later call runs while the old context is used again.
			done := make(chan struct{})
			go func() {
				defer close(done)
				for range 100 {
					lathe.RecordOperation(old, lathe.Operation{Kind: "write", Subject: "late"})
				}
			}()
			callOK(t, e, context.Background(), "second", "ops", `{"n":2}`)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("recording the late operations hung")
			}
			if got := subjects(inv("first").Operations()); strings.Join(got, ",") != "during" {
				t.Errorf("first call's operations = %v, want only the one made during it", got)
			}
			if n := inv("first").OperationsDropped(); n != 100 {
				t.Errorf("first call counts %d dropped operations, want 100", n)
			}
			if got := subjects(inv("second").Operations()); strings.Join(got, ",") != "s0,s1" {
				t.Errorf("second call's operations = %v, want s0,s1 alone", got)
			}
		})
	}
}

// A tool that ignores its deadline is left behind by the engine; what it
// records after that is not the call's.
func TestOperationAfterTheDeadlineIsDropped(t *testing.T) {
	release := make(chan struct{})
	recorded := make(chan struct{})
	stuck := builtin.Must(builtin.Func(tool.Definition{Name: "stuck", Summary: "Ignores its deadline."},
		func(ctx context.Context, _ struct{}) (string, error) {
			<-release
			lathe.RecordOperation(ctx, lathe.Operation{Kind: "fetch", Subject: "https://late.example/"})
			close(recorded)
			return "ok", nil
		}))
	stuck.Timeout = 50 * time.Millisecond
	e, inv := opEngine(t, lathe.Options{}, stuck)
	out := e.Call(context.Background(), &tool.Call{ID: "s", Name: "stuck", Arguments: []byte(`{}`)})
	if out.Result == nil || out.Result.ErrorKind != tool.KindTimeout {
		t.Fatalf("the stuck call did not time out: %+v", out.Result)
	}
	close(release)
	select {
	case <-recorded:
	case <-time.After(10 * time.Second):
		t.Fatal("the stuck tool never recorded its late operation")
	}
	if ops := inv("s").Operations(); len(ops) != 0 {
		t.Errorf("the timed-out call got an operation after its end: %v", ops)
	}
	if n := inv("s").OperationsDropped(); n != 1 {
		t.Errorf("dropped = %d, want 1", n)
	}
}

func TestOperationsAreBounded(t *testing.T) {
	e, inv := opEngine(t, lathe.Options{})
	callOK(t, e, context.Background(), "big", "ops", fmt.Sprintf(`{"n":%d}`, lathe.MaxOperations+7))
	ops := inv("big").Operations()
	if len(ops) != lathe.MaxOperations {
		t.Errorf("kept %d operations, want %d", len(ops), lathe.MaxOperations)
	}
	if ops[0].Subject != "s0" || ops[len(ops)-1].Subject != fmt.Sprintf("s%d", lathe.MaxOperations-1) {
		t.Errorf("kept %q … %q, want the first ones in order", ops[0].Subject, ops[len(ops)-1].Subject)
	}
	if n := inv("big").OperationsDropped(); n != 7 {
		t.Errorf("dropped = %d, want 7", n)
	}
}

// A tool's host requests may come at once, from several goroutines.
func TestRecordOperationConcurrently(t *testing.T) {
	par := builtin.Must(builtin.Func(tool.Definition{Name: "par", Summary: "Records from many goroutines."},
		func(ctx context.Context, _ struct{}) (string, error) {
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 100 {
						lathe.RecordOperation(ctx, lathe.Operation{Kind: "stat", Subject: fmt.Sprintf("g%d/%d", g, i)})
					}
				})
			}
			wg.Wait()
			return "ok", nil
		}))
	e, inv := opEngine(t, lathe.Options{}, par)
	ev, cancel := record(e, lathe.EventOperation)
	defer cancel()
	callOK(t, e, context.Background(), "p", "par", `{}`)
	ops := inv("p").Operations()
	seen := map[string]bool{}
	for _, op := range ops {
		seen[op.Subject] = true
	}
	if len(ops) != 800 || len(seen) != 800 {
		t.Errorf("kept %d operations (%d distinct), want 800", len(ops), len(seen))
	}
	ev.wait(t, "800 operation events", func(evs []lathe.Event) bool { return len(evs) >= 800 })
}

func TestOperationEventsRedactURLs(t *testing.T) {
	fetch := builtin.Must(builtin.Func(tool.Definition{Name: "fetch", Summary: "Records a fetch."},
		func(ctx context.Context, _ struct{}) (string, error) {
			lathe.RecordOperation(ctx, lathe.Operation{Kind: "fetch", Approval: "deny",
				Subject: "https://bob:hunter2@api.example.com/v1/items?token=s3cr3t&page=2#access_token=frag",
				Error:   `GET "https://api.example.com/v1?key=s3cr3t": connection refused`})
			return "ok", nil
		}))
	e, inv := opEngine(t, lathe.Options{}, fetch)
	ev, cancel := record(e, lathe.EventOperation)
	defer cancel()
	callOK(t, e, context.Background(), "f", "fetch", `{}`)
	evs := ev.wait(t, "the fetch's event", func(evs []lathe.Event) bool { return len(evs) >= 1 })
	got := evs[0]
	if got.Kind != lathe.EventOperation || got.Operation == nil || got.Tool != "fetch" || got.CallID != "f" {
		t.Fatalf("event = %+v, want the fetch's operation", got)
	}
	for _, op := range []lathe.Operation{*got.Operation, inv("f").Operations()[0]} {
		all := op.Subject + " " + op.Error
		for _, secret := range []string{"hunter2", "bob", "s3cr3t", "frag"} {
			if strings.Contains(all, secret) {
				t.Errorf("%q is still in %q", secret, all)
			}
		}
		for _, kept := range []string{"api.example.com/v1/items", "token=", "page=", "connection refused"} {
			if !strings.Contains(all, kept) {
				t.Errorf("%q was lost from %q", kept, all)
			}
		}
	}
}

// A confined tool's host records what it does for the tool with
// RecordOperation; an outer stage (the audit log's) reads the call's
// operations once it is over.
func ExampleRecordOperation() {
	var ops []lathe.Operation
	e := lathe.New(lathe.Options{Outer: []lathe.Middleware{func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			out, err := next(ctx, inv)
			ops = inv.Operations()
			return out, err
		}
	}}})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "fetch"},
		func(ctx context.Context, _ struct{}) (string, error) {
			// What package host does for each request of the tool.
			lathe.RecordOperation(ctx, lathe.Operation{Kind: "fetch", Approval: "allow", By: "permissions",
				Subject: "https://api.example.com/v1/items?token=s3cr3t&page=2", Bytes: 512})
			return "fetched", nil
		})))
	e.Call(context.Background(), &tool.Call{Name: "fetch", Arguments: []byte(`{}`)})
	for _, op := range ops {
		fmt.Println(op.Kind, op.Subject, op.Approval, op.Bytes)
	}
	// Output:
	// fetch https://api.example.com/v1/items?token=[redacted]&page=[redacted] allow 512
}
