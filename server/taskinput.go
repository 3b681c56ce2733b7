package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/mcpconv"
)

// A task's questions. A call that runs as a task may ask its client
// something (an elicitation, a sampling request: a tool's question, an
// approval, an upstream server's request) at a moment when no session of
// the client is there to be asked: the client made the task and went away,
// and will come back, in another session, with the task's ID. So a task's
// question is kept with the task, and waits — as long as the asking call
// waits (its deadline, the task's TTL) — for a client that presents the
// task:
//
//   - MCP 2026-07-28 (the tasks extension): the question is one of the
//     task's inputRequests, which tasks/get shows while the task is
//     input_required, and a tasks/update with its key answers it. It is never
//     sent as a request.
//   - MCP 2025-11-25: the question is sent as a request to each session that
//     is there to take it — the session that made the task, while it lasts,
//     and any session that waits in tasks/result for the task (as the
//     protocol asks a client that sees input_required to do), on the stream
//     of its tasks/result. Each session is sent a question once, however
//     many ways to it are open: on the stream of a tasks/result it waits in
//     when it has one (the client reads that stream for certain), else as a
//     request of the session (over streamable HTTP, its standalone stream).
//     A request the session could not be sent (no standalone stream is
//     open), or whose way ended (a tasks/result given up), goes again on
//     another way to the same session, or on the next one it opens. The
//     first answer counts; the requests still open elsewhere are cancelled.
//     A client that refuses the request has answered (as for a call that is
//     no task); one whose session ends leaves the question to the next.
//
// Either way only a client that presents the task's ID as its principal
// (tasks.go) reaches the question, and a question nobody answers ends as
// any unanswered question does, with the asking call's deadline.

// question is one question of a task's call to its client.
type question struct {
	key    string
	req    sdk.InputRequest // *sdk.ElicitParams or *sdk.CreateMessageParams
	answer chan reply       // buffered: the first answer
	done   chan struct{}    // closed when the question is answered or given up
	// sent is the route each session has the question on, so that no
	// session is asked twice; guarded by taskStore.mu.
	sent map[*sdk.ServerSession]*route
	// missed are the routes it did not reach its session by; it is not
	// sent on them again. Guarded by taskStore.mu.
	missed map[*route]bool
	stop   map[*route]func() // cancels its request on a route; guarded by taskStore.mu
}

// reply is a client's answer to a question, or its refusal.
type reply struct {
	a   sdk.InputResponse
	err error
}

// route is a session a task's questions are sent to, while ctx lasts.
// waits marks the route of a request the client waits on (its
// tasks/result), on whose stream a question reaches it for certain.
type route struct {
	ss    *sdk.ServerSession
	ctx   context.Context
	waits bool
}

// taskAsker is where the call of task t puts its questions.
type taskAsker struct {
	ts *taskStore
	t  *task
}

func (a taskAsker) Elicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	return elicited(a.ts.ask(ctx, a.t, p))
}

func (a taskAsker) CreateMessage(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	return sampled(a.ts.ask(ctx, a.t, p))
}

// ask puts req to t's client and waits for the answer, or for ctx to end.
func (ts *taskStore) ask(ctx context.Context, t *task, req sdk.InputRequest) (sdk.InputResponse, error) {
	q := &question{req: req, answer: make(chan reply, 1), done: make(chan struct{}),
		sent: map[*sdk.ServerSession]*route{}, missed: map[*route]bool{}, stop: map[*route]func(){}}
	ts.mu.Lock()
	if mcpconv.Terminal(t.status) {
		ts.mu.Unlock()
		return nil, errors.New("the task has ended")
	}
	t.keys++
	q.key = "lathe-" + strconv.Itoa(t.keys)
	t.open = append(t.open, q)
	first := t.keys == 1
	t.status, t.updated = mcpconv.TaskInputRequired, time.Now()
	// The routes a client waits on first: a session that has one and
	// another is asked there (sendLocked asks each session once).
	for _, r := range t.routesLocked() {
		ts.sendLocked(t, q, r)
	}
	ts.mu.Unlock()
	if first {
		close(t.asked)
	}
	ts.notify(t)
	defer ts.settle(t, q)
	select {
	case r := <-q.answer:
		return r.a, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not answer: %w", context.Cause(ctx))
	}
}

// settle ends q: it leaves the task's open questions, its requests still
// out are cancelled, and the task is working again when no question is
// left open.
func (ts *taskStore) settle(t *task, q *question) {
	ts.mu.Lock()
	select {
	case <-q.done:
		ts.mu.Unlock()
		return
	default:
	}
	close(q.done)
	t.open = slices.DeleteFunc(t.open, func(o *question) bool { return o == q })
	changed := false
	if len(t.open) == 0 && t.status == mcpconv.TaskInputRequired {
		t.status, t.updated, changed = mcpconv.TaskWorking, time.Now(), true
	}
	stops := q.stop
	q.stop = nil
	ts.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	if changed {
		ts.notify(t)
	}
}

