// Package oauth authorizes lathe at remote MCP servers that ask for the MCP
// authorization flow (OAuth 2.1), and keeps the tokens it is granted.
//
// A [Handler] is what an MCP client transport asks for a token before each
// request and calls when the server answers 401 or 403. With a stored
// [Record] it offers the record's access token, refreshes it when it
// expires (with the refresh token, the resource indicator of RFC 8707 and
// the client's credentials) and saves what it gets back. When there is no
// token, or the server refuses it, the handler runs the whole flow, if it
// may (Options.Open is set): the server's protected-resource metadata
// (RFC 9728, from the challenge's resource_metadata or the well-known
// URLs), the authorization server's metadata (RFC 8414 or OpenID
// discovery), a client registered dynamically (RFC 7591) where the server
// offers it or the configured client_id, and the authorization code grant
// with PKCE (S256) whose code comes back to a loopback listener. The
// discovery, registration and code exchange are the MCP go-sdk's
// (package auth); this package adds the loopback redirect, the store and
// the refresh.
//
//	store := oauth.OpenStore(dir)
//	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: u, Store: store})
//	// pass h as the OAuth handler of the server's transport (mcp.Config.OAuth)
//
// [Login] runs the flow once, as lathe auth login does.
//
// What it guards against: a token is only ever offered to the origin of the
// server it was granted for (the transport refuses redirects elsewhere; see
// runtime/mcp); the loopback listener answers on 127.0.0.1 only, takes one
// callback and only with the state it sent; the store is outside the
// workspace, private to the user and refuses what it did not write; and no
// error, log line or printed record carries a token.
package oauth

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// DefaultCallbackTimeout bounds the wait for the person to authorize, when
// Options.CallbackTimeout is zero.
const DefaultCallbackTimeout = 5 * time.Minute

// ErrLoginRequired is in the chain of the error a [Handler] that may not
// run the flow returns when the server wants a token it does not have.
var ErrLoginRequired = errors.New("authorization required")

// Options configure a [Handler].
type Options struct {
	// Workspace, Server and URL key the token in the store: the
	// workspace's directory, the server's name and its endpoint.
	Workspace, Server, URL string
	// Store keeps the tokens; nil keeps them only in memory.
	Store *Store
	// ClientID, with ClientSecret if the client has one, is a client
	// registered beforehand at the authorization server. Without it lathe
	// registers itself dynamically, where the server offers it.
	ClientID, ClientSecret string
	// ClientMetadataURL, if set, is an HTTPS URL of a client ID metadata
	// document, used as the client_id where the authorization server
	// supports such documents.
	ClientMetadataURL string
	// Scopes, if set, replace the scopes the server asks for.
	Scopes []string
	// Open shows the person the authorization URL (prints it, opens a
	// browser); the authorization server then sends the browser back to
	// the loopback listener. Nil means the flow may not run here: a server
	// that asks for a token the store does not hold fails with
	// [ErrLoginRequired].
	Open func(ctx context.Context, authURL string) error
	// LoginHint ends the error of a handler that may not run the flow,
	// saying how to log in ("run lathe auth login notes").
	LoginHint string
	// CallbackPort is the loopback listener's port; zero picks a free one.
	CallbackPort int
	// Warn receives what does not stop a request but should be known: a
	// refreshed token that could not be saved. Nil drops it.
	Warn func(error)
	// CallbackTimeout bounds the wait for the authorization server's
	// redirect; zero means [DefaultCallbackTimeout].
	CallbackTimeout time.Duration
	// HTTPClient makes the requests to the authorization server and for
	// metadata. Nil means one that follows no redirect to another origin:
	// the code, the verifier and the refresh token go to the endpoints the
	// metadata names, nowhere else.
	HTTPClient *http.Client
}

// Handler is an OAuth handler for an MCP client transport
// (auth.OAuthHandler of the MCP go-sdk). It is safe for concurrent use.
type Handler struct {
	opts   Options
	client *http.Client

	mu       sync.Mutex
	rec      *Record // nil: no token
	flow     *auth.AuthorizationCodeHandler
	redirect string // the loopback redirect URI of flow
	port     int
	audience string // the resource the last authorization URL named
}

var _ auth.OAuthHandler = (*Handler)(nil)

// NewHandler returns a handler for one server, with the token of the
// store if it holds one.
func NewHandler(opts Options) (*Handler, error) {
	h, err := newHandler(opts)
	if err != nil {
		return nil, err
	}
	if opts.Store != nil {
		rec, err := opts.Store.Load(opts.Workspace, opts.Server, opts.URL)
		if err != nil {
			return nil, err
		}
		h.rec = rec
	}
	return h, nil
}

