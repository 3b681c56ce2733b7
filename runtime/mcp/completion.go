package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Complete asks for completions of a prompt's argument or a template's
// variable, from the server the prompt or template goes to; with the
// hooks of the client that asked, what the server logs meanwhile reaches
// that client (follow.go).
func (p *Pool) Complete(ctx context.Context, params *sdk.CompleteParams) (*sdk.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion: ref is missing"}
	}
	c := *params
	ref := *params.Ref
	c.Ref = &ref
	var s *server
	switch ref.Type {
	case "ref/prompt":
		p.surf.mu.Lock()
		r, ok := p.surf.prompts[ref.Name]
		p.surf.mu.Unlock()
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: unknown prompt %q", ref.Name)}
		}
		s, ref.Name = r.srv, r.upstream
	case "ref/resource":
		p.surf.mu.Lock()
		for _, t := range p.surf.templates {
			if t.raw == ref.URI {
				s = t.srv
			}
		}
		p.surf.mu.Unlock()
		if s == nil {
			var err error
			if s, err = p.resourceServer(ref.URI); err != nil {
				return nil, err
			}
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("completion: unknown ref type %q", ref.Type)}
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	return followed(ctx, s, sess, func(ctx context.Context) (*sdk.CompleteResult, error) {
		return sess.cs.Complete(ctx, &c)
	})
}
