package lathe

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// EventKind names what an [Event] reports.
type EventKind string

// The kinds of event an engine publishes.
const (
	// EventToolsChanged: the registry changed (Register, Replace,
	// Unregister, an upstream MCP server's tools/list_changed). Added and
	// Removed name the tools.
	EventToolsChanged EventKind = "tools_changed"
	// EventCallStarted: a call entered the pipeline; nothing has been
	// checked yet, so Tool is the name the caller asked for.
	EventCallStarted EventKind = "call_started"
	// EventApprovalAsked: the policy is asking someone (an approver, the
	// client's person) whether the call may run, and waits for the answer.
	EventApprovalAsked EventKind = "approval_asked"
	// EventApprovalAnswered: an approval the policy asked for was settled:
	// by the one it asked, or without asking, by a grant, an earlier answer
	// for the session, or the person who typed the call. Approval says how.
	EventApprovalAnswered EventKind = "approval_answered"
	// EventProgress: the running tool reported progress.
	EventProgress EventKind = "progress"
	// EventCallFinished: the call ended. Outcome says how, and Duration
	// how long it took since EventCallStarted.
	EventCallFinished EventKind = "call_finished"
	// EventOperation: the running tool asked its host for an operation
	// (package host: a file read, a URL fetched, a command run), and what
	// became of it. Operation says which; see [RecordOperation].
	EventOperation EventKind = "operation"
)

// Outcomes of [EventCallFinished] other than an error kind.
const (
	OutcomeOK       = "ok"
	OutcomeQuestion = "question"
)

// Event is one thing that happened in an engine, as [Engine.Subscribe]
// delivers it. Kind says which of the fields below it sets. Events carry
// names, numbers and verdicts, never a call's arguments or the content of
// its result, so that a subscriber which exports them (metrics, traces)
// cannot leak what a tool read or wrote. An operation's subject names what
// a confined tool touched (a path, a URL without its userinfo and query
// values, a command line, a variable's name), never the content.
//
// An event's slices and pointers are shared by every subscriber: read them,
// do not change them.
type Event struct {
	Kind EventKind
	// Time is when it happened.
	Time time.Time

	// Call numbers the call an event belongs to, from 1 in each engine, so
	// that the events of one call can be told from another's even when
	// callers reuse or leave out their IDs. It is 0 for [EventToolsChanged].
	Call uint64
	// CallID is the caller's ID of the call ([tool.Call].ID), Tool the
	// name of the tool called, and Session the caller's session
	// ([WithSession]), if its context carries one.
	CallID, Tool, Session string

	// Added and Removed name the tools of [EventToolsChanged]; a tool that
	// was replaced by a new definition of the same name is in both.
	Added, Removed []string

	// Approval describes [EventApprovalAsked] and [EventApprovalAnswered].
	Approval *Approval

	// Progress is the report of [EventProgress].
	Progress *tool.Progress

	// Operation is the host operation of [EventOperation]. For
	// [EventApprovalAsked] and [EventApprovalAnswered] about an operation
	// rather than the call (a policy rule that asks before a tool fetches a
	// URL), it names the operation (Kind and Subject); nil for a call's own
	// approval. Its subject is a path, a URL or a command line, with the
	// URLs' userinfo and query values redacted; never a variable's value.
	Operation *Operation

	// Outcome, for [EventCallFinished], is [OutcomeOK], [OutcomeQuestion],
	// or the [tool.ErrorKind] of a failed call ("denied", "timeout" …);
	// Duration is the time since [EventCallStarted].
	Outcome  string
	Duration time.Duration

	// Dropped counts the events this subscriber lost just before this one,
	// because it fell behind (see [Engine.Subscribe]); usually 0.
	Dropped uint64
}

