package policy

import "context"

// notPerson is what [Nested] leaves under the person key: not a string, so
// that no call made in the context counts as typed by a person.
type notPerson struct{}

// Nested returns a context for the calls a running tool makes through the
// engine on its own (code mode's script calling tools). A person who typed
// the outer call ([WithPerson]) approved that call, not what it goes on to
// call, which may be decided by what the tool read: each nested call is
// weighed on its own, and an ask goes to whoever can be asked (the
// approver, the client), or is denied when no one can. Grants and session
// approvals still apply, as they would to the same call made directly.
func Nested(ctx context.Context) context.Context {
	return context.WithValue(ctx, personKey, notPerson{})
}
