// Package approvals keeps the approvals that wait for a person elsewhere:
// a call whose policy asks, and whose caller cannot answer (an MCP client
// without elicitation, a program calling over HTTP), waits in a [Queue]
// until someone answers it from lathe's HTTP API or its web page.
//
// A [Queue] is a [policy.Approver]; put it in [policy.Options].Fallback:
//
//	q := approvals.New(approvals.Options{Wait: 2 * time.Minute})
//	mw := policy.Middleware(p, policy.Options{Fallback: q})
//
// Each pending approval has a random id and the digest of the call's
// arguments ([Digest]). An answer must name both ([Queue.Answer]): an
// answer for arguments the person did not see (a digest that is not the
// call's), for an id nobody was given, for a call that ended, or a second
// answer to the same approval (a replay) is refused, with an error that
// says which ([ErrUnknown], [ErrEnded], [ErrAnswered], [ErrDigest]). A
// pending approval ends with its call: when the call's context ends, or
// when the queue's wait is over, the call is denied and the approval is
// gone.
package approvals

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
)

// DefaultWait is how long a call waits for an answer when [Options].Wait is
// zero; the call's own deadline may end the wait sooner.
const DefaultWait = 5 * time.Minute

// Errors of [Queue.Answer].
var (
	// ErrUnknown: no approval has that id (it never existed, or was
	// forgotten long ago).
	ErrUnknown = errors.New("no pending approval has that id")
	// ErrEnded: the call ended before the answer came (its deadline, its
	// cancellation, the queue's wait).
	ErrEnded = errors.New("the call of that approval has ended")
	// ErrAnswered: the approval was answered already; an answer counts once.
	ErrAnswered = errors.New("that approval was answered already")
	// ErrDigest: the answer names arguments other than the call's.
	ErrDigest = errors.New("the digest is not that of the call's arguments")
	// ErrVerdict: the answer is not one of once, session, always, deny.
	ErrVerdict = errors.New(`the answer must be "once", "session", "always" or "deny"`)
)

// Options configure a [Queue].
type Options struct {
	// Wait bounds how long a call waits for an answer; zero means
	// [DefaultWait]. The call's deadline bounds it too.
	Wait time.Duration
}

// Pending is one approval waiting for an answer.
type Pending struct {
	// ID is the approval's random id, which an answer names.
	ID string `json:"id"`
	// CallID is the caller's id of the call, Seq the engine's number of it
	// (as its events carry it), Tool the tool called.
	CallID string `json:"call_id"`
	Seq    uint64 `json:"seq"`
	Tool   string `json:"tool"`
	// Session is the caller's session ([lathe.WithSession]): an answer
	// "session" holds for the calls of that session only.
	Session string `json:"session"`
	// Arguments are the call's decoded arguments as JSON, unredacted; a
	// face redacts them before it shows them.
	Arguments json.RawMessage `json:"arguments"`
	// Formatted is what the tool's runtime renders of them for a person
	// ([policy.Request].Arguments), "" when it renders nothing of its own;
	// for an operation, the operation.
	Formatted string `json:"formatted"`
	// Operation, when set, is the host operation asked about ("fetch
	// https://…"), not the call.
	Operation string `json:"operation,omitempty"`
	// Rule names the rule that asked, Reason why.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Digest is "sha256:" and the hex digest of Arguments (see [Digest]).
	Digest string `json:"digest"`
	// Asked is when the call began to wait; Deadline when it stops.
	Asked    time.Time `json:"asked"`
	Deadline time.Time `json:"deadline"`
}

// Change is a pending approval that appeared (Settled false) or went,
// answered or not (Settled true, Answer the verdict, "" when unanswered).
type Change struct {
	Pending Pending
	Settled bool
	Answer  policy.Verdict
}

// Queue holds the pending approvals. Its zero value is not usable; make one
// with [New].
type Queue struct {
	opts Options

	mu      sync.Mutex
	pending map[string]*entry
	// settled remembers the ids of approvals that went, and how, so that
	// a late or second answer is told apart from a forged id; the oldest
	// are forgotten past maxSettled.
	settled map[string]error
	order   []string
	subs    map[int]func(Change)
	nsub    int
}

type entry struct {
	p      Pending
	answer chan policy.Answer // buffered 1: the one answer
}

// maxSettled bounds the ids of settled approvals a queue remembers.
const maxSettled = 4096

// New returns an empty queue.
func New(opts Options) *Queue {
	if opts.Wait <= 0 {
		opts.Wait = DefaultWait
	}
	return &Queue{opts: opts, pending: map[string]*entry{}, settled: map[string]error{}, subs: map[int]func(Change){}}
}

var _ policy.Approver = (*Queue)(nil)

