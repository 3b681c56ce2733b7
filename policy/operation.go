package policy

import (
	"context"
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

// CheckOperation decides whether the call running in ctx may do op, by the
// rules that name an operation (Rule.Operation), asking a person where one
// says ask, within the call's deadline. A non-nil error means op must not
// happen; it is a *tool.Error of kind denied that says why. Outside a call
// that passed [Middleware], every operation is allowed by the policy (the
// tool's permissions still apply, in package host).
//
// (Contract stub: built on the branch that owns this file.)
func CheckOperation(ctx context.Context, op OperationRequest) (Decision, error) {
	return Decision{Approval: Allow, By: "default", Reason: "no rule names the operation"}, nil
}