// Approval is what the policy stage reports of an approval it asked for.
type Approval struct {
	// Rule names the rule that asked: where it came from ("lathe.toml:12"),
	// or its tool pattern when it came from nowhere in particular; empty
	// when no rule matched and the tool's annotations asked.
	Rule string
	// Reason says, when asked, why the policy asks; when answered, why the
	// answer is what it is (a refusal's reason goes back to the model).
	Reason string
	// Answer, when answered, is "once", "session", "always" or "deny".
	Answer string
	// By names, when answered, who answered: "approver" (the program's own),
	// "client" (an MCP client's person), "session" (an earlier answer for
	// the session), "grant" (a stored grant), the person who typed the call
	// (such as "cli"), "remote" (someone elsewhere, through the policy's
	// fallback approver), or "nobody" when there was no one to ask.
	By string
}

type sessionKey struct{}

// WithSession returns a context whose calls belong to the caller's session
// id. The policy's "allow for the session" holds for the calls of that
// session alone, and the engine's events name it, so that a face serving
// several clients at once (lathe serve over HTTP) tells them apart. Calls
// without one share the process's session.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

// SessionFrom returns the session of ctx ([WithSession]); "" when it has none.
func SessionFrom(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

type sessionEndKey struct{}

// WithSessionEnd returns a context whose session ([WithSession]) ends when
// end is closed. What is kept for the session, such as the policy's "allow
// for the session", is dropped then, so that clients that come and go do
// not make it grow for as long as the process lives. A face that names
// sessions says when each ends; what is kept for a session without an end
// lasts until the process ends.
func WithSessionEnd(ctx context.Context, end <-chan struct{}) context.Context {
	return context.WithValue(ctx, sessionEndKey{}, end)
}

// SessionEnd returns the channel that is closed when the session of ctx
// ends ([WithSessionEnd]); nil when nobody said.
func SessionEnd(ctx context.Context) <-chan struct{} {
	end, _ := ctx.Value(sessionEndKey{}).(<-chan struct{})
	return end
}

// eventBuffer is how many events a subscriber may fall behind before
// further ones are dropped for it.
const eventBuffer = 1024

// kindMask is a set of event kinds.
type kindMask uint8

func (k EventKind) bit() kindMask {
	switch k {
	case EventToolsChanged:
		return 1 << 0
	case EventCallStarted:
		return 1 << 1
	case EventApprovalAsked:
		return 1 << 2
	case EventApprovalAnswered:
		return 1 << 3
	case EventProgress:
		return 1 << 4
	case EventCallFinished:
		return 1 << 5
	case EventOperation:
		return 1 << 6
	}
	return 0
}

// callKinds are the kinds that follow a call: a call is traced only while
// somebody listens to one of them.
const callKinds kindMask = 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5 | 1<<6

// hub fans an engine's events out to its subscribers.
type hub struct {
	mu     sync.Mutex // serialises changes of subs
	subs   atomic.Pointer[subscribers]
	calls  atomic.Uint64 // the last call number given out
	closed bool
}

// subscribers is an immutable snapshot of the subscribers, replaced whole on
// every change, so that publishing takes no lock but each subscriber's own.
type subscribers struct {
	list []*subscriber
	mask kindMask // the union of their kinds
}

// wants reports whether anybody listens to a kind of m. Nobody listening
// costs one atomic load.
func (h *hub) wants(m kindMask) bool {
	s := h.subs.Load()
	return s != nil && s.mask&m != 0
}

func (h *hub) publish(ev Event) {
	s := h.subs.Load()
	if s == nil {
		return
	}
	bit := ev.Kind.bit()
	for _, sub := range s.list {
		if sub.mask&bit != 0 {
			sub.push(ev)
		}
	}
}

func (h *hub) remove(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.subs.Load()
	if old == nil {
		return
	}
	next := &subscribers{}
	for _, s := range old.list {
		if s != sub {
			next.list = append(next.list, s)
			next.mask |= s.mask
		}
	}
	if len(next.list) == 0 {
		next = nil
	}
	h.subs.Store(next)
}

func (h *hub) close() {
	h.mu.Lock()
	h.closed = true
	old := h.subs.Swap(nil)
	h.mu.Unlock()
	if old != nil {
		for _, s := range old.list {
			s.stop()
		}
	}
}

// subscriber queues events for one subscriber's function, which a goroutine
// of its own calls, so that a slow or stuck function holds nobody but
// itself.
type subscriber struct {
	f    func(Event)
	mask kindMask
	log  *slog.Logger

	mu      sync.Mutex
	queue   []Event
	lost    uint64 // events dropped since the last one queued
	stopped atomic.Bool
	wake    chan struct{} // holds a token while the queue may be non-empty
	done    chan struct{} // closed by stop
	once    sync.Once
}

// push queues ev, or counts it lost when the subscriber is eventBuffer
// events behind. It never blocks on the subscriber's function.
func (s *subscriber) push(ev Event) {
	s.mu.Lock()
	if s.stopped.Load() {
		s.mu.Unlock()
		return
	}
	if len(s.queue) >= eventBuffer {
		s.lost++
		s.mu.Unlock()
		return
	}
	ev.Dropped, s.lost = s.lost, 0
	s.queue = append(s.queue, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run delivers queued events in order until the subscriber stops.
func (s *subscriber) run() {
	var batch []Event
	for {
		select {
		case <-s.wake:
		case <-s.done:
			return
		}
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		s.mu.Unlock()
		for i := range batch {
			if s.stopped.Load() {
				return
			}
			s.deliver(batch[i])
		}
		clear(batch) // let go of what the events point to
	}
}

// deliver calls the function, and survives its panic: one bad event must
// not cost the subscriber the events after it, nor the engine anything.
func (s *subscriber) deliver(ev Event) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("event subscriber panicked", "event", ev.Kind, "panic", p, "stack", string(debug.Stack()))
		}
	}()
	s.f(ev)
}

