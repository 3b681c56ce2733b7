package mcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/internal/mcpconv"
	"github.com/lathe-tools/lathe/tool"
)

// TestTurnsAreFair: on a server whose calls take turns, a call of another
// session waits while a call is in flight, and then the first session's
// next call waits for it, rather than keep it waiting for good.
func TestTurnsAreFair(t *testing.T) {
	s := &server{inflight: map[uint64]*inflight{}}
	s.unnamed.Store(true)
	bg := context.Background()
	a1, err := s.trackTurn(bg, &inflight{session: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	bob := make(chan uint64, 1)
	go func() {
		ctx, cancel := context.WithTimeout(bg, 10*time.Second)
		defer cancel()
		id, err := s.trackTurn(ctx, &inflight{session: "bob"})
		if err != nil {
			id = 0
		}
		bob <- id
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		s.mu.Lock()
		n := s.waiters["bob"]
		s.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's call did not wait for its turn within 5s")
		}
	}
	// Alice's next call waits for bob's turn.
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	defer cancel()
	if _, err := s.trackTurn(ctx, &inflight{session: "alice"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("alice's second call, while bob's waited: %v, want it to wait", err)
	}
	s.untrack(a1, true)
	select {
	case id := <-bob:
		if id == 0 {
			t.Fatal("bob's call never got its turn")
		}
		s.untrack(id, true)
	case <-time.After(10 * time.Second):
		t.Fatal("bob's call did not begin within 10s of alice's end")
	}
	// A server that names its calls runs every session's at once.
	s = &server{inflight: map[uint64]*inflight{}}
	s.trackTurn(bg, &inflight{session: "alice"})
	ctx, cancel = context.WithTimeout(bg, time.Second)
	defer cancel()
	if _, err := s.trackTurn(ctx, &inflight{session: "bob"}); err != nil {
		t.Errorf("bob's call on a server that names its calls waited: %v", err)
	}
}

// TestAttributeRules: the rules that place a question naming no call,
// without a server process: one client's calls, a call that ends
// answered, questions that wait for each other, and a call abandoned.
func TestAttributeRules(t *testing.T) {
	bg := context.Background()
	elicits := func(h tool.Hooks) bool { return h.Elicit != nil }
	ask := tool.Hooks{Elicit: func(context.Context, *tool.ElicitRequest) (*tool.ElicitResult, error) { return nil, nil }}
	type placement struct {
		id  uint64
		err error
	}
	attributeTask := func(s *server, task string) chan placement {
		ch := make(chan placement, 1)
		go func() {
			ctx, cancel := context.WithTimeout(bg, 10*time.Second)
			defer cancel()
			if task != "" {
				ctx = s.named(ctx, map[string]any{mcpconv.RelatedTaskKey: map[string]any{"taskId": task}})
			}
			ctx, err := s.attribute(ctx, elicits)
			id, _ := ctx.Value(inflightKey{}).(uint64)
			ch <- placement{id, err}
		}()
		return ch
	}
	attribute := func(s *server) chan placement { return attributeTask(s, "") }
	get := func(ch chan placement, what string) placement {
		t.Helper()
		select {
		case p := <-ch:
			return p
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: not placed within 5s", what)
			return placement{}
		}
	}
	waits := func(ch chan placement, what string) {
		t.Helper()
		select {
		case p := <-ch:
			t.Fatalf("%s: placed on %d (%v), want it to wait", what, p.id, p.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	newServer := func() *server {
		s := &server{inflight: map[uint64]*inflight{}}
		s.ctx = bg
		return s
	}

	// Two calls of alice who can be asked: hers, at once, on the first.
	s := newServer()
	a1 := s.track(&inflight{session: "alice", hooks: ask})
	s.track(&inflight{session: "alice", hooks: ask})
	if p := get(attribute(s), "alice's calls"); p.id != a1 || p.err != nil {
		t.Errorf("a question while alice's calls alone are in flight: call %d (%v), want %d", p.id, p.err, a1)
	}

	// The same, but they cannot be asked (the question would end one of
	// them): it waits for one to end, and both asking is refused.
	s = newServer()
	a1 = s.track(&inflight{session: "alice"})
	a2 := s.track(&inflight{session: "alice"})
	q1 := attribute(s)
	waits(q1, "a question while two calls of alice that cannot be asked are in flight")
	q2 := attribute(s)
	if p := get(q1, "the first of two questions"); p.id != 0 || p.err != errUnplaced {
		t.Errorf("the first of two questions while two calls were in flight: call %d (%v), want refused", p.id, p.err)
	}
	waits(q2, "the second question, its calls both in flight")
	s.untrack(a1, true)
	if p := get(q2, "the second question"); p.id != a2 || p.err != nil {
		t.Errorf("the second question, the other call answered: call %d (%v), want %d", p.id, p.err, a2)
	}

	// A question while alice's and bob's calls are in flight: bob's call
	// is answered, and it is alice's.
	s = newServer()
	a1 = s.track(&inflight{session: "alice"})
	b1 := s.track(&inflight{session: "bob"})
	q1 = attribute(s)
	waits(q1, "a question while alice's and bob's calls are in flight")
	s.untrack(b1, true)
	if p := get(q1, "the question after bob's answer"); p.id != a1 || p.err != nil {
		t.Errorf("after bob's call was answered: call %d (%v), want alice's %d", p.id, p.err, a1)
	}

	// The same, but bob's call is abandoned: the question may be his, and
	// is never alice's; when her call ends it is refused.
	s = newServer()
	a1 = s.track(&inflight{session: "alice"})
	b1 = s.track(&inflight{session: "bob"})
	q1 = attribute(s)
	waits(q1, "a question while alice's and bob's calls are in flight")
	s.untrack(b1, false)
	waits(q1, "the question after bob gave up on his call")
	s.untrack(a1, true)
	if p := get(q1, "the question after both calls ended"); p.id != 0 || p.err != errNoCandidate {
		t.Errorf("after bob's call was abandoned and alice's answered: call %d (%v), want refused", p.id, p.err)
	}

	// A question naming alice's task, which ended, while bob's call is
	// alone in flight: it names no call in flight, and is never bob's.
	s = newServer()
	a1 = s.track(&inflight{session: "alice", task: "task-a"})
	if p := get(attributeTask(s, "task-a"), "a question naming alice's task"); p.id != a1 || p.err != nil {
		t.Errorf("a question naming alice's task: call %d (%v), want %d", p.id, p.err, a1)
	}
	s.untrack(a1, true)
	b1 = s.track(&inflight{session: "bob", hooks: ask})
	if p := get(attributeTask(s, "task-a"), "a copy naming alice's ended task"); p.id != 0 || p.err != errNoCandidate {
		t.Errorf("a question naming alice's ended task, bob's call alone in flight: call %d (%v), want refused", p.id, p.err)
	}

	// A question naming a task before lathe has read whose it is: it
	// waits for the call that may become a task, and is placed when that
	// call's answer names the task.
	b2 := s.track(&inflight{session: "bob", taskPending: true})
	q1 = attributeTask(s, "task-b")
	waits(q1, "a question naming a task lathe has not read the handle of")
	s.noteTask(context.WithValue(bg, inflightKey{}, b2), "task-b", false)
	if p := get(q1, "a question naming bob's task"); p.id != b2 || p.err != nil {
		t.Errorf("a question naming bob's task, once read: call %d (%v), want %d", p.id, p.err, b2)
	}
	_ = b1
}