func newHandler(opts Options) (*Handler, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the server URL %q is not an http(s) URL", opts.URL)
	}
	if opts.CallbackTimeout <= 0 {
		opts.CallbackTimeout = DefaultCallbackTimeout
	}
	h := &Handler{opts: opts, client: opts.HTTPClient, port: opts.CallbackPort}
	if h.client == nil {
		h.client = &http.Client{CheckRedirect: SameOrigin, Timeout: 30 * time.Second}
	}
	return h, nil
}

// SameOrigin is an http.Client CheckRedirect that follows a redirect only
// within the origin (scheme, host and port) of the first request: what a
// request carries (a token, a code, a refresh token) stays where it was
// meant to go.
func SameOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if from := via[0].URL; Origin(req.URL) != Origin(from) {
		return fmt.Errorf("refusing a redirect from %s to another origin, %s", Origin(from), Origin(req.URL))
	}
	return nil
}

// Origin is the scheme, host and port of u, the port always written.
func Origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// Record returns a copy of the handler's token record; nil when it has none.
func (h *Handler) Record() *Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		return nil
	}
	r := *h.rec
	return &r
}

// TokenSource returns the source of the handler's token, or nil when it
// has none (the request then goes without, and the server's 401 leads to
// Authorize).
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec == nil {
		return nil, nil
	}
	return source{h}, nil
}

// source is the handler's token source: the stored token while it is
// valid, then a refreshed one.
type source struct{ h *Handler }

// expiryMargin is how long before its expiry a token is refreshed, so that
// it does not expire on its way.
const expiryMargin = 30 * time.Second

func (s source) Token() (*oauth2.Token, error) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rec
	if r == nil {
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "no token"}
	}
	if fresh(r) {
		return token(r), nil
	}
	if h.opts.Store != nil {
		// Another lathe of the same workspace (a lathe serve beside a
		// lathe call) may have refreshed first: refresh tokens are often
		// good for one use, so take its token rather than spend a stale
		// refresh token.
		if cur, err := h.opts.Store.Load(r.Workspace, r.Server, r.Resource); err == nil && cur != nil && cur.AccessToken != r.AccessToken {
			h.rec, r = cur, cur
			if fresh(r) {
				return token(r), nil
			}
		}
	}
	if r.RefreshToken == "" {
		// The transport sends the request without a token; the server's
		// 401 then leads to Authorize.
		return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token expired and there is no refresh token"}
	}
	nr, err := refresh(context.Background(), h.client, r)
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
		// The refresh token is spent or revoked: asking again with it
		// would only be refused again.
		dead := *r
		dead.RefreshToken = ""
		h.rec = &dead
	}
	if err != nil {
		return nil, err
	}
	h.rec = nr
	if h.opts.Store != nil {
		if err := h.opts.Store.Save(nr); err != nil {
			// The refreshed token works for this run; the next run may
			// need to log in again, which the warning says.
			if h.opts.Warn != nil {
				h.opts.Warn(fmt.Errorf("saving the refreshed token of %s: %w", nr.Server, err))
			}
		}
	}
	return token(nr), nil
}

// fresh reports whether r's access token is good for a while yet.
func fresh(r *Record) bool {
	return r.Expiry.IsZero() || time.Now().Add(expiryMargin).Before(r.Expiry)
}

func token(r *Record) *oauth2.Token {
	t := &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken, Expiry: r.Expiry}
	if t.TokenType == "" {
		t.TokenType = "Bearer"
	}
	return t
}

// Authorize runs the authorization flow after the server answered resp to
// req (401, or 403 asking for more scope), when the handler may; otherwise
// it fails with [ErrLoginRequired].
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if h.opts.Open == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden && !insufficientScope(resp) {
			// A plain 403 is the server's answer, not a request for a
			// token: the transport tries once more and reports it.
			return nil
		}
		msg := fmt.Sprintf("the MCP server %s at %s asks for authorization (HTTP %d)", h.opts.Server, h.opts.URL, resp.StatusCode)
		h.mu.Lock()
		if h.rec != nil {
			msg += " and refuses the stored token"
		}
		h.mu.Unlock()
		if h.opts.LoginHint != "" {
			msg += ": " + h.opts.LoginHint
		}
		return fmt.Errorf("%w: %s", ErrLoginRequired, msg)
	}
	flow, err := h.flowHandler()
	if err != nil {
		resp.Body.Close()
		return err
	}
	if err := flow.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("authorizing at the MCP server %s: %w", h.opts.Server, clean(err))
	}
	return nil
}

