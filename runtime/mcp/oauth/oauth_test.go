package oauth_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

// authServer is an authorization server in the test process: metadata
// (RFC 8414), dynamic registration (RFC 7591), an authorization endpoint
// that approves at once, and a token endpoint that checks PKCE and the
// resource indicator and issues short-lived tokens and refresh tokens.
type authServer struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	ttl         int // expires_in of issued tokens
	registered  []string
	codes       map[string]pending // code → what it was issued for
	valid       map[string]bool    // access tokens
	refresh     map[string]bool    // refresh tokens
	refreshes   []url.Values       // refresh grant forms
	exchanges   []url.Values       // code grant forms
	authorizeQs []url.Values
	n           int
}

type pending struct {
	challenge, resource, client, redirect string
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{t: t, ttl: 3600, codes: map[string]pending{}, valid: map[string]bool{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(oauthex.AuthServerMeta{
			Issuer:                            a.srv.URL,
			AuthorizationEndpoint:             a.srv.URL + "/authorize",
			TokenEndpoint:                     a.srv.URL + "/token",
			RegistrationEndpoint:              a.srv.URL + "/register",
			ResponseTypesSupported:            []string{"code"},
			CodeChallengeMethodsSupported:     []string{"S256"},
			TokenEndpointAuthMethodsSupported: []string{"none"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m oauthex.ClientRegistrationMetadata
		json.NewDecoder(r.Body).Decode(&m)
		a.mu.Lock()
		a.n++
		id := fmt.Sprintf("client-%d", a.n)
		a.registered = append(a.registered, id)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		a.authorizeQs = append(a.authorizeQs, q)
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		if q.Get("code_challenge_method") == "S256" && q.Get("code_challenge") != "" {
			a.codes[code] = pending{challenge: q.Get("code_challenge"), resource: q.Get("resource"), client: q.Get("client_id"), redirect: q.Get("redirect_uri")}
		}
		a.mu.Unlock()
		to, _ := url.Parse(q.Get("redirect_uri"))
		v := url.Values{"code": {code}, "state": {q.Get("state")}}
		to.RawQuery = v.Encode()
		http.Redirect(w, r, to.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f := r.PostForm
		a.mu.Lock()
		defer a.mu.Unlock()
		fail := func(code string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": code})
		}
		switch f.Get("grant_type") {
		case "authorization_code":
			a.exchanges = append(a.exchanges, f)
			p, ok := a.codes[f.Get("code")]
			delete(a.codes, f.Get("code"))
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != p.challenge ||
				f.Get("resource") != p.resource || f.Get("client_id") != p.client || f.Get("redirect_uri") != p.redirect {
				fail("invalid_grant")
				return
			}
		case "refresh_token":
			a.refreshes = append(a.refreshes, f)
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
		a.valid[at], a.refresh[rt] = true, true
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.ttl, "refresh_token": rt})
	})
	return a
}

// resourceServer is an MCP server that requires a token of the
// authorization server, with its protected-resource metadata (RFC 9728).
type resourceServer struct {
	srv  *httptest.Server
	url  string
	mu   sync.Mutex
	seen []string // Authorization headers of accepted requests
}

func newResourceServer(t *testing.T, as *authServer) *resourceServer {
	rs := &resourceServer{}
	s := sdk.NewServer(&sdk.Implementation{Name: "notes", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "whoami"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	rs.srv = httptest.NewServer(mux)
	t.Cleanup(rs.srv.Close)
	rs.url = rs.srv.URL + "/mcp"
	verify := func(_ context.Context, tok string, r *http.Request) (*auth.TokenInfo, error) {
		as.mu.Lock()
		ok := as.valid[tok]
		as.mu.Unlock()
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		rs.mu.Lock()
		rs.seen = append(rs.seen, r.Header.Get("Authorization"))
		rs.mu.Unlock()
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	prmURL := rs.srv.URL + "/.well-known/oauth-protected-resource/mcp"
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL})(mcpHandler))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: rs.url, AuthorizationServers: []string{as.srv.URL},
	}))
	return rs
}

