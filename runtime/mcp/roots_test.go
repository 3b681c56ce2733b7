package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// TestRootsAreRefused: an upstream server that asks lathe for its roots,
// during a call or on its own, is refused (method not found), never
// handed a list (an empty one would make a server drop the
// directories its configuration gave it; any other would be a client's).
func TestRootsAreRefused(t *testing.T) {
	asked := make(chan error, 1)
	srv := sdk.NewServer(&sdk.Implementation{Name: "rooty", Version: "1"}, &sdk.ServerOptions{
		InitializedHandler: func(ctx context.Context, r *sdk.InitializedRequest) {
			// On its own, outside any call.
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err := r.Session.ListRoots(ctx, nil)
				asked <- err
			}()
		},
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "roots", Description: "List the client's roots."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "refused: " + err.Error()}}}, nil, nil
			}
			b, _ := json.Marshal(res.Roots)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "roots: " + string(b)}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer ts.Close()

	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	defer e.Close()
	prefix := ""
	pool, err := mcp.Open(context.Background(), e, []mcp.Config{{Name: "rooty", URL: ts.URL, Prefix: &prefix}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	select {
	case err := <-asked:
		if err == nil || !strings.Contains(err.Error(), "roots/list") {
			t.Errorf("roots/list outside any call: %v, want a refusal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's roots/list outside any call was not answered within 10s")
	}
	out := e.Call(context.Background(), &tool.Call{Name: "roots", Arguments: json.RawMessage(`{}`)})
	if out.Result == nil || !strings.HasPrefix(out.Result.Text(), "refused: ") {
		t.Errorf("roots/list during a call: %+v, want a refusal, not a list", out.Result)
	}
}
