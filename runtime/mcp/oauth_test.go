package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
)

// staticToken is an OAuth handler with one token and no flow.
type staticToken string

func (s staticToken) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: string(s), TokenType: "Bearer"}), nil
}

func (s staticToken) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	return mcp.ErrCollision // any error: this handler has no flow
}

var _ auth.OAuthHandler = staticToken("")

// echoServer is an MCP server over HTTP with one tool, recording the
// credentials each request brought.
type echoServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []string
}

func newEchoServer(t *testing.T, wantToken string) *echoServer {
	s := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "ping"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "pong"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	e := &echoServer{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.seen = append(e.seen, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
		e.mu.Unlock()
		if wantToken != "" && r.Header.Get("Authorization") != "Bearer "+wantToken {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *echoServer) credentials() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, s := range e.seen {
		if s != "|" {
			out = append(out, s)
		}
	}
	return out
}

func TestOAuthTokenAuthorizesCalls(t *testing.T) {
	up := newEchoServer(t, "tok-secret")
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "notes", URL: up.srv.URL + "/mcp", OAuth: staticToken("tok-secret")})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mustOK(t, call(t, ctx, e, "notes__ping", `{}`))
}

// An upstream that redirects elsewhere must not take lathe's credentials
// with it: Go's client would carry a custom header to any host and the
// Authorization header to another port of the same host.
func TestOAuthTokenStaysWithItsOrigin(t *testing.T) {
	thief := newEchoServer(t, "")
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, thief.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	t.Run("the attack works with Go's own client", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, redirector.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer tok-secret")
		req.Header.Set("X-Api-Key", "key-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := thief.credentials(); len(got) == 0 {
			t.Skip("this Go drops both headers on a redirect to another port; the check below still guards lathe")
		}
	})

	before := len(thief.credentials())
	e := lathe.New(lathe.Options{Timeout: 10 * time.Second})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, []mcp.Config{{Name: "notes", URL: redirector.URL + "/mcp", OAuth: staticToken("tok-secret"),
		Headers: map[string]string{"X-Api-Key": "key-secret"}}}, mcp.Options{})
	if err == nil {
		p.Close()
		t.Fatal("a server that redirects to another origin was connected to")
	}
	if !strings.Contains(err.Error(), "another origin") {
		t.Errorf("error %v does not say the redirect went to another origin", err)
	}
	if got := thief.credentials()[before:]; len(got) > 0 {
		t.Errorf("the other origin received credentials: %q", got)
	}
}