func (s *subscriber) stop() {
	s.once.Do(func() {
		s.mu.Lock()
		s.stopped.Store(true)
		s.queue = nil
		s.mu.Unlock()
		close(s.done)
	})
}

// Subscribe calls f with every event of the given kinds (of every kind when
// none is given) that the engine publishes from now on, until cancel is
// called or the engine closes. Kinds the engine does not know are ignored.
//
// f runs on a goroutine of the subscription's own, one event at a time, in
// the order the engine published them: the events of one call in the order
// they happened (its start first, its end last), and the registry's changes
// in the order they were made. The engine never waits for f: events queue
// for it, and once 1024 are waiting, further ones are dropped for this
// subscriber alone, and the next event it does get counts them in Dropped.
// A panic in f is logged and the subscription goes on. So a slow, stuck or
// panicking subscriber costs calls nothing but the queueing.
//
// Calls that start while nobody listens to call events publish none, and
// cost nothing for it; a subscriber that comes in while a call runs may see
// that call's later events without its start.
//
// cancel stops delivery at once and drops what is queued; it does not wait
// for a call of f under way, so f may call it itself. Calling it again does
// nothing.
func (e *Engine) Subscribe(f func(Event), kinds ...EventKind) (cancel func()) {
	if f == nil {
		panic("lathe: Subscribe with a nil function")
	}
	var mask kindMask
	for _, k := range kinds {
		mask |= k.bit()
	}
	if len(kinds) == 0 {
		mask = ^kindMask(0)
	}
	s := &subscriber{f: f, mask: mask, log: e.opts.Logger, wake: make(chan struct{}, 1), done: make(chan struct{})}
	h := &e.events
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return func() {}
	}
	next := &subscribers{mask: mask}
	if old := h.subs.Load(); old != nil {
		next.list = append(next.list, old.list...)
		next.mask |= old.mask
	}
	next.list = append(next.list, s)
	h.subs.Store(next)
	go s.run()
	return func() {
		h.remove(s)
		s.stop()
	}
}

// callTrace publishes the events of one call.
type callTrace struct {
	hub               *hub
	call              uint64
	id, tool, session string
	start             time.Time
	mu                sync.Mutex // orders the call's events; progress may come from any goroutine
	done              bool
}

