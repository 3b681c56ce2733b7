package mcp

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

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

// nextTurnLocked wakes the calls that wait for their turn, and the
// questions that wait to be placed (see attribute), after a call ended or
// a question came or left. s.mu is held.
func (s *server) nextTurnLocked() {
	if s.turn != nil {
		close(s.turn)
		s.turn = nil
	}
}

// Placing a question that names no call. The first such question of a
// server may come while calls of several clients are in flight (they do
// not take turns yet), and later ones while a call of another client may
// still be worked on (it was abandoned: cancelled, timed out). Such a
// question is not guessed at: it waits, within the lives of the calls it
// may be for, until what has happened since tells whose it is.
//
//   - Its candidates are the calls in flight when it came: a call that
//     begins later was sent after it, and cannot be what it is for.
//   - A candidate the server answers is not waiting for it (a server asks
//     in the course of a call, and answers the call once it has its
//     answer), and drops out. A candidate that ends without the server's
//     answer stays a suspect (the server may still be at work on it), as a
//     call of another session abandoned shortly before (lingerAbandoned)
//     does.
//   - When the candidates still in flight, and the suspects, are all of one
//     client, the question is that client's: it is put to that client,
//     through its one call left, or, through the hooks of its earliest one,
//     when every one of them can be asked and none holds answers of its
//     own (a question ends a call only when it names which).
//   - When every candidate still in flight may itself be waiting for a
//     question that waits (as many questions wait as candidates are in
//     flight), no call will end to tell whose it is: the oldest question
//     is refused, saying why, so that its call ends, and the others can
//     then be placed. (A server that asks two questions at once in one
//     call may so see one refused that waiting would have placed: a
//     refusal costs a call, a wrong guess another person's question.)
//
// This rests on what a server does in the course of a call: it asks, and
// answers the call once it has the answer. A server that asks in the
// background about a call it has answered cannot be told, over stdio
// before 2026-07-28, from one that asks for the call in flight.
//
// A question waits no longer than the server waits for it (the SDK ends
// the request when the server cancels it or the session ends) and no
// longer than its candidates are in flight.

// errUnplaced refuses a question lathe could not place.
var errUnplaced = errors.New("lathe cannot tell which of the calls under way this question of the server is for: " +
	"several calls were in flight when it came, and each may be waiting for a question; " +
	"it was shown to no one. From now on the server's calls of different clients take turns: call again")

// errNoCandidate refuses a question whose candidates all ended.
var errNoCandidate = errors.New("lathe cannot tell which call this question of the server is for: " +
	"the calls under way when it came have ended, and it was shown to no one")

// placed names in ctx the call a question is for (inflightKey), or none
// (id 0, which names no call).
func placed(ctx context.Context, id uint64) context.Context {
	return context.WithValue(ctx, inflightKey{}, id)
}

// attribute returns ctx naming the call the server's question (an
// elicitation or a sampling request) is for, once that can be known (see
// above); has says whether a call's hooks can put the question. A question
// that names its call is returned as it is. One that can be placed on no
// call names none, and err says why, unless no call was in flight when it
// came (it is then a question of no call, for the pool's own hooks).
func (s *server) attribute(ctx context.Context, has func(tool.Hooks) bool) (_ context.Context, err error) {
	if _, ok := ctx.Value(inflightKey{}).(uint64); ok {
		return ctx, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	candidates := make([]uint64, 0, len(s.inflight))
	for id := range s.inflight {
		candidates = append(candidates, id)
	}
	if len(candidates) == 0 {
		return placed(ctx, 0), nil
	}
	slices.Sort(candidates)
	if s.held == nil {
		s.held = map[uint64]bool{}
	}
	s.nextHeld++
	me := s.nextHeld
	s.held[me] = true
	s.nextTurnLocked()
	defer func() {
		delete(s.held, me)
		s.nextTurnLocked()
	}()
	for {
		now := time.Now()
		var alive []uint64
		clients := map[string]bool{}
		for _, id := range candidates {
			if f := s.inflight[id]; f != nil {
				alive = append(alive, id)
				clients[f.session] = true
			}
		}
		running := len(clients)
		var expiry time.Time
		s.abandoned.prune(now)
		s.abandoned.each(func(sid string, until time.Time) bool {
			if !clients[sid] {
				clients[sid] = true
				if expiry.IsZero() {
					expiry = until // the soonest: each goes by expiry
				}
			}
			return true
		})
		if task, _ := ctx.Value(relatedTask{}).(string); task != "" {
			// The question names a task: its call is one that may
			// become a task and whose answer lathe has not read yet, and
			// no other. When no such call is left (the task's call
			// ended, and the server asks again, a copy of a question
			// already answered, say), it names no call in flight: none
			// of those calls is a candidate, however alone.
			if id := s.byTaskLocked(task, func(id uint64) bool { return slices.Contains(alive, id) }); id != 0 {
				return placed(ctx, id), nil
			}
			if !slices.ContainsFunc(alive, func(id uint64) bool { return s.inflight[id].taskPending }) {
				return placed(ctx, 0), errNoCandidate
			}
		} else {
			switch {
			case len(alive) == 0:
				return placed(ctx, 0), errNoCandidate
			case len(clients) == 1 && len(alive) == 1:
				return placed(ctx, alive[0]), nil
			case len(clients) == 1 && s.askableLocked(alive, has):
				return placed(ctx, alive[0]), nil
			case len(s.held) >= len(alive) && s.oldestHeldLocked() == me && (running > 1 || expiry.IsZero()):
				// (A suspect of another client that lingers still lets
				// the question wait for the end of its linger.)
				return placed(ctx, 0), errUnplaced
			}
		}
		if s.turn == nil {
			s.turn = make(chan struct{})
		}
		turn := s.turn
		// A suspect that lingers stops being one when its linger ends.
		var linger *time.Timer
		var lingered <-chan time.Time
		if !expiry.IsZero() {
			linger = time.NewTimer(expiry.Sub(now))
			lingered = linger.C
		}
		s.mu.Unlock()
		select {
		case <-turn:
		case <-lingered:
		case <-ctx.Done():
			err = ctx.Err()
		case <-s.ctx.Done():
			err = errors.New("the MCP server's pool is closing")
		}
		if linger != nil {
			linger.Stop()
		}
		s.mu.Lock()
		if err != nil {
			return placed(ctx, 0), err
		}
	}
}

// askableLocked reports whether each of the calls ids can put a question
// through its hooks, and none holds answers of its own. s.mu is held.
func (s *server) askableLocked(ids []uint64, has func(tool.Hooks) bool) bool {
	for _, id := range ids {
		f := s.inflight[id]
		if !has(f.hooks) || len(f.answers) > 0 {
			return false
		}
	}
	return true
}

// oldestHeldLocked is the first of the questions waiting to be placed.
// s.mu is held.
func (s *server) oldestHeldLocked() uint64 {
	var oldest uint64
	for q := range s.held {
		if oldest == 0 || q < oldest {
			oldest = q
		}
	}
	return oldest
}
