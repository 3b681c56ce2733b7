package policy_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// hungApprover is a person who never answers: it waits until its context
// ends, and reports that it was asked.
func hungApprover(asked chan<- struct{}) policy.Approver {
	return policy.ApproverFunc(func(ctx context.Context, _ *policy.Request) (policy.Answer, error) {
		asked <- struct{}{}
		<-ctx.Done()
		return policy.Answer{}, ctx.Err()
	})
}

// TestApprovalNobodyAnswersEndsWithTheTimeout: an approval nobody answers
// must not hold the call (and the client's session, and the audit record)
// past the call's timeout: the call ends as a timeout, and the tool never
// runs.
func TestApprovalNobodyAnswersEndsWithTheTimeout(t *testing.T) {
	asked := make(chan struct{}, 1)
	var ran atomic.Bool
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{
		policy.Middleware(&policy.Policy{}, policy.Options{Approver: hungApprover(asked)})}})
	t.Cleanup(func() { e.Close() })
	wipe := builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
		func(context.Context, struct {
			Path string `json:"path"`
		}) (string, error) {
			ran.Store(true)
			return "wiped", nil
		}))
	wipe.Timeout = 200 * time.Millisecond
	if err := e.Register(wipe); err != nil {
		t.Fatal(err)
	}
	done := make(chan *tool.Outcome, 1)
	start := time.Now()
	go func() { done <- call(context.Background(), e, "wipe") }()
	select {
	case out := <-done:
		if !errors.Is(out.Err(), tool.ErrTimeout) || !strings.Contains(out.Result.Text(), "nobody answered") {
			t.Errorf("want a timeout naming the unanswered approval, got %v: %s", out.Err(), out.Result.Text())
		}
		if d := time.Since(start); d < 200*time.Millisecond {
			t.Errorf("the call ended after %s, before its timeout of 200ms", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call whose approval nobody answers did not end within 10s; its timeout is 200ms")
	}
	select {
	case <-asked:
	default:
		t.Fatal("the approver was never asked")
	}
	if ran.Load() {
		t.Error("the tool ran without an approval")
	}
}

// TestApprovalEndsWithCancellation: a caller that gives up (an MCP client's
// notifications/cancelled, its session closing, lathe serve stopping) ends
// the wait for the approval, and the call is cancelled, not denied.
func TestApprovalEndsWithCancellation(t *testing.T) {
	asked := make(chan struct{}, 1)
	e := engine(t, &policy.Policy{}, policy.Options{Approver: hungApprover(asked)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *tool.Outcome, 1)
	go func() { done <- call(ctx, e, "wipe") }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the approver was not asked within 10s")
	}
	cancel()
	select {
	case out := <-done:
		if !errors.Is(out.Err(), tool.ErrCancelled) {
			t.Errorf("want a cancelled call, got %v: %s", out.Err(), out.Result.Text())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call whose approval nobody answers did not end within 10s")
	}
}

// TestFallbackAskedOnlyWhenNobodyElseCan: a call whose caller offers an
// elicitation asks its own person, not the fallback; one whose caller
// cannot answer asks the fallback, which the answer names as "remote".
func TestFallbackAskedOnlyWhenNobodyElseCan(t *testing.T) {
	var fallback, elicited atomic.Int32
	fb := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		fallback.Add(1)
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{
		policy.Middleware(&policy.Policy{}, policy.Options{Fallback: fb})}})
	t.Cleanup(func() { e.Close() })
	answered := make(chan string, 2)
	defer e.Subscribe(func(ev lathe.Event) { answered <- ev.Approval.By }, lathe.EventApprovalAnswered)()
	wipe := builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
		func(context.Context, struct {
			Path string `json:"path"`
		}) (string, error) {
			return "wiped", nil
		}))
	if err := e.Register(wipe); err != nil {
		t.Fatal(err)
	}
	ctx := tool.WithHooks(context.Background(), tool.Hooks{Elicit: func(context.Context, *tool.ElicitRequest) (*tool.ElicitResult, error) {
		elicited.Add(1)
		return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{"decision": "once"}}, nil
	}})
	if out := call(ctx, e, "wipe"); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if elicited.Load() != 1 || fallback.Load() != 0 {
		t.Errorf("caller with elicitation: elicited %d, fallback %d; want 1, 0", elicited.Load(), fallback.Load())
	}
	if out := call(context.Background(), e, "wipe"); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if fallback.Load() != 1 {
		t.Errorf("caller without elicitation: fallback asked %d times, want 1", fallback.Load())
	}
	for _, want := range []string{"client", "remote"} {
		select {
		case by := <-answered:
			if by != want {
				t.Errorf("answered by %q, want %q", by, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no approval_answered event (by %s) within 5s", want)
		}
	}
}