// browser is what a person's browser does with the authorization URL: it
// follows the authorization server's redirect to the loopback listener.
func browser(t *testing.T) func(ctx context.Context, u string) error {
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

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call connects to the resource server with the handler and calls its tool.
func call(ctx context.Context, rs *resourceServer, h auth.OAuthHandler) error {
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: rs.url, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami"})
	return err
}

func TestLoginDiscoversRegistersAndExchangesWithPKCE(t *testing.T) {
	ctx := testContext(t)
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()

	rec, err := oauth.Login(ctx, oauth.Options{Workspace: ws, Server: "notes", URL: rs.url, Store: store, Open: browser(t)}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	as.mu.Lock()
	registered, qs, exchanges := as.registered, as.authorizeQs, as.exchanges
	as.mu.Unlock()
	if len(registered) != 1 || rec.ClientID != registered[0] {
		t.Errorf("registered %v, record's client %q: want one dynamic registration, used", registered, rec.ClientID)
	}
	if len(qs) != 1 || qs[0].Get("code_challenge_method") != "S256" || qs[0].Get("resource") != rs.url {
		t.Fatalf("authorization requests %v: want one, with an S256 challenge and resource %s", qs, rs.url)
	}
	if len(exchanges) != 1 || exchanges[0].Get("code_verifier") == "" || exchanges[0].Get("resource") != rs.url {
		t.Fatalf("code exchanges %v: want one with the verifier and the resource", exchanges)
	}
	if !strings.HasPrefix(qs[0].Get("redirect_uri"), "http://127.0.0.1:") {
		t.Errorf("redirect URI %q is not on the loopback address", qs[0].Get("redirect_uri"))
	}

	// The stored record serves a later run, with no flow at all.
	files, _ := filepath.Glob(filepath.Join(store.Dir(), "*.json"))
	if len(files) != 1 {
		t.Fatalf("store holds %v, want one record", files)
	}
	fi, _ := os.Stat(files[0])
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode().Perm())
	}
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, rs, h); err != nil {
		t.Fatalf("call with the stored token: %v", err)
	}
	rs.mu.Lock()
	last := rs.seen[len(rs.seen)-1]
	rs.mu.Unlock()
	if last != "Bearer "+rec.AccessToken {
		t.Errorf("server saw %q, want the stored token", last)
	}
	as.mu.Lock()
	if len(as.authorizeQs) != 1 {
		t.Errorf("the stored token's use ran the flow again (%d authorizations)", len(as.authorizeQs))
	}
	as.mu.Unlock()

	// Another workspace, or another URL, does not get the token.
	for _, other := range []oauth.Options{
		{Workspace: t.TempDir(), Server: "notes", URL: rs.url, Store: store},
		{Workspace: ws, Server: "notes", URL: rs.srv.URL + "/other", Store: store},
	} {
		h, err := oauth.NewHandler(other)
		if err != nil {
			t.Fatal(err)
		}
		if h.Record() != nil {
			t.Errorf("%s at %s got the token of notes at %s", other.Workspace, other.URL, rs.url)
		}
	}
}

func TestExpiredTokenIsRefreshedWithTheResource(t *testing.T) {
	ctx := testContext(t)
	as := newAuthServer(t)
	as.ttl = 5 // under the handler's margin: expired as soon as it is issued
	rs := newResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	rec, err := oauth.Login(ctx, oauth.Options{Workspace: ws, Server: "notes", URL: rs.url, Store: store, Open: browser(t)}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	as.mu.Lock()
	before := len(as.refreshes)
	as.mu.Unlock()
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, rs, h); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	as.mu.Lock()
	refreshes := as.refreshes[before:]
	as.mu.Unlock()
	if len(refreshes) == 0 {
		t.Fatal("the expired token was not refreshed")
	}
	f := refreshes[0]
	if f.Get("refresh_token") != rec.RefreshToken || f.Get("resource") != rs.url || f.Get("client_id") != rec.ClientID {
		t.Errorf("refresh form %v: want the stored refresh token, resource %s and client %s", f, rs.url, rec.ClientID)
	}
	// The rotated refresh token is saved: the old one is spent.
	saved, err := store.Load(ws, "notes", rs.url)
	if err != nil || saved == nil {
		t.Fatalf("Load: %v, %v", saved, err)
	}
	if saved.RefreshToken == rec.RefreshToken || saved.AccessToken == rec.AccessToken {
		t.Errorf("the store still holds the spent tokens")
	}
	rs.mu.Lock()
	last := rs.seen[len(rs.seen)-1]
	rs.mu.Unlock()
	if last != "Bearer "+saved.AccessToken {
		t.Errorf("server saw %q, want the refreshed token", last)
	}
}

