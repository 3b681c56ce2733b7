package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// setup returns an engine whose destructive tool "wipe" asks, with q as the
// fallback approver, and a counter of the tool's runs.
func setup(t *testing.T, q *approvals.Queue) (*lathe.Engine, *atomic.Int32) {
	t.Helper()
	var ran atomic.Int32
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{
		policy.Middleware(&policy.Policy{}, policy.Options{Fallback: q})}})
	t.Cleanup(func() { e.Close() })
	wipe := builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
		func(_ context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			ran.Add(1)
			return "wiped " + in.Path, nil
		}))
	wipe.Timeout = 20 * time.Second
	if err := e.Register(wipe); err != nil {
		t.Fatal(err)
	}
	return e, &ran
}

// start calls wipe in the background and returns the pending approval it
// waits for, and the channel of its outcome.
func start(t *testing.T, ctx context.Context, e *lathe.Engine, q *approvals.Queue, path string) (approvals.Pending, <-chan *tool.Outcome) {
	t.Helper()
	done := make(chan *tool.Outcome, 1)
	before := map[string]bool{}
	for _, p := range q.Pending() {
		before[p.ID] = true
	}
	go func() {
		args, _ := json.Marshal(map[string]string{"path": path})
		done <- e.Call(ctx, &tool.Call{ID: "c-" + path, Name: "wipe", Arguments: args})
	}()
	deadline := time.After(10 * time.Second)
	for {
		for _, p := range q.Pending() {
			if !before[p.ID] {
				return p, done
			}
		}
		select {
		case out := <-done:
			t.Fatalf("the call ended without waiting for an approval: %s", out.Result.Text())
		case <-deadline:
			t.Fatal("no approval appeared within 10s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func wait(t *testing.T, done <-chan *tool.Outcome) *tool.Outcome {
	t.Helper()
	select {
	case out := <-done:
		return out
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end within 10s of its approval's answer")
		return nil
	}
}

// TestAnswerRunsTheCall: the honest path, so that the refusals below
// count: the right id and digest run the call.
func TestAnswerRunsTheCall(t *testing.T) {
	q := approvals.New(approvals.Options{})
	e, ran := setup(t, q)
	p, done := start(t, context.Background(), e, q, "/tmp/a")
	want, _, _ := approvals.Digest(map[string]any{"path": "/tmp/a"})
	if p.Digest != want || p.Tool != "wipe" || p.CallID != "c-/tmp/a" {
		t.Fatalf("pending approval %+v, want tool wipe, call c-/tmp/a, digest %s", p, want)
	}
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowOnce}); err != nil {
		t.Fatal(err)
	}
	out := wait(t, done)
	if out.Result.IsError || ran.Load() != 1 {
		t.Fatalf("approved call: ran %d times, result %s", ran.Load(), out.Result.Text())
	}
	if len(q.Pending()) != 0 {
		t.Errorf("the answered approval is still pending")
	}
}

// TestForgedAnswersAreRefused: an answer with the digest of other
// arguments, or for an id nobody was given, settles nothing; the call
// still waits, and runs only on the true answer.
func TestForgedAnswersAreRefused(t *testing.T) {
	q := approvals.New(approvals.Options{})
	e, ran := setup(t, q)
	p, done := start(t, context.Background(), e, q, "/home")
	other, _, _ := approvals.Digest(map[string]any{"path": "/tmp/harmless"})
	if err := q.Answer(p.ID, other, policy.Answer{Verdict: policy.AllowAlways}); !errors.Is(err, approvals.ErrDigest) {
		t.Errorf("answer with another call's digest: %v, want ErrDigest", err)
	}
	if err := q.Answer("0123456789abcdef0123456789abcdef", p.Digest, policy.Answer{Verdict: policy.AllowOnce}); !errors.Is(err, approvals.ErrUnknown) {
		t.Errorf("answer for an unknown id: %v, want ErrUnknown", err)
	}
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: "yes"}); !errors.Is(err, approvals.ErrVerdict) {
		t.Errorf("answer %q: %v, want ErrVerdict", "yes", err)
	}
	select {
	case out := <-done:
		t.Fatalf("a forged answer ended the call: %s", out.Result.Text())
	case <-time.After(50 * time.Millisecond):
	}
	if ran.Load() != 0 {
		t.Fatal("the tool ran on a forged answer")
	}
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.Refuse, Reason: "not /home"}); err != nil {
		t.Fatal(err)
	}
	out := wait(t, done)
	if !errors.Is(out.Err(), tool.ErrDenied) || !strings.Contains(out.Result.Text(), "not /home") || ran.Load() != 0 {
		t.Errorf("refused call: ran %d, %v: %s", ran.Load(), out.Err(), out.Result.Text())
	}
}

// TestReplayedAnswerIsRefused: a second answer to an approval (the same
// request sent again, or another verdict after a deny) settles nothing and
// runs nothing.
func TestReplayedAnswerIsRefused(t *testing.T) {
	q := approvals.New(approvals.Options{})
	e, ran := setup(t, q)
	p, done := start(t, context.Background(), e, q, "/x")
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.Refuse}); err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowOnce}); !errors.Is(err, approvals.ErrAnswered) {
		t.Errorf("second answer: %v, want ErrAnswered", err)
	}
	if ran.Load() != 0 {
		t.Errorf("the tool ran after a deny and a replayed allow")
	}
}

