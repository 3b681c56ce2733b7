package mcp

import (
	"context"
	"errors"
	"testing"
	"time"
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
