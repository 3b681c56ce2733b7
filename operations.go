package lathe

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Operation is one thing a confined tool asked lathe's host to do for it in
// the course of a call (package host): read a file, fetch a URL, run a
// command. The engine keeps a call's operations with the call, so that the
// audit log records them as part of it and subscribers see each as an
// [EventOperation].
type Operation struct {
	// Kind is the operation: "read", "write", "list", "stat", "remove",
	// "fetch", "run", "env", "log", "progress" or "ask".
	Kind string
	// Subject is what it was done to: a path relative to the workspace, a
	// URL, a command line, a variable's name. Never a variable's value.
	Subject string
	// Approval is what the tool's permissions and the policy said:
	// "allow", "ask" (then Answer says who answered) or "deny".
	Approval string
	// By names what decided ("permissions", "rule", "person" …) and Reason
	// says why, in words a person can read.
	By, Reason string
	// Error is why the operation failed, empty when it succeeded.
	Error string
	// Bytes counts the bytes read, written or fetched.
	Bytes int64
	// Started is when it was asked for, Duration how long it took.
	Started  time.Time
	Duration time.Duration
}

// MaxOperations is how many operations the engine keeps for one call. A
// tool may ask its host for as much as it likes within its deadline; what
// is kept for the audit log is bounded, and the rest is counted
// ([Invocation.OperationsDropped]), so that a tool looping over tiny reads
// cannot make its call's record grow without end.
const MaxOperations = 10000

// RecordOperation records op as an operation of the call running in ctx:
// the call whose runtime was handed ctx (or a context made from it). It is
// safe for concurrent use: a tool's host requests may come at once. Outside
// a call it does nothing. Once the call's run is over (its tool returned,
// or its deadline or cancellation ended it), op is dropped and counted,
// never attached to another call, so that a goroutine that outlives its
// call cannot put words in a later one's record.
//
// URLs in the subject, the reason and the error are kept without their
// userinfo and with the values of their query strings redacted, before
// anyone (the audit log, a subscriber) sees them: a token in a fetched URL
// goes nowhere.
func RecordOperation(ctx context.Context, op Operation) {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	if inv == nil {
		return
	}
	op.Subject = scrubURLs(op.Subject)
	op.Reason = scrubURLs(op.Reason)
	op.Error = scrubURLs(op.Error)
	if !inv.ops.add(op) {
		return
	}
	if t := inv.trace; t != nil && t.hub.wants(EventOperation.bit()) {
		t.emit(Event{Kind: EventOperation, Operation: &op})
	}
}

// InvocationFrom returns the invocation of the call running in ctx, as
// [RecordOperation] finds it: a stage that checks what a running tool asks
// its host for (the policy's operation rules) learns the call so. Nil
// outside a call's run.
func InvocationFrom(ctx context.Context) *Invocation {
	inv, _ := ctx.Value(invocationKey{}).(*Invocation)
	return inv
}

// Operations returns a copy of the operations recorded for the call, in
// the order they were recorded, at most [MaxOperations].
func (inv *Invocation) Operations() []Operation {
	return inv.ops.list()
}

// OperationsDropped counts the operations of the call that were not kept:
// those past [MaxOperations], and those recorded after the call's run was
// over.
func (inv *Invocation) OperationsDropped() int {
	inv.ops.mu.Lock()
	defer inv.ops.mu.Unlock()
	return inv.ops.dropped
}

// Ended reports whether the call's run is over: its tool returned, or its
// deadline or cancellation ended it. Nothing it asks for afterwards may
// happen, and nothing is recorded for it.
func (inv *Invocation) Ended() bool {
	inv.ops.mu.Lock()
	defer inv.ops.mu.Unlock()
	return inv.ops.ended
}

type invocationKey struct{}

// opLog is a call's operations. It lives in the Invocation itself, so a
// call that records none costs no allocation for it.
type opLog struct {
	mu      sync.Mutex
	ops     []Operation
	dropped int
	ended   bool
}

// add keeps op unless the log is full or the call is over, and reports
// whether the call was still running.
func (l *opLog) add(op Operation) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ended:
		l.dropped++
		return false
	case len(l.ops) >= MaxOperations:
		l.dropped++
	default:
		if l.ops == nil {
			// Room for a typical tool's operations at once, rather than
			// growing one by one through copies.
			l.ops = make([]Operation, 0, 16)
		}
		l.ops = append(l.ops, op)
	}
	return true
}

func (l *opLog) list() []Operation {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ops) == 0 {
		return nil
	}
	return append([]Operation(nil), l.ops...)
}

// end marks the call's run over.
func (l *opLog) end() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
}

// scrubURLs returns s with every http or https URL in it (the subject of a
// fetch, or a message that quotes one) stripped of its userinfo and of the
// values of its query string, which is where URLs carry secrets.
func scrubURLs(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := urlStart(s)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i:]
		end := strings.IndexAny(s, " \t\r\n\"'<>`")
		if end < 0 {
			end = len(s)
		}
		b.WriteString(scrubURL(s[:end]))
		s = s[end:]
	}
}

// urlStart finds the first "http://" or "https://" in s, whatever its case.
func urlStart(s string) int {
	l := strings.ToLower(s)
	i, j := strings.Index(l, "http://"), strings.Index(l, "https://")
	switch {
	case i < 0:
		return j
	case j < 0:
		return i
	}
	return min(i, j)
}

// scrubURL redacts one URL. Text that does not parse as one is cut at its
// scheme and host: what follows might be the secret.
func scrubURL(raw string) string {
	const redacted = "[redacted]"
	u, err := url.Parse(raw)
	if err != nil {
		scheme, rest, _ := strings.Cut(raw, "://")
		host := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			host = rest[:i]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = redacted + "@" + host[at+1:]
		}
		return scheme + "://" + host + "/" + redacted
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if u.RawQuery != "" {
		q := strings.Split(u.RawQuery, "&")
		for i, kv := range q {
			if k, _, ok := strings.Cut(kv, "="); ok {
				q[i] = k + "=" + redacted
			} else if kv != "" {
				q[i] = redacted
			}
		}
		u.RawQuery = strings.Join(q, "&")
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	return u.String()
}
