package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// Access is a client's resource read or prompt get, as [Options].Audit
// records it: an action of the client, like a call, that reaches an
// upstream server.
type Access struct {
	// Kind is "resource_read" or "prompt_get".
	Kind string
	// Session names the client's session, as the policy and the engine's
	// events name it.
	Session string
	// Name is the URI read or the prompt's name, as the client asked.
	Name string
	// Arguments are a prompt's arguments.
	Arguments map[string]string
	// Server is the upstream server the request goes to; "" when none
	// would serve it.
	Server string
}

// AccessEnd is how an [Access] ended.
type AccessEnd struct {
	// Denied says lathe refused the request, for Reason: a URI that
	// several upstream servers claim is not read from any of them.
	Denied bool
	Reason string
	// Outcome is "ok" or an error kind (a [tool.ErrorKind]).
	Outcome  string
	Duration time.Duration
	// Bytes counts the text and data of the contents or messages.
	Bytes int
}

// kinds of Access.
const (
	accessResourceRead = "resource_read"
	accessPromptGet    = "prompt_get"
)

// audited records a client's resource read or prompt get through
// [Options].Audit, around next; a URI several servers claim is refused
// (and recorded as refused) here, before the SDK could answer that it
// does not exist. Without Audit the request is only logged.
func (s *Server) audited(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	p := s.opts.Upstream
	var a Access
	switch r := req.(type) {
	case *sdk.ReadResourceRequest:
		if r.Params == nil {
			return next(ctx, method, req)
		}
		a = Access{Kind: accessResourceRead, Session: s.sessionID(r.Session), Name: r.Params.URI}
	case *sdk.GetPromptRequest:
		if r.Params == nil {
			return next(ctx, method, req)
		}
		a = Access{Kind: accessPromptGet, Session: s.sessionID(r.Session), Name: r.Params.Name,
			Arguments: r.Params.Arguments}
		a.Server = p.PromptServer(a.Name)
	default:
		return next(ctx, method, req)
	}
	var refused error
	if a.Kind == accessResourceRead {
		var err error
		a.Server, err = p.ResourceServer(a.Name)
		if errors.Is(err, mcp.ErrAmbiguous) {
			refused = err
		}
	}
	start := time.Now()
	end := func(AccessEnd) {}
	if s.opts.Audit != nil {
		e, err := s.opts.Audit(ctx, &a)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("%s %q was not served because the audit log could not be written: %v", a.Kind, a.Name, err)}
		}
		end = e
	}
	if refused != nil {
		s.opts.Logger.Info(a.Kind+" refused", "session", a.Session, "name", a.Name, "error", refused)
		end(AccessEnd{Denied: true, Reason: refused.Error(), Outcome: string(tool.KindDenied), Duration: time.Since(start)})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: refused.Error()}
	}
	res, err := next(ctx, method, req)
	e := AccessEnd{Outcome: "ok", Duration: time.Since(start)}
	switch {
	case err != nil && ctx.Err() != nil:
		e.Outcome = string(tool.KindCancelled)
	case err != nil:
		e.Outcome = string(tool.KindRuntimeFailure)
		e.Reason = err.Error()
	default:
		e.Bytes = resultBytes(res)
	}
	s.opts.Logger.Info(a.Kind, "session", a.Session, "server", a.Server, "name", a.Name, "outcome", e.Outcome, "error", err)
	end(e)
	return res, err
}

// resultBytes counts the text and data of a read's contents or a
// prompt's messages.
func resultBytes(res sdk.Result) int {
	n := 0
	switch r := res.(type) {
	case *sdk.ReadResourceResult:
		for _, c := range r.Contents {
			if c != nil {
				n += len(c.Text) + len(c.Blob)
			}
		}
	case *sdk.GetPromptResult:
		for _, m := range r.Messages {
			if m == nil || m.Content == nil {
				continue
			}
			switch c := m.Content.(type) {
			case *sdk.TextContent:
				n += len(c.Text)
			case *sdk.ImageContent:
				n += len(c.Data)
			case *sdk.AudioContent:
				n += len(c.Data)
			case *sdk.EmbeddedResource:
				if c.Resource != nil {
					n += len(c.Resource.Text) + len(c.Resource.Blob)
				}
			}
		}
	}
	return n
}
