package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/oauthtest"
	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call connects to the resource server with the handler and calls its tool.
func call(ctx context.Context, rs *oauthtest.ResourceServer, h auth.OAuthHandler) error {
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: rs.URL, OAuthHandler: h, MaxRetries: -1}, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami"})
	return err
}

func TestLoginDiscoversRegistersAndExchangesWithPKCE(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()

	rec, err := oauth.Login(ctx, oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store, Open: oauthtest.Browser()}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	as.Mu.Lock()
	registered, qs, exchanges := as.Registered, as.AuthorizeQs, as.Exchanges
	as.Mu.Unlock()
	if len(registered) != 1 || rec.ClientID != registered[0] {
		t.Errorf("registered %v, record's client %q: want one dynamic registration, used", registered, rec.ClientID)
	}
	if len(qs) != 1 || qs[0].Get("code_challenge_method") != "S256" || qs[0].Get("resource") != rs.URL {
		t.Fatalf("authorization requests %v: want one, with an S256 challenge and resource %s", qs, rs.URL)
	}
	if len(exchanges) != 1 || exchanges[0].Get("code_verifier") == "" || exchanges[0].Get("resource") != rs.URL {
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
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, rs, h); err != nil {
		t.Fatalf("call with the stored token: %v", err)
	}
	rs.Mu.Lock()
	last := rs.Seen[len(rs.Seen)-1]
	rs.Mu.Unlock()
	if last != "Bearer "+rec.AccessToken {
		t.Errorf("server saw %q, want the stored token", last)
	}
	as.Mu.Lock()
	if len(as.AuthorizeQs) != 1 {
		t.Errorf("the stored token's use ran the flow again (%d authorizations)", len(as.AuthorizeQs))
	}
	as.Mu.Unlock()

	// Another workspace, or another URL, does not get the token.
	for _, other := range []oauth.Options{
		{Workspace: t.TempDir(), Server: "notes", URL: rs.URL, Store: store},
		{Workspace: ws, Server: "notes", URL: rs.Srv.URL + "/other", Store: store},
	} {
		h, err := oauth.NewHandler(other)
		if err != nil {
			t.Fatal(err)
		}
		if h.Record() != nil {
			t.Errorf("%s at %s got the token of notes at %s", other.Workspace, other.URL, rs.URL)
		}
	}
}

func TestExpiredTokenIsRefreshedWithTheResource(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	as.TTL = 5 // under the handler's margin: expired as soon as it is issued
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	rec, err := oauth.Login(ctx, oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store, Open: oauthtest.Browser()}, nil)
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	as.Mu.Lock()
	before := len(as.Refreshes)
	as.Mu.Unlock()
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := call(ctx, rs, h); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	as.Mu.Lock()
	refreshes := as.Refreshes[before:]
	as.Mu.Unlock()
	if len(refreshes) == 0 {
		t.Fatal("the expired token was not refreshed")
	}
	f := refreshes[0]
	if f.Get("refresh_token") != rec.RefreshToken || f.Get("resource") != rs.URL || f.Get("client_id") != rec.ClientID {
		t.Errorf("refresh form %v: want the stored refresh token, resource %s and client %s", f, rs.URL, rec.ClientID)
	}
	// The rotated refresh token is saved: the old one is spent.
	saved, err := store.Load(ws, "notes", rs.URL)
	if err != nil || saved == nil {
		t.Fatalf("Load: %v, %v", saved, err)
	}
	if saved.RefreshToken == rec.RefreshToken || saved.AccessToken == rec.AccessToken {
		t.Errorf("the store still holds the spent tokens")
	}
	rs.Mu.Lock()
	last := rs.Seen[len(rs.Seen)-1]
	rs.Mu.Unlock()
	if last != "Bearer "+saved.AccessToken {
		t.Errorf("server saw %q, want the refreshed token", last)
	}
}

func TestRefusedTokenWithoutFlowSaysHowToLogIn(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	rec := &oauth.Record{Workspace: ws, Server: "notes", Resource: rs.URL, TokenURL: as.Srv.URL + "/token",
		ClientID: "c", AccessToken: "revoked-access-secret", RefreshToken: "revoked-refresh-secret", Expiry: time.Now().Add(-time.Hour)}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store, LoginHint: "run lathe auth login notes"})
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
	as.Mu.Lock()
	if len(as.Refreshes) != 1 {
		t.Errorf("%d refreshes, want the one that failed", len(as.Refreshes))
	}
	as.Mu.Unlock()
}

func TestCallbackTakesOnlyItsStateAndOnlyOnce(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
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
	if _, err := oauth.Login(ctx, oauth.Options{Workspace: t.TempDir(), Server: "notes", URL: rs.URL, Open: open}, nil); err != nil {
		t.Fatalf("Login: %v", err)
	}
	if wrong != http.StatusBadRequest {
		t.Errorf("a callback with a wrong state got %d, want 400", wrong)
	}
	if again != http.StatusGone {
		t.Errorf("a second callback with the right state got %d, want 410", again)
	}
	as.Mu.Lock()
	defer as.Mu.Unlock()
	for _, f := range as.Exchanges {
		if f.Get("code") == "planted" {
			t.Error("the planted code was exchanged")
		}
	}
}

