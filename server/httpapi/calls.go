package httpapi

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/tool"
)

// Call is a call as the API shows it.
type Call struct {
	ID      string    `json:"id"`
	Seq     uint64    `json:"seq"`
	Tool    string    `json:"tool"`
	Session string    `json:"session"`
	Client  string    `json:"client"`
	State   string    `json:"state"` // "running" or "finished"
	Started time.Time `json:"started"`
	// DurationMS is the time since the start, for a running call.
	DurationMS float64 `json:"duration_ms"`
	// Outcome is "ok", "question" or the error kind; "" while running.
	Outcome string `json:"outcome"`
	// Arguments are redacted as the audit log redacts them.
	Arguments json.RawMessage `json:"arguments"`
	Result    *Result         `json:"result,omitempty"`
	Question  *tool.Question  `json:"question,omitempty"`
	// Progress is the last progress a running call reported.
	Progress *tool.Progress `json:"progress,omitempty"`
	// Waiting says a running call waits for an approval.
	Waiting bool `json:"waiting,omitempty"`

	// args are the decoded arguments, until they are first shown: they
	// are redacted then (shown), not on the call's path.
	args any
}

// Result is a finished call's result.
type Result struct {
	Content           []tool.Content  `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

func resultOf(r *tool.Result) *Result {
	if r == nil {
		return nil
	}
	c := r.Content
	if c == nil {
		c = []tool.Content{}
	}
	return &Result{Content: c, StructuredContent: r.Structured, IsError: r.IsError}
}

// clientOf names the kind of client of a session: "mcp" for the MCP
// server's, "api" for this API's ("mcp-3" → "mcp").
func clientOf(session string) string {
	if i := strings.IndexByte(session, '-'); i > 0 {
		return session[:i]
	}
	return session
}

// NewCalls returns a [Calls] that keeps the last recent finished calls
// (zero means 200), their arguments redacted by red (nil: the audit log's
// default patterns).
func NewCalls(recent int, red *audit.Redactor) (*Calls, error) {
	if recent <= 0 {
		recent = 200
	}
	if red == nil {
		var err error
		if red, err = audit.NewRedactor(nil, nil); err != nil {
			return nil, err
		}
	}
	return newCalls(recent, red), nil
}

// Middleware returns the stage that records each call's arguments,
// redacted, for GET /api/calls; it is best placed before the policy, so
// that the calls it denies show theirs too.
func (t *Calls) Middleware() lathe.Middleware {
	return func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			if seq := inv.Seq(); seq != 0 {
				t.arguments(seq, inv.Args)
			}
			return next(ctx, inv)
		}
	}
}

// Calls keeps what GET /api/calls shows: the running calls, and the last
// finished ones. [New] makes one, which learns the calls from the engine's
// events; these carry no arguments, so to show every call's arguments,
// make it first with [NewCalls], put its [Calls.Middleware] in the engine's
// pipeline, and give it to [New] in [Options].Calls.
type Calls struct {
	red *audit.Redactor
	max int

	mu      sync.Mutex
	running map[uint64]*Call
	recent  []*Call // oldest first, at most max
	// args holds the arguments the middleware saw before the call's
	// start event arrived (events come on another goroutine).
	args map[uint64]any
	// results holds the outcomes of the API's own calls, which events do
	// not carry, until their end event arrives.
	results map[string]*tool.Outcome
}

func newCalls(max int, red *audit.Redactor) *Calls {
	return &Calls{red: red, max: max, running: map[uint64]*Call{}, args: map[uint64]any{},
		results: map[string]*tool.Outcome{}}
}

func (t *Calls) redact(args any) json.RawMessage {
	b, err := json.Marshal(args)
	if err != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(t.red.Redact(b))
}

// arguments records the decoded arguments of call seq.
func (t *Calls) arguments(seq uint64, args any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.running[seq]; ok {
		c.args = args
		return
	}
	if len(t.args) >= 4*t.max {
		// Arguments whose start event never came (the engine drops
		// events for a subscriber that falls behind) are not kept for ever.
		clear(t.args)
	}
	t.args[seq] = args
}

// shown returns c as the API shows it, its arguments redacted, once: most
// calls of a busy server are never looked at. t.mu is held.
func (t *Calls) shown(c *Call) Call {
	if c.Arguments == nil {
		if c.args != nil {
			c.Arguments, c.args = t.redact(c.args), nil
		} else {
			c.Arguments = json.RawMessage("{}")
		}
	}
	return *c
}

func (t *Calls) event(ev lathe.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch ev.Kind {
	case lathe.EventCallStarted:
		c := &Call{ID: ev.CallID, Seq: ev.Call, Tool: ev.Tool, Session: ev.Session, Client: clientOf(ev.Session),
			State: "running", Started: ev.Time}
		if a, ok := t.args[ev.Call]; ok {
			c.args = a
			delete(t.args, ev.Call)
		}
		t.running[ev.Call] = c
	case lathe.EventProgress:
		if c, ok := t.running[ev.Call]; ok && ev.Progress != nil {
			p := *ev.Progress
			c.Progress = &p
		}
	case lathe.EventApprovalAsked:
		if c, ok := t.running[ev.Call]; ok {
			c.Waiting = true
		}
	case lathe.EventApprovalAnswered:
		if c, ok := t.running[ev.Call]; ok {
			c.Waiting = false
		}
	case lathe.EventCallFinished:
		c, ok := t.running[ev.Call]
		if !ok {
			return
		}
		delete(t.running, ev.Call)
		delete(t.args, ev.Call)
		c.State, c.Outcome, c.Waiting = "finished", ev.Outcome, false
		c.DurationMS = ms(ev.Duration)
		if out, ok := t.results[c.ID]; ok {
			c.Result, c.Question = resultOf(out.Result), out.Question
			delete(t.results, c.ID)
		}
		t.recent = append(t.recent, c)
		if len(t.recent) > t.max {
			t.recent = slices.Delete(t.recent, 0, len(t.recent)-t.max)
		}
	}
}

// finished records the outcome of one of the API's own calls (whose ids
// are its own, or the caller's), for the call's view once it ended: its
// end event may come before or after.
func (t *Calls) finished(id string, out *tool.Outcome) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.recent) - 1; i >= 0; i-- {
		if c := t.recent[i]; c.ID == id {
			c.Result, c.Question = resultOf(out.Result), out.Question
			return
		}
	}
	if len(t.results) >= t.max {
		// Outcomes whose end events never came (a call that started
		// while nobody listened) are not kept for ever.
		clear(t.results)
	}
	t.results[id] = out
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// list returns the running calls and the finished ones, newest first,
// without results.
func (t *Calls) list() []Call {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	out := make([]Call, 0, len(t.running)+len(t.recent))
	for _, c := range t.running {
		cc := t.shown(c)
		cc.DurationMS = ms(now.Sub(c.Started))
		out = append(out, cc)
	}
	for _, c := range t.recent {
		cc := t.shown(c)
		cc.Result = nil
		out = append(out, cc)
	}
	slices.SortFunc(out, func(a, b Call) int {
		if c := b.Started.Compare(a.Started); c != 0 {
			return c
		}
		return int(int64(b.Seq) - int64(a.Seq))
	})
	return out
}

// find returns the newest call whose id (the caller's) is id.
func (t *Calls) find(id string) (Call, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var best *Call
	for _, c := range t.running {
		if c.ID == id && (best == nil || c.Seq > best.Seq) {
			best = c
		}
	}
	if best != nil {
		cc := t.shown(best)
		cc.DurationMS = ms(time.Since(best.Started))
		return cc, true
	}
	for i := len(t.recent) - 1; i >= 0; i-- {
		if t.recent[i].ID == id {
			return t.shown(t.recent[i]), true
		}
	}
	return Call{}, false
}
