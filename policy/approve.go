package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// Request is what an [Approver] is asked: may this call run?
type Request struct {
	Tool *tool.Definition
	Call *tool.Call
	// Arguments are the call's arguments rendered for a person: what the
	// runtime's FormatArguments returns where it is a
	// [tool.ArgumentFormatter] (a local tool may render them itself), else
	// compact JSON.
	Arguments string
	// Reason says why the policy asks.
	Reason string
	// Args are the call's decoded arguments, after coercion and defaults
	// (a map[string]any for an object): what the call will run with, and
	// what an approver that binds its answer to the arguments digests.
	Args any
	// Seq is the call's number in the engine, as its events carry it
	// ([lathe.Invocation.Seq]); 0 when nobody listens to call events.
	Seq uint64
	// Rule names the rule that asked ("lathe.toml:12"), as the engine's
	// events do; empty when the tool's annotations asked.
	Rule string
	// Operation, when set, is what is asked about: not the call, which
	// is running, but one host operation it asked for (a rule with an
	// operation said ask, see [CheckOperation]). Arguments then reads as
	// the operation and its subject ("fetch https://api.example.com/v1").
	Operation *OperationRequest
}

// Verdict is a person's answer.
type Verdict string

const (
	// AllowOnce runs this call.
	AllowOnce Verdict = "once"
	// AllowSession runs this call and, until the process ends, every call of
	// the tool that the policy would ask about.
	AllowSession Verdict = "session"
	// AllowAlways runs it and stores a grant that outlives the process.
	AllowAlways Verdict = "always"
	// Refuse denies the call; the answer's reason goes back to the model.
	Refuse Verdict = "deny"
)

// Answer is an approver's answer.
type Answer struct {
	Verdict Verdict
	// Reason, for a refusal, is told to the model.
	Reason string
}

// Approver asks someone whether a call may run. An error means nobody
// could be asked; the call is then denied.
type Approver interface {
	Approve(ctx context.Context, r *Request) (Answer, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, r *Request) (Answer, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, r *Request) (Answer, error) { return f(ctx, r) }

// Grant is a standing approval a person gave with [AllowAlways]: calls of
// Tool need not ask again. Deny rules still hold.
//
// For a tool that runs command lines (one with a string argument
// "command"), a grant covers one command line, Command, not every command
// the tool could run; for any other tool Command is empty and the grant
// covers the tool.
type Grant struct {
	Tool    string    `json:"tool"`
	Command string    `json:"command,omitempty"`
	Created time.Time `json:"created"`
}

// GrantStore keeps grants across processes (package audit's Grants keeps
// them in the user's state directory, outside the workspace). A grant lets
// calls run without asking, so a store must hold only what a person
// granted: nothing a tool can write may reach it.
type GrantStore interface {
	// Granted reports whether a grant covers a call of toolName with the
	// command line command ("" for a tool that runs none).
	Granted(ctx context.Context, toolName, command string) (bool, error)
	AddGrant(ctx context.Context, g Grant) error
}

type ctxKey int

const (
	approverKey ctxKey = iota
	personKey
	noteKey
	scopeKey
)

// WithApprover returns a context whose calls ask a instead of the
// middleware's own approver: how a face puts the person it serves in reach.
func WithApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey, a)
}

// WithPerson returns a context whose calls were typed by a person (who names
// them, as "cli"): what the policy would ask about counts as approved by
// them. Deny rules still hold.
func WithPerson(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, personKey, who)
}

// WithNote returns a context in which [Middleware] reports its decision to
// note, once per call: how an audit log learns it.
func WithNote(ctx context.Context, note func(Decision)) context.Context {
	return context.WithValue(ctx, noteKey, note)
}