// Digest returns the digest an answer must name for a call with the
// decoded arguments args: "sha256:" and the hex SHA-256 of their canonical
// JSON (object keys sorted, no insignificant space, as encoding/json
// writes a map).
func Digest(args any) (string, json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), b, nil
}

// Approve puts r in the queue and waits for an answer, for the queue's
// wait at most, and no longer than ctx (the call) lasts.
func (q *Queue) Approve(ctx context.Context, r *policy.Request) (policy.Answer, error) {
	digest, args, err := Digest(r.Args)
	if err != nil {
		return policy.Answer{}, fmt.Errorf("the arguments cannot be digested: %w", err)
	}
	var idb [16]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return policy.Answer{}, err
	}
	now := time.Now()
	deadline := now.Add(q.opts.Wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	en := &entry{answer: make(chan policy.Answer, 1), p: Pending{
		ID: hex.EncodeToString(idb[:]), CallID: r.Call.ID, Seq: r.Seq, Tool: r.Tool.Name,
		Session: lathe.SessionFrom(ctx), Arguments: args, Formatted: r.Arguments, Rule: r.Rule, Reason: r.Reason,
		Digest: digest, Asked: now, Deadline: deadline}}
	if r.Operation != nil {
		en.p.Operation = r.Operation.Kind + " " + r.Operation.Subject
	} else if r.Arguments == string(args) {
		// The policy's own rendering, compact JSON, which Arguments holds.
		en.p.Formatted = ""
	}
	q.mu.Lock()
	q.pending[en.p.ID] = en
	q.publishLocked(Change{Pending: en.p})
	q.mu.Unlock()

	select {
	case a := <-en.answer:
		// Answer has settled the entry already.
		return a, nil
	case <-wctx.Done():
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// An answer may have come between the wait's end and the lock: it
	// was accepted, so it holds.
	select {
	case a := <-en.answer:
		return a, nil
	default:
	}
	q.settleLocked(en, ErrEnded, "")
	if ctx.Err() != nil {
		return policy.Answer{}, ctx.Err()
	}
	return policy.Answer{}, fmt.Errorf("nobody answered within %s, the wait for a remote answer ([serve] approval_wait)", q.opts.Wait)
}

// Answer settles the pending approval id with a, if digest is that of the
// call's arguments. It returns [ErrUnknown], [ErrEnded], [ErrAnswered],
// [ErrDigest] or [ErrVerdict] when it refuses the answer; the approval
// still waits after [ErrDigest] and [ErrVerdict].
func (q *Queue) Answer(id, digest string, a policy.Answer) error {
	switch a.Verdict {
	case policy.AllowOnce, policy.AllowSession, policy.AllowAlways, policy.Refuse:
	default:
		return ErrVerdict
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	en, ok := q.pending[id]
	if !ok {
		if err, ok := q.settled[id]; ok {
			return err
		}
		return ErrUnknown
	}
	if subtle.ConstantTimeCompare([]byte(digest), []byte(en.p.Digest)) != 1 {
		return ErrDigest
	}
	en.answer <- a
	q.settleLocked(en, ErrAnswered, a.Verdict)
	return nil
}

// settleLocked removes en, remembers why a later answer is refused, and
// publishes its end.
func (q *Queue) settleLocked(en *entry, later error, v policy.Verdict) {
	if _, ok := q.pending[en.p.ID]; !ok {
		return
	}
	delete(q.pending, en.p.ID)
	q.settled[en.p.ID] = later
	q.order = append(q.order, en.p.ID)
	if len(q.order) > maxSettled {
		delete(q.settled, q.order[0])
		q.order = slices.Delete(q.order, 0, 1)
	}
	q.publishLocked(Change{Pending: en.p, Settled: true, Answer: v})
}

// Get returns the pending approval id.
func (q *Queue) Get(id string) (Pending, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	en, ok := q.pending[id]
	if !ok {
		return Pending{}, false
	}
	return en.p, true
}

// Pending returns the approvals waiting now, oldest first.
func (q *Queue) Pending() []Pending {
	q.mu.Lock()
	out := make([]Pending, 0, len(q.pending))
	for _, en := range q.pending {
		out = append(out, en.p)
	}
	q.mu.Unlock()
	slices.SortFunc(out, func(a, b Pending) int { return a.Asked.Compare(b.Asked) })
	return out
}

// Subscribe calls f with every change of the queue until cancel is
// called. f runs while the queue is locked, in the order of the changes:
// it must not block, nor call the queue.
func (q *Queue) Subscribe(f func(Change)) (cancel func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nsub++
	n := q.nsub
	q.subs[n] = f
	return func() {
		q.mu.Lock()
		delete(q.subs, n)
		q.mu.Unlock()
	}
}

func (q *Queue) publishLocked(c Change) {
	for _, f := range q.subs {
		f(c)
	}
}