// insufficientScope reports whether a 403 asks for more scope (step-up
// authorization), which a new login can give.
func insufficientScope(resp *http.Response) bool {
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		return false
	}
	for _, c := range cs {
		if strings.EqualFold(c.Scheme, "bearer") && c.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// flowHandler returns the go-sdk handler that runs the flow, made at the
// first authorization with a redirect URI on the loopback listener's port.
func (h *Handler) flowHandler() (*auth.AuthorizationCodeHandler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.flow != nil {
		return h.flow, nil
	}
	if h.port == 0 {
		// Find a free port now: the redirect URI is registered with the
		// authorization server before the listener takes the code.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("loopback listener: %w", err)
		}
		h.port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	h.redirect = "http://127.0.0.1:" + strconv.Itoa(h.port) + "/callback"
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              h.redirect,
		AuthorizationCodeFetcher: h.fetch,
		Client:                   h.client,
		RequestRefreshToken:      true,
		NewTokenSource:           h.granted,
	}
	if h.opts.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: h.opts.ClientMetadataURL}
	}
	if h.opts.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: h.opts.ClientID}
		if h.opts.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.opts.ClientSecret}
		}
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:            []string{h.redirect},
				ClientName:              "lathe",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
				ResponseTypes:           []string{"code"},
				TokenEndpointAuthMethod: "none",
			},
		}
	}
	if len(h.opts.Scopes) > 0 {
		scopes := h.opts.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	flow, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, err
	}
	h.flow = flow
	return flow, nil
}

// granted keeps the token the flow was granted, with what refreshing it
// takes, and hands the flow the handler's own source.
func (h *Handler) granted(_ context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
	h.mu.Lock()
	r := &Record{
		Workspace:      h.opts.Workspace,
		Server:         h.opts.Server,
		Resource:       h.opts.URL,
		Audience:       h.audience,
		TokenURL:       cfg.Endpoint.TokenURL,
		ClientID:       cfg.ClientID,
		ClientSecret:   cfg.ClientSecret,
		SecretInHeader: cfg.ClientSecret != "" && cfg.Endpoint.AuthStyle != oauth2.AuthStyleInParams,
		AccessToken:    t.AccessToken,
		TokenType:      t.TokenType,
		RefreshToken:   t.RefreshToken,
		Expiry:         t.Expiry,
	}
	if s, ok := t.Extra("scope").(string); ok {
		r.Scope = s
	}
	h.rec = r
	h.mu.Unlock()
	if h.opts.Store != nil {
		if err := h.opts.Store.Save(r); err != nil {
			return nil, fmt.Errorf("saving the token: %w", err)
		}
	}
	return source{h}, nil
}

// fetch shows the person the authorization URL and waits for the one
// redirect to the loopback listener that carries the URL's state.
func (h *Handler) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("bad authorization URL: %v", err)
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, errors.New("the authorization URL carries no state")
	}
	h.mu.Lock()
	h.audience = u.Query().Get("resource")
	port := h.port
	h.mu.Unlock()
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, fmt.Errorf("loopback listener for the authorization's redirect: %w", err)
	}
	cb := newCallback(state)
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, h.opts.CallbackTimeout)
	defer cancel()
	if err := h.opts.Open(ctx, args.URL); err != nil {
		return nil, err
	}
	select {
	case r := <-cb.done:
		return r.res, r.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("no authorization came back within %s", h.opts.CallbackTimeout)
		}
		return nil, ctx.Err()
	}
}