func TestRefusedTokenWithoutFlowSaysHowToLogIn(t *testing.T) {
	ctx := testContext(t)
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	rec := &oauth.Record{Workspace: ws, Server: "notes", Resource: rs.url, TokenURL: as.srv.URL + "/token",
		ClientID: "c", AccessToken: "revoked-access-secret", RefreshToken: "revoked-refresh-secret", Expiry: time.Now().Add(-time.Hour)}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.url, Store: store, LoginHint: "run lathe auth login notes"})
	if err != nil {
		t.Fatal(err)
	}
	err = call(ctx, rs, h)
	if !errors.Is(err, oauth.ErrLoginRequired) || !strings.Contains(err.Error(), "lathe auth login notes") {
		t.Fatalf("call with a revoked token: %v, want ErrLoginRequired naming the login command", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error shows a token: %v", err)
	}
	as.mu.Lock()
	if len(as.refreshes) != 1 {
		t.Errorf("%d refreshes, want the one that failed", len(as.refreshes))
	}
	as.mu.Unlock()
}

func TestCallbackTakesOnlyItsStateAndOnlyOnce(t *testing.T) {
	ctx := testContext(t)
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	var wrong, again int
	// Before the person's browser comes back, another local program sends
	// the listener a code of its own, with a state it guessed; after it,
	// it replays the real redirect.
	open := func(ctx context.Context, u string) error {
		au, _ := url.Parse(u)
		redirect := au.Query().Get("redirect_uri")
		resp, err := http.Get(redirect + "?code=planted&state=guessed")
		if err != nil {
			return err
		}
		resp.Body.Close()
		wrong = resp.StatusCode
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err = noRedirect.Get(u)
		if err != nil {
			return err
		}
		resp.Body.Close()
		back := resp.Header.Get("Location")
		for _, status := range []*int{nil, &again} {
			resp, err := http.Get(back)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if status != nil {
				*status = resp.StatusCode
			}
		}
		return nil
	}
	if _, err := oauth.Login(ctx, oauth.Options{Workspace: t.TempDir(), Server: "notes", URL: rs.url, Open: open}, nil); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if wrong != http.StatusBadRequest {
		t.Errorf("a callback with a wrong state got %d, want 400", wrong)
	}
	if again != http.StatusGone {
		t.Errorf("a second callback with the right state got %d, want 410", again)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	for _, f := range as.exchanges {
		if f.Get("code") == "planted" {
			t.Error("the planted code was exchanged")
		}
	}
}

func TestWrongStateAloneFailsTheFlow(t *testing.T) {
	ctx := testContext(t)
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	open := func(ctx context.Context, u string) error {
		au, _ := url.Parse(u)
		resp, err := http.Get(au.Query().Get("redirect_uri") + "?code=planted&state=guessed")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	_, err := oauth.Login(ctx, oauth.Options{Workspace: t.TempDir(), Server: "notes", URL: rs.url, Open: open, CallbackTimeout: 300 * time.Millisecond}, nil)
	if err == nil || !strings.Contains(err.Error(), "no authorization came back") {
		t.Fatalf("Login with only a wrong-state callback: %v, want a timeout", err)
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if len(as.exchanges) != 0 {
		t.Errorf("%d code exchanges after a wrong state, want none", len(as.exchanges))
	}
}

func TestRecordPrintsNoSecret(t *testing.T) {
	r := &oauth.Record{Server: "notes", Resource: "https://x/mcp", AccessToken: "AT-secret", RefreshToken: "RT-secret", ClientSecret: "CS-secret"}
	for _, s := range []string{fmt.Sprint(r), fmt.Sprintf("%v %+v %#v %s", r, r, r, r)} {
		if strings.Contains(s, "secret") {
			t.Errorf("printed record shows a secret: %s", s)
		}
	}
}
