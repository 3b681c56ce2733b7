package mcp

import (
	"context"

	"github.com/lathe-tools/lathe/tool"
)

// Requests of a client other than tool calls. A resource read, a prompt
// get or a completion that comes with the hooks of the client that asked
// ([tool.WithHooks]; lathe's face gives each its client's) is followed
// while it runs as a call is: what the server logs in its course reaches
// that client alone (server.caller), not every client as a message of no
// call does; and the log level the hooks name is the one the server is
// asked for (in the request's _meta from MCP 2026-07-28 on, by
// levelInMeta; before, by raising the session's level for its time, as
// holdLevel does for a call). Such a request cannot end with a question
// to its caller, as a call can: a server that elicits during it is refused
// (server.elicit).

// followed runs do, a request of a client to s other than a tool call, as
// above; without hooks to follow it by, it runs do alone.
func followed[T any](ctx context.Context, s *server, sess *session, do func(context.Context) (T, error)) (T, error) {
	hooks := tool.HooksFrom(ctx)
	if hooks.Log == nil && hooks.LogLevel == "" {
		return do(ctx)
	}
	rctx, _, end, err := s.begin(ctx, sess, &inflight{hooks: hooks, plain: true})
	if err != nil {
		var zero T
		return zero, err
	}
	answered := false
	defer func() { end(answered) }()
	res, err := do(rctx)
	answered = rctx.Err() == nil
	// The log messages sent before the answer reach the client before
	// the request ends (logging.go).
	sess.settle(rctx)
	return res, err
}