func TestWrongStateAloneFailsTheFlow(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	open := func(ctx context.Context, u string) error {
		au, _ := url.Parse(u)
		resp, err := http.Get(au.Query().Get("redirect_uri") + "?code=planted&state=guessed")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	_, err := oauth.Login(ctx, oauth.Options{Workspace: t.TempDir(), Server: "notes", URL: rs.URL, Open: open, CallbackTimeout: 300 * time.Millisecond}, nil)
	if err == nil || !strings.Contains(err.Error(), "no authorization came back") {
		t.Fatalf("Login with only a wrong-state callback: %v, want a timeout", err)
	}
	as.Mu.Lock()
	defer as.Mu.Unlock()
	if len(as.Exchanges) != 0 {
		t.Errorf("%d code exchanges after a wrong state, want none", len(as.Exchanges))
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

// A plain 403 is the server's refusal of the request, not a question of
// authorization: it is reported as it is, not as a need to log in.
func TestForbiddenIsNotALoginMatter(t *testing.T) {
	ctx := testContext(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not for you", http.StatusForbidden)
	}))
	defer srv.Close()
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	if err := store.Save(&oauth.Record{Workspace: ws, Server: "notes", Resource: srv.URL + "/mcp", AccessToken: "at"}); err != nil {
		t.Fatal(err)
	}
	h, err := oauth.NewHandler(oauth.Options{Workspace: ws, Server: "notes", URL: srv.URL + "/mcp", Store: store, LoginHint: "run lathe auth login notes"})
	if err != nil {
		t.Fatal(err)
	}
	err = call(ctx, &oauthtest.ResourceServer{URL: srv.URL + "/mcp"}, h)
	if err == nil || errors.Is(err, oauth.ErrLoginRequired) {
		t.Errorf("call answered 403: %v, want an error that is not ErrLoginRequired", err)
	}
}

// A token endpoint that echoes what it was sent in its error does not get
// the refresh token into lathe's messages.
func TestRefreshErrorCarriesNoSecret(t *testing.T) {
	var form url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form = r.PostForm
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":"server_error","error_description":"cannot use %s","echo":%q}`, r.PostForm.Get("refresh_token"), r.PostForm.Encode())
	}))
	defer srv.Close()
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	rec := &oauth.Record{Workspace: "/ws", Server: "notes", Resource: "https://notes.example/mcp", TokenURL: srv.URL,
		ClientID: "c", ClientSecret: "CS-secret-value", AccessToken: "AT-secret-value", RefreshToken: "RT-secret-value", Expiry: time.Now().Add(-time.Minute)}
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	h, err := oauth.NewHandler(oauth.Options{Workspace: "/ws", Server: "notes", URL: rec.Resource, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := h.TokenSource(context.Background())
	_, err = ts.Token()
	if err == nil {
		t.Fatal("a refused refresh gave a token")
	}
	if form.Get("refresh_token") != "RT-secret-value" {
		t.Fatalf("the endpoint got %v, not the refresh", form)
	}
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "server_error") {
		t.Errorf("refresh error %q: want the error code, no secret", err)
	}
}

// Two lathe processes of one workspace share the store: the one that
// refreshes second takes the first one's token instead of spending a
// refresh token the server has already rotated.
func TestRefreshedTokenIsSharedThroughTheStore(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	ws := t.TempDir()
	opts := oauth.Options{Workspace: ws, Server: "notes", URL: rs.URL, Store: store}
	lopts := opts
	lopts.Open = oauthtest.Browser()
	if _, err := oauth.Login(ctx, lopts, nil); err != nil {
		t.Fatalf("Login: %v", err)
	}
	// Both processes load the token, which then expires.
	rec, _ := store.Load(ws, "notes", rs.URL)
	rec.Expiry = time.Now().Add(-time.Minute)
	if err := store.Save(rec); err != nil {
		t.Fatal(err)
	}
	first, _ := oauth.NewHandler(opts)
	second, _ := oauth.NewHandler(opts)
	ts1, _ := first.TokenSource(ctx)
	t1, err := ts1.Token()
	if err != nil {
		t.Fatalf("first refresh: %v", err)
	}
	ts2, _ := second.TokenSource(ctx)
	t2, err := ts2.Token()
	if err != nil {
		t.Fatalf("second process: %v", err)
	}
	if t2.AccessToken != t1.AccessToken {
		t.Errorf("second process got %q, want the first one's refreshed token", t2.AccessToken)
	}
	as.Mu.Lock()
	defer as.Mu.Unlock()
	if len(as.Refreshes) != 1 {
		t.Errorf("%d refreshes, want 1", len(as.Refreshes))
	}
}