// Options configure [Middleware].
type Options struct {
	// Approver is asked when no approver comes with the call's context
	// ([WithApprover]). With neither, the call's hooks' Elicit is used
	// when the caller offers it (an MCP client); else Fallback; with no
	// way to ask at all, ask means deny.
	Approver Approver
	// Fallback is asked when the call's caller cannot answer: no approver
	// comes with the call, none is set above, and the caller offers no
	// elicitation (an MCP client without it, a program calling over
	// HTTP). It is someone elsewhere — a person at a web page (package
	// approvals) — so the call waits for the answer, no longer than the
	// call may run. Its answers are reported as given by "remote".
	Fallback Approver
	// Grants stores and finds [AllowAlways] grants; nil keeps none.
	Grants GrantStore
	// FormatTimeout bounds a runtime's [tool.ArgumentFormatter]; zero
	// means 5s.
	FormatTimeout time.Duration
	// Remedy, if set, says what would let a call run that was denied
	// without anyone answering: by a deny rule or default, or for want of
	// someone to ask (no approver, or one that could not be asked). It gets
	// the decision of the rules or defaults (for an ask, the ask), and its
	// answer, in the words of the configuration a person edits ("add
	// [[policy.rules]] …"), is added to the denial's message. A person's
	// refusal gets none: somebody answered.
	Remedy func(def *tool.Definition, d Decision) string
}

// Middleware puts p into an engine's pipeline: denied calls end with
// [tool.KindDenied] and the reason, asked ones go to the approver. How each
// ask was settled is published as the engine's events
// ([lathe.EventApprovalAsked] when someone is asked and waited for,
// [lathe.EventApprovalAnswered] for every ask), with the rule that asked and
// who answered.
func Middleware(p *Policy, opts Options) lathe.Middleware {
	mw, _ := middleware(p, opts)
	return mw
}

// middleware is Middleware, with the session approvals it keeps, for tests.
func middleware(p *Policy, opts Options) (lathe.Middleware, *sessionApprovals) {
	if opts.FormatTimeout <= 0 {
		opts.FormatTimeout = 5 * time.Second
	}
	sessions := &sessionApprovals{m: map[string]map[string]bool{}}
	scope := &opScope{p: p, opts: opts, sessions: sessions}
	return func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			def := &inv.Tool.Definition
			d := p.Decide(def, inv.Args)
			asked, unanswered := d, d.Approval == Deny
			var ended error
			if d.Approval == Ask {
				var v Verdict
				rule := ruleName(d.Rule)
				d, v, unanswered, ended = settle(ctx, opts, inv, d, sessions)
				inv.Emit(lathe.Event{Kind: lathe.EventApprovalAnswered,
					Approval: &lathe.Approval{Rule: rule, Reason: d.Reason, Answer: string(v), By: d.By}})
			}
			if note, ok := ctx.Value(noteKey).(func(Decision)); ok {
				note(d)
			}
			if ended != nil {
				return nil, ended
			}
			if d.Approval != Allow {
				msg := d.Reason
				if unanswered && opts.Remedy != nil {
					if r := opts.Remedy(def, asked); r != "" {
						msg += "; " + r
					}
				}
				return nil, &tool.Error{Kind: tool.KindDenied, Tool: def.Name, Runtime: def.Runtime, Stage: "policy",
					Message: msg}
			}
			// The call runs with the policy in reach, so that the host
			// operations it asks for are checked by the same rules and
			// approvals (CheckOperation).
			return next(context.WithValue(ctx, scopeKey, scope), inv)
		}
	}, sessions
}

// sessionApprovals are the "allow for the session" answers: for each
// session, the tools (and command lines) allowed for the rest of it. A
// session whose end is known ([lathe.WithSessionEnd]) is dropped when it
// ends, so that a client that reconnects again and again cannot make the
// map grow without bound.
type sessionApprovals struct {
	mu sync.Mutex
	m  map[string]map[string]bool // session id → tool and command → allowed
}

func (s *sessionApprovals) allowed(sid, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[sid][key]
}

