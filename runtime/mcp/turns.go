package mcp

import "context"

// Turns. A server that asks its client something (an elicitation, a
// sampling request) without naming the call it is for — MCP before
// 2026-07-28, over stdio; over streamable HTTP, a request the server sends
// off the stream of the call (see related.go) — leaves lathe to guess, and
// lathe guesses only when one client's calls alone are in flight (see
// server.caller): with calls of two clients in flight, the question is
// refused. So from the first such question a server asks on, calls of
// different clients (sessions) to it take turns: a call waits while a call
// of another session is in flight, and its own session's calls wait while
// it does, so that no client keeps the others waiting for good. The cost:
// on such a server, the calls of different clients run one client at a
// time (a client's own calls still run together), and a call that waits
// its turn waits within its own deadline. A server that names its calls
// keeps running every client's calls at once.

// noteUnnamed notes a question of the server that names no call (ctx
// names none), from which on its calls take turns.
func (s *server) noteUnnamed(ctx context.Context) {
	if _, ok := ctx.Value(inflightKey{}).(uint64); !ok {
		s.unnamed.Store(true)
	}
}

// trackTurn is track, after waiting for the call's turn when the server's
// calls take turns. It fails only when ctx ends first.
func (s *server) trackTurn(ctx context.Context, f *inflight) (uint64, error) {
	if !s.unnamed.Load() {
		return s.track(f), nil
	}
	waiting := false
	defer func() {
		if waiting {
			s.mu.Lock()
			s.waiters[f.session]--
			if s.waiters[f.session] == 0 {
				delete(s.waiters, f.session)
			}
			s.mu.Unlock()
		}
	}()
	for {
		s.mu.Lock()
		if s.myTurnLocked(f.session) {
			s.mu.Unlock()
			return s.track(f), nil
		}
		if !waiting {
			waiting = true
			if s.waiters == nil {
				s.waiters = map[string]int{}
			}
			s.waiters[f.session]++
		}
		if s.turn == nil {
			s.turn = make(chan struct{})
		}
		turn := s.turn
		s.mu.Unlock()
		select {
		case <-turn:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// myTurnLocked reports whether a call of session may begin: no call of
// another session is in flight, and, while calls of its own are, no call of
// another session waits. s.mu is held.
func (s *server) myTurnLocked(session string) bool {
	for _, g := range s.inflight {
		if g.session != session {
			return false
		}
	}
	if len(s.inflight) == 0 {
		return true
	}
	for other, n := range s.waiters {
		if other != session && n > 0 {
			return false
		}
	}
	return true
}

// nextTurnLocked wakes the calls that wait for their turn, after a call
// ended. s.mu is held.
func (s *server) nextTurnLocked() {
	if s.turn != nil {
		close(s.turn)
		s.turn = nil
	}
}