// answer hands a the question key of t, if it is open; it reports whether
// it was. An answer to a question that is not open (never asked, answered
// already, given up) is ignored, as MCP asks.
func (ts *taskStore) answer(t *task, key string, a sdk.InputResponse) bool {
	if a == nil {
		return false
	}
	return ts.reply(t, key, reply{a: a})
}

// reply ends the question key of t with r, if it is open.
func (ts *taskStore) reply(t *task, key string, r reply) bool {
	ts.mu.Lock()
	var q *question
	for _, o := range t.open {
		if o.key == key {
			q = o
		}
	}
	ts.mu.Unlock()
	if q == nil {
		return false
	}
	select {
	case q.answer <- r:
	default:
		// Answered already, a moment ago.
		return false
	}
	ts.settle(t, q)
	return true
}

// attach sends t's questions, those open now and those to come, to the
// session ss while ctx lasts (MCP 2025-11-25); waits says ctx is that of a
// request the client waits on, whose stream the questions go on. The
// returned function detaches it.
func (ts *taskStore) attach(t *task, ss *sdk.ServerSession, ctx context.Context, waits bool) func() {
	r := &route{ss: ss, ctx: ctx, waits: waits}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if mcpconv.Terminal(t.status) {
		return func() {}
	}
	t.routes[r] = struct{}{}
	for _, q := range t.open {
		ts.sendLocked(t, q, r)
	}
	return func() {
		ts.mu.Lock()
		delete(t.routes, r)
		ts.mu.Unlock()
	}
}

// routesLocked are t's routes, those a client waits on first. ts.mu is
// held.
func (t *task) routesLocked() []*route {
	rs := make([]*route, 0, len(t.routes))
	for r := range t.routes {
		if r.waits {
			rs = append(rs, r)
		}
	}
	for r := range t.routes {
		if !r.waits {
			rs = append(rs, r)
		}
	}
	return rs
}

// sendLocked sends q to the session of r, unless that session has it
// already, on this route or another; the first answer counts. ts.mu is
// held.
func (ts *taskStore) sendLocked(t *task, q *question, r *route) {
	if q.stop == nil || q.sent[r.ss] != nil || q.missed[r] {
		return
	}
	q.sent[r.ss] = r
	// The request carries the values of the route's context (over HTTP,
	// which request's stream it goes on) and the task (its _meta names the
	// task), and ends with the question or the route.
	ctx, cancel := context.WithCancel(context.WithValue(r.ctx, taskKey{}, t))
	q.stop[r] = cancel
	go func() {
		defer cancel()
		var (
			a   sdk.InputResponse
			err error
		)
		switch p := q.req.(type) {
		case *sdk.ElicitParams:
			a, err = r.ss.Elicit(ctx, p)
		case *sdk.CreateMessageParams:
			a, err = r.ss.CreateMessage(ctx, p)
		default:
			err = fmt.Errorf("a question of type %T cannot be sent", q.req)
		}
		switch {
		case err == nil:
			ts.answer(t, q.key, a)
		case ctx.Err() != nil || errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, errUndelivered):
			// The question was settled, or it did not reach the session
			// this way: its way ended, or the session had no stream to
			// take it (streamable HTTP without a standalone stream). It
			// stays open, for another way to the same session or for
			// another session.
			ts.unsent(t, q, r)
		default:
			// The client refused it (it cannot be asked, say): that is
			// its answer, as for a question of a call that is no task.
			ts.reply(t, q.key, reply{err: err})
		}
	}()
}

// errUndelivered matches the error of a request the SDK's transport could
// not write (the SDK's jsonrpc2.ErrRejected, which it does not export):
// over streamable HTTP, a request of a session with no standalone stream
// open, or one related to a request already answered. The client was not
// asked, so it did not refuse. A client that answers with this code itself
// is taken at its word: it was not asked either.
var errUndelivered = &jsonrpc.Error{Code: -32005}

// unsent notes that q did not reach the session of r by r, and sends it by
// another route to that session, if one is open. r is not tried again, so
// that two routes that cannot deliver do not pass the question back and
// forth.
func (ts *taskStore) unsent(t *task, q *question, r *route) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if q.sent[r.ss] != r {
		return
	}
	delete(q.sent, r.ss)
	delete(q.stop, r)
	q.missed[r] = true
	for _, o := range t.routesLocked() {
		if o != r && o.ss == r.ss && o.ctx.Err() == nil {
			ts.sendLocked(t, q, o)
			return
		}
	}
}

// inputRequests are t's open questions, by key. ts.mu is held.
func (t *task) inputRequests() sdk.InputRequestMap {
	if len(t.open) == 0 {
		return nil
	}
	m := make(sdk.InputRequestMap, len(t.open))
	for _, q := range t.open {
		m[q.key] = q.req
	}
	return m
}