// emit publishes ev as an event of the call, unless the call has finished:
// a tool that reports progress after its call returned (one that ignored
// its deadline) must not put events after the call's end.
func (t *callTrace) emit(ev Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.fill(&ev)
	t.hub.publish(ev)
}

func (t *callTrace) fill(ev *Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.Call, ev.CallID, ev.Tool, ev.Session = t.call, t.id, t.tool, t.session
}

func (t *callTrace) finish(out *tool.Outcome, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.done = true
	now := time.Now()
	ev := Event{Kind: EventCallFinished, Time: now, Outcome: outcomeKind(out, err), Duration: now.Sub(t.start)}
	t.fill(&ev)
	t.hub.publish(ev)
}

// outcomeKind is how a call ended, in one word: ok, question, or the kind
// of its failure.
func outcomeKind(out *tool.Outcome, err error) string {
	switch {
	case err != nil:
		return string(tool.KindOf(err))
	case out == nil:
		return string(tool.KindRuntimeFailure)
	case out.Question != nil:
		return OutcomeQuestion
	case out.Result != nil && out.Result.IsError:
		if out.Result.ErrorKind == "" {
			return string(tool.KindToolError)
		}
		return string(out.Result.ErrorKind)
	}
	return OutcomeOK
}

// callTraced runs a call while somebody listens to call events: it
// publishes the call's start, its progress, and its end.
func (e *Engine) callTraced(ctx context.Context, inv *Invocation) *tool.Outcome {
	t := e.startTrace(ctx, inv.Call)
	inv.trace = t
	if e.events.wants(EventProgress.bit()) {
		prev := tool.HooksFrom(ctx).Progress
		ctx = tool.WithHooks(ctx, tool.Hooks{Progress: func(p tool.Progress) {
			t.emit(Event{Kind: EventProgress, Progress: &p})
			if prev != nil {
				prev(p)
			}
		}})
	}
	// A stage that panics takes the call down with it, but the call's
	// subscribers still see it end.
	ended := false
	defer func() {
		if !ended {
			t.finish(nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Message: "a stage of the pipeline panicked"})
		}
	}()
	out, err := e.handler(ctx, inv)
	ended = true
	t.finish(out, err)
	if err != nil {
		return &tool.Outcome{Result: tool.ErrorResult(err)}
	}
	return out
}

// startTrace gives call c its number and publishes its start.
func (e *Engine) startTrace(ctx context.Context, c *tool.Call) *callTrace {
	t := &callTrace{hub: &e.events, call: e.events.calls.Add(1), id: c.ID, tool: c.Name, session: SessionFrom(ctx),
		start: time.Now()}
	t.emit(Event{Kind: EventCallStarted, Time: t.start})
	return t
}

// traceUnrun publishes the start and end of a call that ends without
// entering the pipeline (a batch's call of a tool that does not exist when
// the batch is planned), so that subscribers see every call a caller made.
func (e *Engine) traceUnrun(ctx context.Context, c *tool.Call, out *tool.Outcome) *tool.Outcome {
	if e.events.wants(callKinds) {
		e.startTrace(ctx, c).finish(out, nil)
	}
	return out
}

// Seq is the number of inv's call in its engine, the one its events carry
// ([Event].Call), so that a stage can name the call as subscribers know
// it; 0 for a call that started while nobody listened to call events.
func (inv *Invocation) Seq() uint64 {
	if inv.trace == nil {
		return 0
	}
	return inv.trace.call
}