// TestAnswerForEndedCallIsRefused: once the call is over (cancelled by
// its caller), its approval is gone and an answer to it is refused; the
// tool does not run late.
func TestAnswerForEndedCallIsRefused(t *testing.T) {
	q := approvals.New(approvals.Options{})
	e, ran := setup(t, q)
	ctx, cancel := context.WithCancel(context.Background())
	p, done := start(t, ctx, e, q, "/y")
	cancel()
	out := wait(t, done)
	if !errors.Is(out.Err(), tool.ErrCancelled) {
		t.Errorf("cancelled call: %v: %s", out.Err(), out.Result.Text())
	}
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowOnce}); !errors.Is(err, approvals.ErrEnded) {
		t.Errorf("answer after the call ended: %v, want ErrEnded", err)
	}
	if len(q.Pending()) != 0 || ran.Load() != 0 {
		t.Errorf("after the call ended: %d pending, ran %d times", len(q.Pending()), ran.Load())
	}
}

// TestWaitIsBounded: an approval nobody answers ends after the queue's
// wait, well before the call's own timeout, as a denial that says why.
func TestWaitIsBounded(t *testing.T) {
	q := approvals.New(approvals.Options{Wait: 100 * time.Millisecond})
	e, ran := setup(t, q)
	_, done := start(t, context.Background(), e, q, "/z")
	out := wait(t, done)
	if !errors.Is(out.Err(), tool.ErrDenied) || !strings.Contains(out.Result.Text(), "approval_wait") || ran.Load() != 0 {
		t.Errorf("unanswered call: ran %d, %v: %s", ran.Load(), out.Err(), out.Result.Text())
	}
	if len(q.Pending()) != 0 {
		t.Errorf("the unanswered approval is still pending after its wait")
	}
}

// TestSessionAnswerHoldsForItsSessionOnly: "allow for the session" given
// for a call of session A lets A's next call run unasked, and not B's.
func TestSessionAnswerHoldsForItsSessionOnly(t *testing.T) {
	q := approvals.New(approvals.Options{})
	e, ran := setup(t, q)
	a := lathe.WithSession(context.Background(), "A")
	p, done := start(t, a, e, q, "/s")
	if p.Session != "A" {
		t.Errorf("pending approval's session %q, want A", p.Session)
	}
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowSession}); err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	args := json.RawMessage(`{"path":"/s"}`)
	if out := e.Call(a, &tool.Call{Name: "wipe", Arguments: args}); out.Result.IsError {
		t.Fatalf("session A's second call: %s", out.Result.Text())
	}
	if ran.Load() != 2 {
		t.Fatalf("ran %d times, want 2", ran.Load())
	}
	b := lathe.WithSession(context.Background(), "B")
	pb, doneB := start(t, b, e, q, "/s")
	if pb.Session != "B" {
		t.Errorf("B's approval names session %q", pb.Session)
	}
	if err := q.Answer(pb.ID, pb.Digest, policy.Answer{Verdict: policy.Refuse}); err != nil {
		t.Fatal(err)
	}
	wait(t, doneB)
	if ran.Load() != 2 {
		t.Errorf("session B's call ran on A's session answer")
	}
}

// TestChangesArePublished: a subscriber sees the approval appear and go.
func TestChangesArePublished(t *testing.T) {
	q := approvals.New(approvals.Options{})
	ch := make(chan approvals.Change, 4)
	defer q.Subscribe(func(c approvals.Change) { ch <- c })()
	e, _ := setup(t, q)
	p, done := start(t, context.Background(), e, q, "/p")
	if err := q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.AllowOnce}); err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	for i, settled := range []bool{false, true} {
		select {
		case c := <-ch:
			if c.Pending.ID != p.ID || c.Settled != settled {
				t.Errorf("change %d: %+v", i, c)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("change %d not published within 5s", i)
		}
	}
}

// TestOperationApproval: a host operation a rule asks about waits in the
// queue too, naming the operation, and runs only once answered.
func TestOperationApproval(t *testing.T) {
	q := approvals.New(approvals.Options{})
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "fetch", Approval: policy.Ask}}}
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{Fallback: q})}})
	t.Cleanup(func() { e.Close() })
	var fetched atomic.Int32
	get := builtin.Must(builtin.Func(tool.Definition{Name: "get", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in struct {
			URL string `json:"url"`
		}) (string, error) {
			if _, err := policy.CheckOperation(ctx, policy.OperationRequest{Kind: "fetch", Subject: in.URL}); err != nil {
				return "", err
			}
			fetched.Add(1)
			return "fetched", nil
		}))
	get.Timeout = 20 * time.Second
	if err := e.Register(get); err != nil {
		t.Fatal(err)
	}
	done := make(chan *tool.Outcome, 1)
	go func() {
		done <- e.Call(context.Background(), &tool.Call{Name: "get", Arguments: json.RawMessage(`{"url":"https://example.com/x"}`)})
	}()
	var pd approvals.Pending
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ps := q.Pending(); len(ps) == 1 {
			pd = ps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no operation approval within 10s")
		}
	}
	if pd.Operation != "fetch https://example.com/x" || fetched.Load() != 0 {
		t.Fatalf("pending %+v, fetched %d", pd, fetched.Load())
	}
	if err := q.Answer(pd.ID, pd.Digest, policy.Answer{Verdict: policy.AllowOnce}); err != nil {
		t.Fatal(err)
	}
	if out := wait(t, done); out.Result.IsError || fetched.Load() != 1 {
		t.Errorf("approved operation: %s, fetched %d", out.Result.Text(), fetched.Load())
	}
}