// allow records key for the session of ctx. The first approval of a
// session whose end is known starts the wait for that end, which drops
// the session's approvals.
func (s *sessionApprovals) allow(ctx context.Context, sid, key string) {
	end := lathe.SessionEnd(ctx)
	select {
	case <-end:
		// The session is over (its call outlived it): nothing is kept.
		return
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.m[sid]
	if keys == nil {
		keys = map[string]bool{}
		s.m[sid] = keys
		if end != nil {
			go func() {
				<-end
				s.mu.Lock()
				delete(s.m, sid)
				s.mu.Unlock()
			}()
		}
	}
	keys[key] = true
}

// len counts the sessions with approvals.
func (s *sessionApprovals) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// settle turns an ask into allow or deny: a session grant, a stored grant,
// the person who typed the call, or an approver. The verdict says how the
// ask was answered, for the engine's events: a session's earlier answer
// counts as "session", a stored grant as "always", a person's own call as
// "once", and whatever does not allow the call as "deny". Only when an
// approver is asked is [lathe.EventApprovalAsked] published, just before:
// the other answers come at once, without anyone to wait for. unanswered
// says that the call is denied because nobody could answer: there was no
// one to ask, or asking failed.
//
// An approver is waited for no longer than the call may run
// ([lathe.Invocation.Timeout]), nor past the caller's cancellation: an
// approval nobody answers ends the call, and ended says how (a timeout or
// a cancellation), so that the call ends as it would have had the tool
// itself hung.
func settle(ctx context.Context, opts Options, inv *lathe.Invocation, d Decision, sessions *sessionApprovals) (_ Decision, _ Verdict, unanswered bool, ended error) {
	name := inv.Tool.Definition.Name
	command := grantCommand(inv.Args)
	sid := lathe.SessionFrom(ctx)
	key := name + "\x00" + command
	if sessions.allowed(sid, key) {
		return Decision{Approval: Allow, By: "session", Rule: d.Rule, Reason: "allowed for this session"}, AllowSession, false, nil
	}
	if g, ok := grantDecision(ctx, opts.Grants, name, command, d); ok {
		if g.Approval == Allow {
			return g, AllowAlways, false, nil
		}
		return g, Refuse, false, nil
	}
	if who, ok := ctx.Value(personKey).(string); ok {
		return Decision{Approval: Allow, By: who, Rule: d.Rule, Reason: "called by a person"}, AllowOnce, false, nil
	}
	a, by := approverOf(ctx, opts)
	if a == nil {
		return Decision{Approval: Deny, By: "nobody", Rule: d.Rule, Default: d.Default,
			Reason: "the call needs approval (" + d.Reason + ") and there is no one to ask"}, Refuse, true, nil
	}
	req := &Request{Tool: &inv.Tool.Definition, Call: inv.Call, Arguments: render(ctx, opts, inv), Reason: d.Reason,
		Args: inv.Args, Rule: ruleName(d.Rule), Seq: inv.Seq()}
	inv.Emit(lathe.Event{Kind: lathe.EventApprovalAsked, Approval: &lathe.Approval{Rule: ruleName(d.Rule), Reason: d.Reason}})
	actx, cancel := ctx, context.CancelFunc(func() {})
	if t := inv.Timeout(); t > 0 {
		actx, cancel = context.WithTimeout(ctx, t)
	}
	ans, err := a.Approve(actx, req)
	waitEnded := actx.Err() != nil
	cancel()
	// An answer that came as the wait ended counts for nothing: the call
	// is over.
	if waitEnded {
		def := &inv.Tool.Definition
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			d := Decision{Approval: Deny, By: by, Rule: d.Rule, Reason: "the call was cancelled while its approval was asked"}
			return d, Refuse, false, &tool.Error{Kind: tool.KindCancelled, Tool: def.Name, Runtime: def.Runtime,
				Stage: "policy", Message: d.Reason}
		}
		// The caller's own deadline, or the call's timeout, whichever came first.
		reason := fmt.Sprintf("nobody answered the approval within %s, the call's timeout", inv.Timeout())
		if ctx.Err() != nil {
			reason = "nobody answered the approval before the call's deadline"
		}
		d := Decision{Approval: Deny, By: by, Rule: d.Rule, Reason: reason}
		return d, Refuse, false, &tool.Error{Kind: tool.KindTimeout, Tool: def.Name, Runtime: def.Runtime,
			Stage: "policy", Message: reason}
	}
	if err != nil {
		return Decision{Approval: Deny, By: by, Rule: d.Rule, Default: d.Default, Reason: "approval could not be asked: " + err.Error()}, Refuse, true, nil
	}
	switch ans.Verdict {
	case AllowOnce:
		return Decision{Approval: Allow, By: by, Rule: d.Rule, Reason: "approved once"}, AllowOnce, false, nil
	case AllowSession:
		sessions.allow(ctx, sid, key)
		return Decision{Approval: Allow, By: by, Rule: d.Rule, Reason: "approved for the session"}, AllowSession, false, nil
	case AllowAlways:
		if opts.Grants != nil {
			if err := opts.Grants.AddGrant(ctx, Grant{Tool: name, Command: command, Created: time.Now()}); err != nil {
				return Decision{Approval: Allow, By: by, Rule: d.Rule, Reason: "approved; the grant could not be stored: " + err.Error()}, AllowAlways, false, nil
			}
		}
		sessions.allow(ctx, sid, key)
		return Decision{Approval: Allow, By: by, Rule: d.Rule, Reason: "approved always"}, AllowAlways, false, nil
	}
	reason := "the person refused the call"
	if ans.Reason != "" {
		reason += ": " + ans.Reason
	}
	return Decision{Approval: Deny, By: by, Rule: d.Rule, Reason: reason}, Refuse, false, nil
}