// callback is the loopback listener's handler: it takes one GET of
// /callback with the expected state, and refuses everything else.
type callback struct {
	state string
	mu    sync.Mutex
	taken bool
	done  chan callbackResult
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

func newCallback(state string) *callback {
	return &callback{state: state, done: make(chan callbackResult, 1)}
}

func (c *callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(c.state)) != 1 {
		http.Error(w, "lathe: this is not the authorization lathe is waiting for (the state does not match)", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	taken := c.taken
	c.taken = true
	c.mu.Unlock()
	if taken {
		http.Error(w, "lathe: this authorization was already received", http.StatusGone)
		return
	}
	var res callbackResult
	switch {
	case q.Get("error") != "":
		res.err = fmt.Errorf("the authorization server refused: %s", describe(q.Get("error"), q.Get("error_description")))
		http.Error(w, "lathe: authorization refused: "+q.Get("error"), http.StatusOK)
	case q.Get("code") == "":
		res.err = errors.New("the authorization server's redirect carries no code")
		http.Error(w, "lathe: no code in the redirect", http.StatusBadRequest)
	default:
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "lathe: authorization received; you may close this page.\n")
	}
	c.done <- res
}

// describe joins an OAuth error code and its description, each cut short:
// they come from the server and end up in messages.
func describe(code, desc string) string {
	s := short(code)
	if desc != "" {
		s += " (" + short(desc) + ")"
	}
	return s
}

func short(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// clean drops the body of a token endpoint's error response from err: the
// body is the server's, and may echo what lathe sent it.
func clean(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		code := re.ErrorCode
		if code == "" {
			code = "HTTP " + strconv.Itoa(re.Response.StatusCode)
		}
		return fmt.Errorf("the token endpoint refused: %s", describe(code, re.ErrorDescription))
	}
	return err
}

// headerTransport adds headers to the requests to the origin of url.
type headerTransport struct {
	headers map[string]string
	url     string
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if u, err := url.Parse(t.url); err == nil && Origin(u) == Origin(req.URL) && len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

// refresh asks the token endpoint for a new token with r's refresh token
// (RFC 6749, section 6), naming the resource (RFC 8707). x/oauth2's own
// refresh sends no resource indicator, and its errors carry the response
// body; this one's never do.
func refresh(ctx context.Context, c *http.Client, r *Record) (*Record, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {r.RefreshToken}}
	if r.Audience != "" {
		form.Set("resource", r.Audience)
	}
	if r.Scope != "" {
		form.Set("scope", r.Scope)
	}
	if !r.SecretInHeader {
		form.Set("client_id", r.ClientID)
		if r.ClientSecret != "" {
			form.Set("client_secret", r.ClientSecret)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("refreshing the token of %s: bad token endpoint: %v", r.Server, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if r.SecretInHeader {
		req.SetBasicAuth(url.QueryEscape(r.ClientID), url.QueryEscape(r.ClientSecret))
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("refreshing the token of %s: %v", r.Server, scrub(err, r))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("refreshing the token of %s: %v", r.Server, scrub(err, r))
	}
	var tr struct {
		AccessToken      string          `json:"access_token"`
		TokenType        string          `json:"token_type"`
		RefreshToken     string          `json:"refresh_token"`
		ExpiresIn        json.RawMessage `json:"expires_in"`
		Scope            string          `json:"scope"`
		Error            string          `json:"error"`
		ErrorDescription string          `json:"error_description"`
	}
	jsonErr := json.Unmarshal(body, &tr)
	if resp.StatusCode != http.StatusOK || tr.Error != "" {
		code := tr.Error
		if code == "" {
			code = "HTTP " + strconv.Itoa(resp.StatusCode)
		}
		return nil, &oauth2.RetrieveError{ErrorCode: short(scrubString(code, r)), ErrorDescription: short(scrubString(tr.ErrorDescription, r))}
	}
	if jsonErr != nil || tr.AccessToken == "" {
		return nil, fmt.Errorf("refreshing the token of %s: the token endpoint's answer holds no access token", r.Server)
	}
	nr := *r
	nr.AccessToken, nr.TokenType = tr.AccessToken, tr.TokenType
	if tr.RefreshToken != "" {
		nr.RefreshToken = tr.RefreshToken
	}
	if tr.Scope != "" {
		nr.Scope = tr.Scope
	}
	nr.Expiry = time.Time{}
	if s := strings.Trim(string(tr.ExpiresIn), `"`); s != "" && s != "null" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			nr.Expiry = time.Now().Add(time.Duration(n) * time.Second)
		}
	}
	return &nr, nil
}

// scrub and scrubString remove r's secrets from what goes into an error.
func scrub(err error, r *Record) string { return scrubString(err.Error(), r) }

func scrubString(s string, r *Record) string {
	for _, secret := range []string{r.AccessToken, r.RefreshToken, r.ClientSecret} {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
			s = strings.ReplaceAll(s, url.QueryEscape(secret), "[redacted]")
		}
	}
	return s
}

// Login runs the authorization flow for the server once, whatever the
// store holds, and saves the token: it connects to the server as an MCP
// client, whose first request the server answers with 401, and Authorize
// does the rest. opts.Open must be set. A server that does not ask for
// authorization is an error saying so, and nothing is saved.
//
// headers are the server's configured headers, sent to its origin only.
func Login(ctx context.Context, opts Options, headers map[string]string) (*Record, error) {
	if opts.Open == nil {
		return nil, errors.New("logging in needs a way to show the authorization URL")
	}
	h, err := newHandler(opts)
	if err != nil {
		return nil, err
	}
	httpClient := &http.Client{CheckRedirect: SameOrigin, Transport: headerTransport{headers, opts.URL}}
	client := sdk.NewClient(&sdk.Implementation{Name: "lathe", Version: "auth"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint:     opts.URL,
		HTTPClient:   httpClient,
		OAuthHandler: h,
		MaxRetries:   -1,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to the MCP server %s at %s: %w", opts.Server, opts.URL, clean(err))
	}
	cs.Close()
	rec := h.Record()
	if rec == nil {
		return nil, fmt.Errorf("the MCP server %s at %s did not ask for authorization: there is nothing to log in to", opts.Server, opts.URL)
	}
	return rec, nil
}
