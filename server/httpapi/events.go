package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/tool"
)

// Event is one server-sent event of GET /api/events.
type Event struct {
	Kind       string           `json:"kind"`
	Time       time.Time        `json:"time"`
	Seq        uint64           `json:"seq,omitempty"`
	CallID     string           `json:"call_id,omitempty"`
	Tool       string           `json:"tool,omitempty"`
	Session    string           `json:"session,omitempty"`
	Outcome    string           `json:"outcome,omitempty"`
	DurationMS float64          `json:"duration_ms,omitempty"`
	Approval   *EventApproval   `json:"approval,omitempty"`
	Progress   *tool.Progress   `json:"progress,omitempty"`
	Operation  *lathe.Operation `json:"operation,omitempty"`
	Added      []string         `json:"added,omitempty"`
	Removed    []string         `json:"removed,omitempty"`
	Dropped    uint64           `json:"dropped,omitempty"`
}

// EventApproval is an event's approval: the policy's (rule, reason,
// answer, by) or the queue's (id, and the answer once settled).
type EventApproval struct {
	ID     string `json:"id,omitempty"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	Answer string `json:"answer,omitempty"`
	By     string `json:"by,omitempty"`
}

func engineEvent(ev lathe.Event) Event {
	out := Event{Kind: string(ev.Kind), Time: ev.Time, Seq: ev.Call, CallID: ev.CallID, Tool: ev.Tool,
		Session: ev.Session, Outcome: ev.Outcome, DurationMS: ms(ev.Duration), Progress: ev.Progress,
		Operation: ev.Operation, Added: ev.Added, Removed: ev.Removed, Dropped: ev.Dropped}
	if a := ev.Approval; a != nil {
		out.Approval = &EventApproval{Rule: a.Rule, Reason: a.Reason, Answer: a.Answer, By: a.By}
	}
	return out
}

func queueEvent(kind string, c approvals.Change) Event {
	p := c.Pending
	return Event{Kind: kind, Time: time.Now(), Seq: p.Seq, CallID: p.CallID, Tool: p.Tool, Session: p.Session,
		Approval: &EventApproval{ID: p.ID, Rule: p.Rule, Reason: p.Reason, Answer: string(c.Answer)}}
}

// hub hands events to the streams of GET /api/events. A stream that falls
// behind by more than its buffer loses events, and the next one it gets
// says how many (Dropped), as the engine's own subscribers do: a slow
// client never holds up a call.
type hub struct {
	mu     sync.Mutex
	subs   map[*stream]struct{}
	closed bool
}

type stream struct {
	ch      chan Event
	dropped uint64
	done    chan struct{}
}

func newHub() *hub { return &hub{subs: map[*stream]struct{}{}} }

func (h *hub) publish(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		e := ev
		e.Dropped += s.dropped
		select {
		case s.ch <- e:
			s.dropped = 0
		default:
			s.dropped++
		}
	}
}

// maxStreams caps the event streams open at once: each holds a buffer
// and a connection, and a client that opens more and more must not hold
// them all.
const maxStreams = 64

// add opens a stream; nil when maxStreams are open.
func (h *hub) add() *stream {
	s := &stream{ch: make(chan Event, 256), done: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		close(s.done)
		return s
	}
	if len(h.subs) >= maxStreams {
		return nil
	}
	h.subs[s] = struct{}{}
	return s
}

func (h *hub) remove(s *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.done)
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.done)
	}
}

// keepAlive is how often an idle stream gets a comment line, so that
// proxies and the browser keep it open.
var keepAlive = 15 * time.Second

// sse writes server-sent events to w.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "the connection cannot stream events")
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
}

func (s *sse) send(kind string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// JSON has no raw newline, so one data line holds it.
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", kind, b); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

func (s *sse) comment() error {
	if _, err := fmt.Fprint(s.w, ": keep-alive\n\n"); err != nil {
		return err
	}
	s.f.Flush()
	return nil
}

func (a *API) handleEvents(w http.ResponseWriter, r *http.Request, _ *caller) {
	st := a.hub.add()
	if st == nil {
		writeError(w, http.StatusServiceUnavailable, "busy", fmt.Sprintf("%d event streams are open already; close one", maxStreams))
		return
	}
	defer a.hub.remove(st)
	a.watch(1)
	defer a.watch(-1)
	out, ok := startSSE(w)
	if !ok {
		return
	}
	// The body limits of the server bound reading, not this stream; the
	// stream lives as long as the client keeps it.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-st.done:
			return
		case ev := <-st.ch:
			if out.send(ev.Kind, ev) != nil {
				return
			}
		case <-tick.C:
			if out.comment() != nil {
				return
			}
		}
	}
}
