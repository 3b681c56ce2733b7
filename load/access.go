package load

import (
	"context"

	"github.com/lathe-tools/lathe/audit"
)

// StartAccess starts the audit record of a client's resource read or
// prompt get through an MCP server face (lathe serve), its URI or name
// and arguments redacted as a call's arguments are, and returns the
// function that completes it. With the audit log off it records nothing
// and returns a function that does nothing. An error means the log could
// not be opened or written: the request must not go ahead, as a call
// would not.
func (w *Workspace) StartAccess(ctx context.Context, a *audit.Access) (finish func(audit.AccessEnd) error, err error) {
	if w.store == nil {
		return func(audit.AccessEnd) error { return nil }, nil
	}
	s, err := w.store.get()
	if err != nil {
		return nil, err
	}
	return s.StartAccess(ctx, a, w.store.red)
}
