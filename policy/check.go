package policy

import (
	"context"

	"github.com/lathe-tools/lathe/tool"
)

// DryRun is what the policy would make of one call, found without running
// it or asking anyone: see [Policy.DryRun].
type DryRun struct {
	// Decision is what the rules, or failing them the tool's annotations,
	// say: [Policy.Decide].
	Decision Decision
	// Grant is what a stored grant makes of an ask: a decision by "grant"
	// that allows the call (or denies it, when the grants cannot be read).
	// Nil when the decision is not ask or no grant covers the call.
	Grant *Decision
	// Command is the command line a grant of the call is limited to; ""
	// for a tool that runs none, whose grants cover the whole tool.
	Command string
}

// Approval is what would happen to a call that nobody answers: the
// decision, or the grant's answer to its ask.
func (r DryRun) Approval() Approval {
	if r.Grant != nil {
		return r.Grant.Approval
	}
	return r.Decision.Approval
}

// DryRun says what p, with the stored grants (nil for none), would make
// of a call of def with args (decoded and validated JSON, as [Middleware]
// gets them): the rule or default that decides and, for an ask, whether a
// grant would settle it. It reads the grants and nothing else: it runs
// nothing and asks nobody. A person's answers that last a session live in
// the process that got them, so they are not known here.
func (p *Policy) DryRun(ctx context.Context, grants GrantStore, def *tool.Definition, args any) DryRun {
	r := DryRun{Decision: p.Decide(def, args), Command: grantCommand(args)}
	if r.Decision.Approval == Ask {
		if d, ok := grantDecision(ctx, grants, def.Name, r.Command, r.Decision); ok {
			r.Grant = &d
		}
	}
	return r
}

// grantDecision is what the stored grants make of the ask d about a call
// of the tool name with the command line command: allow when a grant
// covers it, deny when the grants cannot be read. ok is false when they
// have nothing to say. [Middleware] settles an ask with it, and
// [Policy.DryRun] predicts with it, so the two cannot disagree.
func grantDecision(ctx context.Context, grants GrantStore, name, command string, d Decision) (Decision, bool) {
	if grants == nil {
		return Decision{}, false
	}
	ok, err := grants.Granted(ctx, name, command)
	if err != nil {
		return Decision{Approval: Deny, By: "grant", Rule: d.Rule, Reason: "the grants could not be read: " + err.Error()}, true
	}
	if ok {
		return Decision{Approval: Allow, By: "grant", Rule: d.Rule, Reason: "allowed by a stored grant"}, true
	}
	return Decision{}, false
}
