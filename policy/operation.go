package policy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// OperationRequest is a host operation a confined tool asks for in the
// course of a call (package host), put to the policy: Kind is the
// operation ("read", "write", "list", "stat", "remove", "fetch", "run",
// "env") and Subject what rules match ("src/main.go", a URL, a command
// line, a variable's name).
type OperationRequest struct {
	Kind    string
	Subject string
}

// opScope is what [Middleware] hands the calls it lets run, so that
// [CheckOperation] finds the policy, its options and the session's
// approvals. One per middleware: a call pays only for the context value.
type opScope struct {
	p        *Policy
	opts     Options
	sessions *sessionApprovals
}

// DecideOperation says whether a call of def may do op, by the rules that
// name an operation (Rule.Operation): those whose tool pattern matches def,
// whose operation is op's kind or "*", and whose args pattern, if any,
// matches op's subject. The rules weigh as for calls ([Policy.Decide]): a
// deny rule wins, else the most specific rule (one with args, then the
// most literal characters, then one that names the operation rather than
// "*"), a tie going to the more restrictive. The subject of a "run" is a
// command line, read as a call's command is: a deny rule matches any
// command in it. With no matching rule the operation is allowed: the
// tool's permissions, checked before the policy, already narrowed it. It
// never asks anyone.
func (p *Policy) DecideOperation(def *tool.Definition, op OperationRequest) Decision {
	var best *Rule
	var bestScore [3]int
	var doubt *Rule
	var doubtWhy string
	var sh *shellReader
	read := func(text string) *shellReader {
		if sh == nil {
			sh = readShell(text)
		}
		return sh
	}
	var asArgs any
	if op.Kind == "run" {
		asArgs = map[string]any{"command": op.Subject}
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Operation == "" || (r.Operation != "*" && r.Operation != op.Kind) || !match(r.Tool, def.Name) {
			continue
		}
		if r.Args != "" {
			var ok bool
			if asArgs != nil {
				var why string
				ok, why = matchArgs(r, asArgs, read)
				if why != "" && doubt == nil {
					doubt, doubtWhy = r, why
				}
			} else {
				ok = match(r.Args, op.Subject)
			}
			if !ok {
				continue
			}
		}
		if r.Approval == Deny {
			return Decision{Approval: Deny, By: "rule", Rule: r,
				Reason: "the rule " + r.String() + " denies " + op.Kind + " " + op.Subject}
		}
		score := [3]int{0, literals(r.Tool), 0}
		if r.Args != "" {
			score[0] = 1
			score[1] += literals(r.Args)
		}
		if r.Operation != "*" {
			score[2] = 1
		}
		if best == nil || score[0] > bestScore[0] || (score[0] == bestScore[0] && (score[1] > bestScore[1] ||
			(score[1] == bestScore[1] && (score[2] > bestScore[2] ||
				(score[2] == bestScore[2] && r.Approval.rank() > best.Approval.rank()))))) {
			best, bestScore = r, score
		}
	}
	switch {
	case doubt != nil && (best == nil || best.Approval == Allow):
		return Decision{Approval: Ask, By: "rule", Rule: doubt,
			Reason: "the rule " + doubt.String() + " cannot tell whether it denies the command: " + doubtWhy}
	case best != nil:
		return Decision{Approval: best.Approval, By: "rule", Rule: best, Reason: "the rule " + best.String()}
	}
	return Decision{Approval: Allow, By: "default", Reason: "no rule names the operation"}
}

// CheckOperation decides whether the call running in ctx may do op, by the
// rules that name an operation ([Policy.DecideOperation]), asking where one
// says ask: the approver of the call's context ([WithApprover]), else the
// middleware's, else the call's client (an elicitation), as a call's own
// approval is asked, and published as the same events with
// [lathe.Event].Operation set. The question is waited on no longer than the
// call's deadline and its cancellation: an ask nobody answers denies the
// operation shortly before the deadline (a tenth of the time left, at most
// a second), so that the tool and its record learn why, and the call then
// ends as its deadline says.
//
// An "allow for the session" or "allow always" answer allows this tool
// this operation on this same subject for the rest of the session, and no
// longer: an operation's approval is never stored as a grant, since a
// grant outlives what the person saw. A call typed by a person
// ([WithPerson]) approved the call, not what the tool does in it: an
// operation's ask still asks.
//
// A non-nil error means op must not happen; it is a *tool.Error of kind
// denied that says why, naming the rule (and its file and line) that
// denied it. Outside a call that passed [Middleware], every operation is
// allowed by the policy (the tool's permissions still apply, in package
// host); so is an operation no rule names. Once the call's run is over,
// nothing is allowed.
func CheckOperation(ctx context.Context, op OperationRequest) (Decision, error) {
	s, _ := ctx.Value(scopeKey).(*opScope)
	inv := lathe.InvocationFrom(ctx)
	if s == nil || inv == nil || inv.Tool == nil {
		return Decision{Approval: Allow, By: "default", Reason: "no policy checks the operation"}, nil
	}
	def := &inv.Tool.Definition
	if inv.Ended() {
		d := Decision{Approval: Deny, By: "engine", Reason: "the call has ended; nothing more may be done for it"}
		return d, deniedOperation(def, d)
	}
	d := s.p.DecideOperation(def, op)
	switch d.Approval {
	case Allow:
		return d, nil
	case Deny:
		return d, deniedOperation(def, d)
	}
	rule := ruleName(d.Rule)
	d, v := s.settleOperation(ctx, inv, op, d)
	inv.Emit(lathe.Event{Kind: lathe.EventApprovalAnswered, Operation: &lathe.Operation{Kind: op.Kind, Subject: op.Subject},
		Approval: &lathe.Approval{Rule: rule, Reason: d.Reason, Answer: string(v), By: d.By}})
	if d.Approval != Allow {
		return d, deniedOperation(def, d)
	}
	return d, nil
}