// approverOf finds who answers an ask in ctx, and how the answer is
// reported: the context's approver, else the middleware's, else the
// caller's own person through an elicitation, else the fallback (someone
// elsewhere, who answers while the call waits); nil when there is no one.
func approverOf(ctx context.Context, opts Options) (Approver, string) {
	if ca, ok := ctx.Value(approverKey).(Approver); ok {
		return ca, "approver"
	}
	if opts.Approver != nil {
		return opts.Approver, "approver"
	}
	if el := tool.HooksFrom(ctx).Elicit; el != nil {
		return elicitApprover(el), "client"
	}
	if opts.Fallback != nil {
		return opts.Fallback, "remote"
	}
	return nil, ""
}

// ruleName names a rule in the engine's events: where it came from, else
// its patterns; "" for no rule (the tool's annotations decided).
func ruleName(r *Rule) string {
	switch {
	case r == nil:
		return ""
	case r.Source != "":
		return r.Source
	case r.Operation != "":
		return fmt.Sprintf("tool %q operation %q args %q", r.Tool, r.Operation, r.Args)
	case r.Args != "":
		return fmt.Sprintf("tool %q args %q", r.Tool, r.Args)
	}
	return fmt.Sprintf("tool %q", r.Tool)
}

// grantCommand is the command line a grant or a session approval is
// limited to: the "command" argument of a tool that runs command lines, so
// that approving `git log` for good does not approve `rm -rf ~`.
func grantCommand(args any) string {
	m, _ := args.(map[string]any)
	s, _ := m["command"].(string)
	return s
}

// render gives the arguments as a person should read them.
func render(ctx context.Context, opts Options, inv *lathe.Invocation) string {
	if f, ok := inv.Tool.Runtime.(tool.ArgumentFormatter); ok {
		fctx, cancel := context.WithTimeout(ctx, opts.FormatTimeout)
		defer cancel()
		if s, err := f.FormatArguments(fctx, &inv.Tool.Definition, inv.Call); err == nil && s != "" {
			return s
		}
	}
	b, err := json.Marshal(inv.Args)
	if err != nil {
		return string(inv.Call.Arguments)
	}
	return string(b)
}

// elicitApprover asks through an elicitation (an MCP client's person): one
// field, "decision", with the four answers, and an optional reason.
func elicitApprover(el func(context.Context, *tool.ElicitRequest) (*tool.ElicitResult, error)) Approver {
	return ApproverFunc(func(ctx context.Context, r *Request) (Answer, error) {
		schema, _ := json.Marshal(map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{"type": "string", "title": "Allow this call?",
					"enum": []string{string(AllowOnce), string(AllowSession), string(AllowAlways), string(Refuse)}},
				"reason": map[string]any{"type": "string", "title": "Reason, if you refuse (told to the model)"},
			},
			"required": []string{"decision"},
		})
		msg := fmt.Sprintf("Run %s %s? (%s)", r.Tool.Name, r.Arguments, r.Reason)
		if r.Operation != nil {
			msg = fmt.Sprintf("Let %s %s %s? (%s)", r.Tool.Name, r.Operation.Kind, r.Operation.Subject, r.Reason)
		}
		res, err := el(ctx, &tool.ElicitRequest{Message: msg, Schema: schema})
		if err != nil {
			return Answer{}, err
		}
		if res.Action != tool.ElicitAccept {
			return Answer{Verdict: Refuse, Reason: "declined"}, nil
		}
		v, _ := res.Content["decision"].(string)
		reason, _ := res.Content["reason"].(string)
		switch Verdict(v) {
		case AllowOnce, AllowSession, AllowAlways:
			return Answer{Verdict: Verdict(v)}, nil
		}
		return Answer{Verdict: Refuse, Reason: reason}, nil
	})
}