// Emit publishes ev as an event of inv's call: how a stage reports what the
// engine cannot see, as the policy stage reports the approvals it asks for
// ([EventApprovalAsked], [EventApprovalAnswered]). The engine fills in
// Time (when zero), Call, CallID, Tool and Session. The kinds the engine
// publishes itself (tools changed, call started, progress, operations,
// call finished) are not accepted from a stage, so that every call's own
// events keep their order; nor is anything published once the call has finished, or for a
// call that started while nobody listened.
func (inv *Invocation) Emit(ev Event) {
	if inv.trace == nil && inv.watch == nil {
		return
	}
	switch ev.Kind {
	case EventToolsChanged, EventCallStarted, EventProgress, EventCallFinished, EventOperation:
		return
	}
	if ev.Kind.bit() == 0 {
		return
	}
	if ev.Operation != nil {
		// An approval about an operation names it as RecordOperation
		// would: without the secrets a URL may carry.
		op := *ev.Operation
		op.Subject, op.Reason, op.Error = scrubURLs(op.Subject), scrubURLs(op.Reason), scrubURLs(op.Error)
		ev.Operation = &op
	}
	if inv.watch != nil {
		w := ev
		if w.Time.IsZero() {
			w.Time = time.Now()
		}
		w.CallID, w.Tool, w.Session = inv.Call.ID, inv.Call.Name, ""
		if inv.trace != nil {
			w.Call, w.Session = inv.trace.call, inv.trace.session
		}
		inv.watch(w)
	}
	if inv.trace != nil {
		inv.trace.emit(ev)
	}
}

// Observe adds f to the functions that see the events the stages of inv's
// call emit ([Invocation.Emit]: the approvals the policy asks for and how
// they were answered), whether or not anybody subscribes to the engine. f
// is called at once, on the goroutine of the stage that emits, before the
// event is published: for a stage that must act within the call, as package
// telemetry opens and closes the span of an approval's wait in the call's
// trace. f must return promptly, and must not change what the event points
// to. Add observers before the call reaches the stages that emit (in an
// outer stage), not from several goroutines at once.
func (inv *Invocation) Observe(f func(Event)) {
	if f == nil {
		return
	}
	if prev := inv.watch; prev != nil {
		inv.watch = func(ev Event) { prev(ev); f(ev) }
		return
	}
	inv.watch = f
}

// toolsChanged publishes the change of the registry from old to next, made
// by removing remove and adding added.
func (h *hub) toolsChanged(old *registry, remove []string, added []*entry) {
	var ev Event
	for _, n := range remove {
		if _, ok := old.get(n); ok {
			ev.Removed = append(ev.Removed, n)
		}
	}
	for _, en := range added {
		ev.Added = append(ev.Added, en.tool.Definition.Name)
	}
	if len(ev.Added) == 0 && len(ev.Removed) == 0 {
		return
	}
	ev.Kind, ev.Time = EventToolsChanged, time.Now()
	h.publish(ev)
}

// String describes the event in one line, for logs and examples.
func (ev Event) String() string {
	switch {
	case ev.Kind == EventToolsChanged:
		return fmt.Sprintf("%s added=%v removed=%v", ev.Kind, ev.Added, ev.Removed)
	case ev.Kind == EventApprovalAsked && ev.Approval != nil:
		return fmt.Sprintf("%s call=%d tool=%s rule=%q", ev.Kind, ev.Call, ev.Tool, ev.Approval.Rule)
	case ev.Kind == EventApprovalAnswered && ev.Approval != nil:
		return fmt.Sprintf("%s call=%d tool=%s answer=%s by=%s", ev.Kind, ev.Call, ev.Tool, ev.Approval.Answer, ev.Approval.By)
	case ev.Kind == EventProgress && ev.Progress != nil:
		return fmt.Sprintf("%s call=%d tool=%s progress=%g/%g", ev.Kind, ev.Call, ev.Tool, ev.Progress.Progress, ev.Progress.Total)
	case ev.Kind == EventCallFinished:
		return fmt.Sprintf("%s call=%d tool=%s outcome=%s", ev.Kind, ev.Call, ev.Tool, ev.Outcome)
	case ev.Kind == EventOperation && ev.Operation != nil:
		return fmt.Sprintf("%s call=%d tool=%s op=%s subject=%q approval=%s", ev.Kind, ev.Call, ev.Tool,
			ev.Operation.Kind, ev.Operation.Subject, ev.Operation.Approval)
	}
	return fmt.Sprintf("%s call=%d tool=%s", ev.Kind, ev.Call, ev.Tool)
}