func deniedOperation(def *tool.Definition, d Decision) error {
	return &tool.Error{Kind: tool.KindDenied, Tool: def.Name, Runtime: def.Runtime, Stage: "policy", Message: d.Reason}
}

// settleOperation turns the ask d about op into allow or deny: an earlier
// answer for the session, else whoever can be asked, within the call's
// deadline.
func (s *opScope) settleOperation(ctx context.Context, inv *lathe.Invocation, op OperationRequest, d Decision) (Decision, Verdict) {
	def := &inv.Tool.Definition
	what := op.Kind + " " + op.Subject
	sid := lathe.SessionFrom(ctx)
	// A NUL cannot be in a tool's name nor in an operation's kind, so the
	// key is one tool, one kind, one subject: never a call's key.
	key := def.Name + "\x00" + op.Kind + "\x00" + op.Subject
	if s.sessions.allowed(sid, key) {
		return Decision{Approval: Allow, By: "session", Rule: d.Rule, Reason: "allowed for this session"}, AllowSession
	}
	a, by := approverOf(ctx, s.opts)
	if a == nil {
		return Decision{Approval: Deny, By: "nobody", Rule: d.Rule,
			Reason: what + " needs approval (" + d.Reason + ") and there is no one to ask"}, Refuse
	}
	req := &Request{Tool: def, Call: inv.Call, Arguments: what, Reason: d.Reason, Operation: &op, Args: inv.Args,
		Rule: ruleName(d.Rule), Seq: inv.Seq()}
	inv.Emit(lathe.Event{Kind: lathe.EventApprovalAsked, Operation: &lathe.Operation{Kind: op.Kind, Subject: op.Subject},
		Approval: &lathe.Approval{Rule: ruleName(d.Rule), Reason: d.Reason}})
	// The wait ends a little before the call's deadline (a tenth of the
	// time left, at most a second), so that the tool hears of the denial,
	// and records it, while its call still runs: at the deadline itself
	// the engine stops listening, and the record would say only that the
	// call timed out, not why.
	actx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		actx, cancel = context.WithDeadline(ctx, dl.Add(-min(time.Until(dl)/10, time.Second)))
	} else if t := inv.Timeout(); t > 0 {
		actx, cancel = context.WithTimeout(ctx, t)
	}
	ans, err := a.Approve(actx, req)
	waitEnded := actx.Err() != nil
	cancel()
	switch {
	case waitEnded && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Decision{Approval: Deny, By: by, Rule: d.Rule,
			Reason: "the call was cancelled while the approval of " + what + " was asked"}, Refuse
	case waitEnded:
		// An answer that came as the wait ended counts for nothing: the
		// call is over, or about to be.
		return Decision{Approval: Deny, By: by, Rule: d.Rule,
			Reason: "nobody answered the approval of " + what + " before the call's deadline"}, Refuse
	case err != nil:
		return Decision{Approval: Deny, By: by, Rule: d.Rule, Reason: "approval of " + what + " could not be asked: " + err.Error()}, Refuse
	}
	switch ans.Verdict {
	case AllowOnce:
		return Decision{Approval: Allow, By: by, Rule: d.Rule, Reason: "approved once"}, AllowOnce
	case AllowSession, AllowAlways:
		s.sessions.allow(ctx, sid, key)
		return Decision{Approval: Allow, By: by, Rule: d.Rule,
			Reason: "approved for the session (an operation's approval is never stored for good)"}, AllowSession
	}
	reason := fmt.Sprintf("the person refused %s", what)
	if ans.Reason != "" {
		reason += ": " + ans.Reason
	}
	return Decision{Approval: Deny, By: by, Rule: d.Rule, Reason: reason}, Refuse
}
