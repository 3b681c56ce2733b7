package audit

import (
	"context"
	"os"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// Middleware records every call in s. Install it with lathe.Options.Outer,
// so that it sees calls that fail before the policy (an unknown tool,
// invalid arguments) too; the policy's decision reaches it through
// [policy.WithNote]. A call whose record cannot be started does not run:
// an audit log that can lose calls is no audit log. The call's host
// operations ([lathe.Invocation.Operations]) are written with its end,
// their subjects, reasons and errors redacted by r (URLs come without
// their userinfo and query values already, from [lathe.RecordOperation]),
// and the error of an "env" operation not kept at all, lest it quote the
// variable's value.
func Middleware(s *Store, r *Redactor) lathe.Middleware {
	pid := os.Getpid()
	return func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			start := time.Now()
			rec := &Record{CallID: inv.Call.ID, Parent: parentFrom(ctx), Time: start, Tool: inv.Call.Name,
				Arguments: r.Redact(inv.Call.Arguments), ArgsBytes: len(inv.Call.Arguments), PID: pid,
				Session: lathe.SessionFrom(ctx)}
			id, err := s.Start(ctx, rec)
			if err != nil {
				return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Stage: "audit",
					Message: "the call was not run because the audit log could not be written", Err: err}
			}
			var d policy.Decision
			out, err := next(policy.WithNote(withParent(ctx, id), func(x policy.Decision) { d = x }), inv)
			rec.Decision, rec.DecidedBy, rec.Reason = string(d.Approval), d.By, d.Reason
			rec.Duration = time.Since(start)
			// The call's run is over (the engine takes no more operations
			// for it), so these are all it will have.
			rec.Operations = operations(inv.Operations(), r)
			rec.OperationsDropped = inv.OperationsDropped()
			switch {
			case err != nil:
				rec.Outcome = string(tool.KindOf(err))
			case out.Question != nil:
				rec.Outcome = "question"
			case out.Result.IsError:
				rec.Outcome = string(out.Result.ErrorKind)
				rec.ResultBytes = resultSize(out.Result)
			default:
				rec.Outcome = "ok"
				rec.ResultBytes = resultSize(out.Result)
			}
			// A record that cannot be finished stays "started", which the
			// log shows as incomplete; failing the call now would hide a
			// result whose effects have already happened.
			_ = s.Finish(ctx, id, rec)
			return out, err
		}
	}
}

func resultSize(r *tool.Result) int {
	n := len(r.Structured)
	for _, c := range r.Content {
		n += len(c.Text) + len(c.Data)
		if c.Resource != nil {
			n += len(c.Resource.Text) + len(c.Resource.Blob)
		}
	}
	return n
}
