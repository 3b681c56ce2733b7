package server_test

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server"
)

// TestApprovalThroughElicitation: behind a policy, a tool that asks for
// approval is put to the client's person through elicitation; a client that
// cannot be asked is refused, never silently approved.
func TestApprovalThroughElicitation(t *testing.T) {
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{})}})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(testTools()...); err != nil {
		t.Fatal(err)
	}
	srv := server.New(e, server.Options{})

	var asked []string
	decision := "once"
	cs := connect(t, srv, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			if strings.Contains(r.Params.Message, "Go on?") {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision, "reason": "not now"}}, nil
		},
	})
	// weather is read-only: no question.
	if r := callTool(t, cs, "weather", map[string]any{"city": "Oslo"}); r.IsError || len(asked) != 0 {
		t.Fatalf("weather: %s, asked %q", text(r), asked)
	}
	// fail says nothing of its effects: it asks, and runs once approved.
	if r := callTool(t, cs, "fail", map[string]any{}); !strings.Contains(text(r), "it broke") || len(asked) != 1 ||
		!strings.Contains(asked[0], "fail") {
		t.Fatalf("fail approved: %s, asked %q", text(r), asked)
	}
	decision = "deny"
	if r := callTool(t, cs, "fail", map[string]any{}); !r.IsError || !strings.Contains(text(r), "not now") {
		t.Fatalf("fail refused: %s", text(r))
	}

	// "Allow for the session" holds for that client's session, not another's.
	decision = "session"
	callTool(t, cs, "fail", map[string]any{})
	n := len(asked)
	callTool(t, cs, "fail", map[string]any{})
	if len(asked) != n {
		t.Fatal("asked again within the session")
	}
	other := connect(t, srv, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	})
	if r := callTool(t, other, "fail", map[string]any{}); !r.IsError || strings.Contains(text(r), "it broke") {
		t.Fatalf("another session used the first one's approval: %s", text(r))
	}

	plain := connect(t, srv, nil)
	if r := callTool(t, plain, "fail", map[string]any{}); !r.IsError || !strings.Contains(text(r), "no one to ask") {
		t.Fatalf("fail without elicitation: %s", text(r))
	}
}
