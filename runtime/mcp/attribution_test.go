package mcp

import (
	"context"
	"testing"
)

// TestCallerAfterAnotherSessionsCall: a request naming no call is not
// taken for the only call in flight when a call of another session was in
// flight with it, or was abandoned (cancelled, timed out) shortly before
// it began: the request may be for that other call (a server still at work
// on a call it was told to cancel). Calls of one
// session, one after another, keep their questions.
func TestCallerAfterAnotherSessionsCall(t *testing.T) {
	bg := context.Background()
	s := &server{inflight: map[uint64]*inflight{}}

	a := s.track(&inflight{session: "alice"})
	s.untrack(a, false)
	b := s.track(&inflight{session: "bob"})
	if id, f := s.caller(bg); f != nil {
		t.Errorf("bob's call, begun as alice's was abandoned, was taken for a request naming no call (call %d)", id)
	}
	s.untrack(b, false)

	// Alice again: bob's call was abandoned, and may still be worked on.
	a = s.track(&inflight{session: "alice"})
	if id, f := s.caller(bg); f != nil {
		t.Errorf("alice's call, begun as bob's was abandoned, was taken for a request naming no call (call %d)", id)
	}
	s.untrack(a, true)

	// Two calls of other sessions in flight at once: both are shared, even
	// once one of them is alone.
	s = &server{inflight: map[uint64]*inflight{}}
	a = s.track(&inflight{session: "alice"})
	b = s.track(&inflight{session: "bob"})
	s.untrack(b, true)
	if id, f := s.caller(bg); f != nil {
		t.Errorf("alice's call, which bob's overlapped, was taken for a request naming no call (call %d)", id)
	}
	s.untrack(a, true)

	// One session's calls, one after another, are attributed.
	s = &server{inflight: map[uint64]*inflight{}}
	a = s.track(&inflight{session: "alice"})
	s.untrack(a, true)
	a = s.track(&inflight{session: "alice"})
	if id, f := s.caller(bg); id != a || f == nil {
		t.Errorf("alice's only call, after one of her own, was not attributed: got %d, want %d", id, a)
	}
	// A request naming its call is attributed whatever else is in flight.
	b = s.track(&inflight{session: "bob"})
	if id, f := s.caller(context.WithValue(bg, inflightKey{}, b)); id != b || f == nil {
		t.Errorf("a request naming bob's call: got %d, want %d", id, b)
	}
}
