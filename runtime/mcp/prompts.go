package mcp

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// GetPrompt gets a prompt by the name the pool lists it under; with the
// hooks of the client that asked, what the server logs meanwhile reaches
// that client (follow.go).
func (p *Pool) GetPrompt(ctx context.Context, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	p.surf.mu.Lock()
	r, ok := p.surf.prompts[name]
	p.surf.mu.Unlock()
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
	}
	sess, err := r.srv.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", r.srv.cfg.Name, err)
	}
	return followed(ctx, r.srv, sess, func(ctx context.Context) (*sdk.GetPromptResult, error) {
		return sess.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: r.upstream, Arguments: args})
	})
}
