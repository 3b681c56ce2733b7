package policy_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
)

// Every way an ask is settled is published as the answer it amounts to, by
// whom; approval_asked comes only when someone is asked and waited for.
func TestApprovalEvents(t *testing.T) {
	verdicts := []policy.Verdict{policy.AllowSession, policy.AllowAlways, policy.Refuse}
	var mu sync.Mutex
	approver := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		v := verdicts[0]
		verdicts = verdicts[1:]
		return policy.Answer{Verdict: v, Reason: "not now"}, nil
	})
	grants := &memGrants{m: map[string]bool{}}
	e := engine(t, &policy.Policy{}, policy.Options{Approver: approver, Grants: grants})

	var evmu sync.Mutex
	var got []string
	finished := make(chan struct{}, 16)
	cancel := e.Subscribe(func(ev lathe.Event) {
		evmu.Lock()
		defer evmu.Unlock()
		switch ev.Kind {
		case lathe.EventApprovalAsked:
			got = append(got, fmt.Sprintf("%s %s asked rule=%q reason=%t", ev.Session, ev.Tool, ev.Approval.Rule, ev.Approval.Reason != ""))
		case lathe.EventApprovalAnswered:
			got = append(got, fmt.Sprintf("%s %s %s by %s", ev.Session, ev.Tool, ev.Approval.Answer, ev.Approval.By))
		case lathe.EventCallFinished:
			finished <- struct{}{}
		}
	})
	defer cancel()

	a := lathe.WithSession(context.Background(), "a")
	b := lathe.WithSession(context.Background(), "b")
	steps := []struct {
		ctx  context.Context
		name string
	}{
		{a, "wipe"}, // asked: session
		{a, "wipe"}, // the session's earlier answer
		{b, "wipe"}, // another session is asked: always, and a grant is stored
		{b, "wipe"}, // the session's answer ("always" holds for the session too)
		{lathe.WithSession(context.Background(), "c"), "wipe"},                           // the stored grant
		{policy.WithPerson(lathe.WithSession(context.Background(), "d"), "cli"), "look"}, // read-only: no ask
	}
	for _, s := range steps {
		call(s.ctx, e, s.name)
	}
	// Refused: the grant covers wipe, so ask about another tool.
	grants.mu.Lock()
	clear(grants.m)
	grants.mu.Unlock()
	call(lathe.WithSession(context.Background(), "e"), e, "wipe")
	call(policy.WithPerson(lathe.WithSession(context.Background(), "f"), "cli"), e, "wipe")
	for i := range len(steps) + 2 {
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d calls finished within 10s", i, len(steps)+2)
		}
	}
	want := []string{
		`a wipe asked rule="" reason=true`, "a wipe session by approver",
		"a wipe session by session",
		`b wipe asked rule="" reason=true`, "b wipe always by approver",
		"b wipe session by session",
		"c wipe always by grant",
		`e wipe asked rule="" reason=true`, "e wipe deny by approver",
		"f wipe once by cli",
	}
	evmu.Lock()
	defer evmu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("approval events:\n%s\nwant:\n%s", fmt.Sprint(got), fmt.Sprint(want))
	}
}
