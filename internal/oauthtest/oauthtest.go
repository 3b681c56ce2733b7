// Package oauthtest runs, in the test process, an OAuth authorization
// server and an MCP server that requires its tokens, for the tests of
// lathe's OAuth client and of lathe auth.
package oauthtest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// AuthServer is an authorization server in the test process: metadata
// (RFC 8414), dynamic registration (RFC 7591), an authorization endpoint
// that approves at once, and a token endpoint that checks PKCE and the
// resource indicator and issues short-lived tokens and refresh tokens.
type AuthServer struct {
	// Srv is the server; its URL is the issuer.
	Srv *httptest.Server
	// TTL is the expires_in of the tokens it issues, in seconds; set it
	// before the flow runs.
	TTL int

	// Mu guards what follows, which records what the server was asked.
	Mu          sync.Mutex
	Registered  []string        // client IDs registered dynamically
	Valid       map[string]bool // access tokens it issued
	Refreshes   []url.Values    // forms of refresh grants
	Exchanges   []url.Values    // forms of code grants
	AuthorizeQs []url.Values    // queries of authorization requests

	codes   map[string]pending // code → what it was issued for
	refresh map[string]bool    // refresh tokens not yet spent
	n       int
}

type pending struct {
	challenge, resource, client, redirect string
}

func NewAuthServer(t *testing.T) *AuthServer {
	a := &AuthServer{TTL: 3600, Valid: map[string]bool{}, codes: map[string]pending{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	a.Srv = httptest.NewServer(mux)
	t.Cleanup(a.Srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(oauthex.AuthServerMeta{
			Issuer:                            a.Srv.URL,
			AuthorizationEndpoint:             a.Srv.URL + "/authorize",
			TokenEndpoint:                     a.Srv.URL + "/token",
			RegistrationEndpoint:              a.Srv.URL + "/register",
			ResponseTypesSupported:            []string{"code"},
			CodeChallengeMethodsSupported:     []string{"S256"},
			TokenEndpointAuthMethodsSupported: []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m oauthex.ClientRegistrationMetadata
		json.NewDecoder(r.Body).Decode(&m)
		a.Mu.Lock()
		a.n++
		id := fmt.Sprintf("client-%d", a.n)
		a.Registered = append(a.Registered, id)
		a.Mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.Mu.Lock()
		a.AuthorizeQs = append(a.AuthorizeQs, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		if q.Get("code_challenge_method") == "S256" && q.Get("code_challenge") != "" {
			a.codes[code] = pending{challenge: q.Get("code_challenge"), resource: q.Get("resource"), client: q.Get("client_id"), redirect: q.Get("redirect_uri")}
		}
		a.Mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f := r.PostForm
		a.Mu.Lock()
		defer a.Mu.Unlock()
		fail := func(code string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": code})
		}
		switch f.Get("grant_type") {
		case "authorization_code":
			a.Exchanges = append(a.Exchanges, f)
			p, ok := a.codes[f.Get("code")]
			delete(a.codes, f.Get("code"))
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != p.challenge ||
				f.Get("resource") != p.resource || f.Get("client_id") != p.client || f.Get("redirect_uri") != p.redirect {
				fail("invalid_grant")
				return
			}
		case "refresh_token":
			a.Refreshes = append(a.Refreshes, f)
			if !a.refresh[f.Get("refresh_token")] {
				fail("invalid_grant")
				return
			}
			delete(a.refresh, f.Get("refresh_token"))
		default:
			fail("unsupported_grant_type")
			return
		}
		a.n++
		at, rt := fmt.Sprintf("access-%d", a.n), fmt.Sprintf("refresh-%d", a.n)
		a.Valid[at], a.refresh[rt] = true, true
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.TTL, "refresh_token": rt})
	})
	return a
}

// ResourceServer is an MCP server that requires a token of the
// authorization server, with its protected-resource metadata (RFC 9728).
type ResourceServer struct {
	Srv *httptest.Server
	// URL is the MCP endpoint, the resource.
	URL string
	// Mu guards Seen, the Authorization headers of accepted requests.
	Mu   sync.Mutex
	Seen []string
}

func NewResourceServer(t *testing.T, as *AuthServer) *ResourceServer {
	rs := &ResourceServer{}
	s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "whoami"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	rs.Srv = httptest.NewServer(mux)
	t.Cleanup(rs.Srv.Close)
	rs.URL = rs.Srv.URL + "/mcp"
	verify := func(_ context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
		as.Mu.Lock()
		ok := as.Valid[tok]
		as.Mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		rs.Mu.Lock()
		rs.Seen = append(rs.Seen, r.Header.Get("Authorization"))
		rs.Mu.Unlock()
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	prmURL := rs.Srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(mcpHandler))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: rs.URL, AuthorizationServers: []string{as.Srv.URL},
	}))
	return rs
}

// Browser is what a person's browser does with the authorization URL: it
// follows the authorization server's redirect to the loopback listener.
func Browser() func(ctx context.Context, u string) error {
	return func(ctx context.Context, u string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the loopback listener answered %s", resp.Status)
		}
		return nil
	}
}
