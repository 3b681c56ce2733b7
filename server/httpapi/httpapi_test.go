package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/server/httpapi"
	"github.com/lathe-tools/lathe/tool"
)

const token = "s3cret-token"

// fixture is a real engine with a policy whose fallback is the API's
// queue, a real SQLite audit log, and the API mounted beside MCP as lathe
// serve mounts it.
type fixture struct {
	srv   *httptest.Server
	queue *approvals.Queue
	store *audit.Store
	wiped atomic.Int32 // runs of the destructive tool "wipe"
	echos atomic.Int32 // runs of the read-only tool "echo"
	e     *lathe.Engine
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{queue: approvals.New(approvals.Options{Wait: 20 * time.Second})}
	store, err := audit.Open(filepath.Join(t.TempDir(), "lathe.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.store = store
	red, err := audit.NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls, err := httpapi.NewCalls(0, red)
	if err != nil {
		t.Fatal(err)
	}
	e := lathe.New(lathe.Options{
		Outer: []lathe.Middleware{audit.Middleware(store, red)},
		Middleware: []lathe.Middleware{calls.Middleware(),
			policy.Middleware(&policy.Policy{}, policy.Options{Fallback: f.queue})}})
	wipe := builtin.Must(builtin.Func(tool.Definition{Name: "wipe", Description: "Wipe a path. It cannot be undone.",
		Annotations: tool.Annotations{DestructiveHint: tool.Bool(true)}},
		func(_ context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			f.wiped.Add(1)
			return "wiped " + in.Path, nil
		}))
	wipe.Timeout = 20 * time.Second
	echo := builtin.Must(builtin.Func(tool.Definition{Name: "echo", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in struct {
			Text  string `json:"text"`
			Steps int    `json:"steps,omitempty"`
		}) (string, error) {
			f.echos.Add(1)
			for i := range in.Steps {
				tool.ReportProgress(ctx, tool.Progress{Progress: float64(i + 1), Total: float64(in.Steps)})
			}
			return in.Text, nil
		}))
	// watched says whether anybody follows its progress.
	watched := builtin.Must(builtin.Func(tool.Definition{Name: "watched", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ struct{}) (string, error) {
			return fmt.Sprint(tool.HooksFrom(ctx).Progress != nil), nil
		}))
	if err := e.Register(wipe, echo, watched); err != nil {
		t.Fatal(err)
	}
	f.e = e
	api, err := httpapi.New(httpapi.Options{Engine: e, Token: token, Approvals: f.queue, Redactor: red, Calls: calls,
		Audit: func() (*audit.Store, error) { return store, nil }, LoginDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(e, server.Options{Name: "lathe"})
	f.srv = httptest.NewServer(s.Handler(server.HTTPOptions{Token: token, Mounts: map[string]http.Handler{"/api/": api}}))
	t.Cleanup(func() {
		f.srv.Close()
		api.Close()
		s.Close()
		e.Close()
		store.Close()
	})
	return f
}

// client is one client of the API: a cookie jar and its CSRF value, or a
// bearer token.
type client struct {
	t      *testing.T
	f      *fixture
	hc     *http.Client
	bearer string
	csrf   string
}

func (f *fixture) bearerClient(t *testing.T) *client {
	return &client{t: t, f: f, hc: &http.Client{Timeout: 30 * time.Second}, bearer: token}
}

// login logs a new client in with the cookie.
func (f *fixture) login(t *testing.T) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{t: t, f: f, hc: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	var out struct{ CSRF string }
	if st := c.do("POST", "/api/login", map[string]string{"token": token}, &out); st != 200 || out.CSRF == "" {
		t.Fatalf("login: status %d, csrf %q", st, out.CSRF)
	}
	c.csrf = out.CSRF
	return c
}

// request sends a request with the client's credentials; header adds or
// (with "") removes headers.
func (c *client) request(method, path string, body any, header map[string]string) *http.Response {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, c.f.srv.URL+path, r)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	if c.csrf != "" {
		req.Header.Set(httpapi.CSRFHeader, c.csrf)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func (c *client) do(method, path string, body, out any) int {
	c.t.Helper()
	resp := c.request(method, path, body, nil)
	defer resp.Body.Close()
	if out != nil {
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode
}

// startWipe calls wipe in the background and returns its pending approval
// and the channel of the call's answer.
func (c *client) startWipe(path string) (httpapi.Approval, <-chan httpapi.Call) {
	c.t.Helper()
	before := map[string]bool{}
	for _, p := range c.f.queue.Pending() {
		before[p.ID] = true
	}
	done := make(chan httpapi.Call, 1)
	go func() {
		var out struct{ Call httpapi.Call }
		resp := c.request("POST", "/api/calls", map[string]any{"tool": "wipe", "arguments": map[string]string{"path": path}}, nil)
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&out)
		done <- out.Call
	}()
	deadline := time.After(10 * time.Second)
	for {
		var list struct{ Approvals []httpapi.Approval }
		c.do("GET", "/api/approvals", nil, &list)
		for _, a := range list.Approvals {
			if !before[a.ID] {
				return a, done
			}
		}
		select {
		case <-deadline:
			c.t.Fatal("the call of wipe did not wait for an approval within 10s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func waitCall(t *testing.T, done <-chan httpapi.Call) httpapi.Call {
	t.Helper()
	select {
	case c := <-done:
		return c
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not end within 15s")
		return httpapi.Call{}
	}
}

// TestUnauthenticatedRequestsAreRefused: no credentials, a wrong token, a
// forged cookie: 401, and nothing runs; the right token works.
func TestUnauthenticatedRequestsAreRefused(t *testing.T) {
	f := newFixture(t)
	call := map[string]any{"tool": "echo", "arguments": map[string]string{"text": "hi"}}
	for name, c := range map[string]*client{
		"no auth":      {t: t, f: f, hc: http.DefaultClient},
		"wrong token":  {t: t, f: f, hc: http.DefaultClient, bearer: token + "x"},
		"short token":  {t: t, f: f, hc: http.DefaultClient, bearer: "s"},
		"empty bearer": {t: t, f: f, hc: http.DefaultClient, bearer: " "},
	} {
		for _, r := range []struct{ method, path string }{{"GET", "/api/tools"}, {"POST", "/api/calls"}, {"GET", "/api/events"},
			{"GET", "/api/audit"}, {"GET", "/api/approvals"}, {"GET", "/api/openapi.json"}} {
			var body any
			if r.method == "POST" {
				body = call
			}
			resp := c.request(r.method, r.path, body, nil)
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Errorf("%s: %s %s: status %d, want 401", name, r.method, r.path, resp.StatusCode)
			}
		}
	}
	forged := &client{t: t, f: f, hc: http.DefaultClient}
	resp := forged.request("POST", "/api/calls", call, map[string]string{"Cookie": httpapi.CookieName + "=" + strings.Repeat("ab", 32),
		httpapi.CSRFHeader: "x"})
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("forged cookie: status %d, want 401", resp.StatusCode)
	}
	if n := f.echos.Load(); n != 0 {
		t.Fatalf("echo ran %d times for unauthenticated requests", n)
	}
	if st := f.bearerClient(t).do("POST", "/api/calls", call, nil); st != 200 || f.echos.Load() != 1 {
		t.Errorf("with the token: status %d, echo ran %d times; want 200 and 1", st, f.echos.Load())
	}
}

// TestWrongLoginIsSlowed: a wrong token at login is answered 401 after
// the delay, and sets no cookie; the right one sets an HttpOnly,
// SameSite=Strict cookie.
func TestWrongLoginIsSlowed(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	c.bearer = ""
	start := time.Now()
	resp := c.request("POST", "/api/login", map[string]string{"token": "guess"}, nil)
	resp.Body.Close()
	if resp.StatusCode != 401 || len(resp.Cookies()) != 0 {
		t.Errorf("wrong login: status %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("a wrong login was answered after %s, before the delay of 50ms", d)
	}
	resp = c.request("POST", "/api/login", map[string]string{"token": token}, nil)
	resp.Body.Close()
	var ck *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == httpapi.CookieName {
			ck = k
		}
	}
	if resp.StatusCode != 200 || ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
		t.Errorf("login: status %d, cookie %+v", resp.StatusCode, ck)
	}
}

// TestCookieWithoutCSRFIsRefused: a request that rides on the cookie (as
// a page of another site would make the browser send it) but lacks the
// CSRF header, or has a wrong one, is refused and runs nothing; GETs need
// none.
// TestStolenCookieIsUseless: browsers send a host's cookies to every port
// of it, so a web server another local user runs on localhost receives the
// page's session cookie when the operator's browser visits it. The cookie
// alone must then be worth nothing: every request with it, reads included,
// needs the session's CSRF value, which the login gave only to the page
// (kept in its origin's sessionStorage, which other ports cannot read),
// and GET /api/session does not hand the value to a cookie alone.
func TestStolenCookieIsUseless(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	csrf := c.csrf
	c.csrf = "" // the thief has the cookie only
	for _, path := range []string{"/api/tools", "/api/calls", "/api/approvals", "/api/audit", "/api/grants", "/api/events"} {
		resp := c.request("GET", path, nil, nil)
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("GET %s with the cookie alone: status %d, want 403: %s", path, resp.StatusCode, b)
		}
	}
	resp := c.request("GET", "/api/session", nil, nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == 200 || strings.Contains(string(b), csrf) {
		t.Errorf("GET /api/session with the cookie alone: status %d, body %s", resp.StatusCode, b)
	}
	// The page itself: the value in the header, or, for the event stream,
	// which EventSource opens without headers, in the query.
	c.csrf = csrf
	if st := c.do("GET", "/api/tools", nil, nil); st != 200 {
		t.Errorf("GET /api/tools with the CSRF header: status %d", st)
	}
	c.csrf = ""
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/api/events?csrf="+csrf, nil)
	ev, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ev.Body.Close()
	if ev.StatusCode != 200 {
		t.Errorf("GET /api/events?csrf=…: status %d", ev.StatusCode)
	}
}

func TestCookieWithoutCSRFIsRefused(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	call := map[string]any{"tool": "echo", "arguments": map[string]string{"text": "hi"}}
	for _, csrf := range []string{"", "wrong", c.csrf + "x"} {
		resp := c.request("POST", "/api/calls", call, map[string]string{httpapi.CSRFHeader: csrf})
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("CSRF header %q: status %d, want 403", csrf, resp.StatusCode)
		}
	}
	if f.echos.Load() != 0 {
		t.Fatal("a call without the CSRF value ran")
	}
	var tools struct{ Tools []httpapi.Tool }
	if st := c.do("GET", "/api/tools", nil, &tools); st != 200 || len(tools.Tools) != 3 {
		t.Errorf("GET with the cookie: status %d, %d tools", st, len(tools.Tools))
	}
	if st := c.do("POST", "/api/calls", call, nil); st != 200 || f.echos.Load() != 1 {
		t.Errorf("with the CSRF header: status %d, ran %d", st, f.echos.Load())
	}
	var s struct{ CSRF string }
	if st := c.do("GET", "/api/session", nil, &s); st != 200 || s.CSRF != c.csrf {
		t.Errorf("GET /api/session: %d %q, want the login's csrf", st, s.CSRF)
	}
	// After logout the cookie is worth nothing.
	if st := c.do("POST", "/api/logout", nil, nil); st != 200 {
		t.Fatalf("logout: %d", st)
	}
	resp := c.request("GET", "/api/tools", nil, map[string]string{"Cookie": ""})
	resp.Body.Close()
	if st := c.do("GET", "/api/session", nil, nil); st != 401 {
		t.Errorf("session after logout: %d, want 401", st)
	}
}

// TestCrossOriginPostIsRefused: a page of another origin that got the
// browser to send the cookie and even the CSRF value is refused at the
// mount, for a call and for an answer to an approval.
func TestCrossOriginPostIsRefused(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	evil := map[string]string{"Origin": "https://evil.example"}
	resp := c.request("POST", "/api/calls", map[string]any{"tool": "echo", "arguments": map[string]string{"text": "x"}}, evil)
	resp.Body.Close()
	if resp.StatusCode != 403 || f.echos.Load() != 0 {
		t.Errorf("cross-origin call: status %d, echo ran %d times", resp.StatusCode, f.echos.Load())
	}
	a, done := c.startWipe("/etc")
	resp = c.request("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "once", "digest": a.Digest}, evil)
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("cross-origin answer: status %d, want 403", resp.StatusCode)
	}
	if st := c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "deny", "digest": a.Digest}, nil); st != 200 {
		t.Fatalf("same-origin deny: %d", st)
	}
	if out := waitCall(t, done); out.Outcome != "denied" || f.wiped.Load() != 0 {
		t.Errorf("after a cross-origin allow and a deny: outcome %q, wiped %d", out.Outcome, f.wiped.Load())
	}
}

// TestForgedAndReplayedAnswersAreRefused: over HTTP, an answer with a
// digest that is not the call's (400), for an unknown id (404), a second
// answer (409), and an answer for a call that ended (404) are refused and
// run nothing.
func TestForgedAndReplayedAnswersAreRefused(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	a, done := c.startWipe("/home")
	if !strings.HasPrefix(a.Digest, "sha256:") || a.Tool != "wipe" || string(a.Arguments) != `{"path":"/home"}` {
		t.Fatalf("approval %+v", a)
	}
	other, _, _ := approvals.Digest(map[string]any{"path": "/tmp"})
	var e struct{ Error struct{ Kind string } }
	if st := c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "always", "digest": other}, &e); st != 400 || e.Error.Kind != "bad_digest" {
		t.Errorf("wrong digest: %d %q, want 400 bad_digest", st, e.Error.Kind)
	}
	if st := c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "once"}, nil); st != 400 {
		t.Errorf("no digest: %d, want 400", st)
	}
	if st := c.do("POST", "/api/approvals/ffffffffffffffffffffffffffffffff", map[string]string{"answer": "once", "digest": a.Digest}, nil); st != 404 {
		t.Errorf("unknown id: %d, want 404", st)
	}
	if f.wiped.Load() != 0 {
		t.Fatal("wipe ran on a forged answer")
	}
	if st := c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "once", "digest": a.Digest}, nil); st != 200 {
		t.Fatalf("true answer: %d", st)
	}
	if out := waitCall(t, done); out.Outcome != "ok" || f.wiped.Load() != 1 {
		t.Fatalf("approved call: %q, wiped %d", out.Outcome, f.wiped.Load())
	}
	if st := c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "once", "digest": a.Digest}, nil); st != 409 {
		t.Errorf("replayed answer: %d, want 409", st)
	}
	if f.wiped.Load() != 1 {
		t.Errorf("a replayed answer ran wipe again")
	}

	// A call whose client went away ends, and its approval with it.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", f.srv.URL+"/api/calls", strings.NewReader(`{"tool":"wipe","arguments":{"path":"/gone"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	var gone approvals.Pending
	for deadline := time.Now().Add(10 * time.Second); ; {
		if ps := f.queue.Pending(); len(ps) == 1 {
			gone = ps[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no approval for /gone within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	for deadline := time.Now().Add(10 * time.Second); len(f.queue.Pending()) > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the approval of a call whose client went away was still pending after 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.do("POST", "/api/approvals/"+gone.ID, map[string]string{"answer": "once", "digest": gone.Digest}, nil); st != 404 {
		t.Errorf("answer for an ended call: %d, want 404", st)
	}
	if f.wiped.Load() != 1 {
		t.Errorf("wipe ran for a call that had ended")
	}
}

// TestSessionAnswerIsPerClient: "allow for the session" answered for
// client A's call lets A's next call run unasked, never B's, nor a bearer
// client's (each of whose requests is a session of its own).
func TestSessionAnswerIsPerClient(t *testing.T) {
	f := newFixture(t)
	a, b := f.login(t), f.login(t)
	ap, done := a.startWipe("/s")
	if st := b.do("POST", "/api/approvals/"+ap.ID, map[string]string{"answer": "session", "digest": ap.Digest}, nil); st != 200 {
		t.Fatalf("answer: %d", st)
	}
	waitCall(t, done)
	var out struct{ Call httpapi.Call }
	if st := a.do("POST", "/api/calls", map[string]any{"tool": "wipe", "arguments": map[string]string{"path": "/s"}}, &out); st != 200 || out.Call.Outcome != "ok" {
		t.Fatalf("A's second call: %d %q", st, out.Call.Outcome)
	}
	if f.wiped.Load() != 2 {
		t.Fatalf("wiped %d times, want 2", f.wiped.Load())
	}
	for name, c := range map[string]*client{"B": b, "bearer": f.bearerClient(t)} {
		bp, bdone := c.startWipe("/s")
		if bp.Session == ap.Session {
			t.Errorf("%s's call has A's session %q", name, bp.Session)
		}
		if st := c.do("POST", "/api/approvals/"+bp.ID, map[string]string{"answer": "deny", "digest": bp.Digest}, nil); st != 200 {
			t.Fatalf("%s deny: %d", name, st)
		}
		waitCall(t, bdone)
	}
	if f.wiped.Load() != 2 {
		t.Errorf("another client's call ran on A's session answer")
	}
}

// readEvents reads server-sent events from r into ch until it ends.
func readEvents(r io.Reader, ch chan<- [2]string) {
	sc := bufio.NewScanner(r)
	var kind string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ch <- [2]string{kind, strings.TrimPrefix(line, "data: ")}
		}
	}
	close(ch)
}

// TestCallProgressAsEvents: a call with Accept: text/event-stream gets
// its progress, then its outcome.
func TestCallProgressAsEvents(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	resp := c.request("POST", "/api/calls", map[string]any{"tool": "echo", "arguments": map[string]any{"text": "done", "steps": 3}},
		map[string]string{"Accept": "text/event-stream"})
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	ch := make(chan [2]string, 16)
	go readEvents(resp.Body, ch)
	var kinds []string
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				if strings.Join(kinds, ",") != "progress,progress,progress,outcome" {
					t.Errorf("events %v, want three progress and one outcome", kinds)
				}
				return
			}
			kinds = append(kinds, ev[0])
			if ev[0] == "outcome" {
				var out struct{ Call httpapi.Call }
				json.Unmarshal([]byte(ev[1]), &out)
				if out.Call.Outcome != "ok" || out.Call.Result == nil || out.Call.Result.Content[0].Text != "done" {
					t.Errorf("outcome %s", ev[1])
				}
			}
		case <-timeout:
			t.Fatalf("the event stream did not end within 10s; got %v", kinds)
		}
	}
}

// TestEventStream: /api/events streams the engine's events and the
// queue's, and a pending approval shows there.
func TestEventStream(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	resp := c.request("GET", "/api/events", nil, nil)
	defer resp.Body.Close()
	ch := make(chan [2]string, 64)
	go readEvents(resp.Body, ch)
	time.Sleep(50 * time.Millisecond) // the stream is subscribed once its header came; this lets the hub register it
	a, done := c.startWipe("/ev")
	want := map[string]bool{"call_started": false, "approval_asked": false, "approval_pending": false}
	timeout := time.After(10 * time.Second)
	for !want["call_started"] || !want["approval_asked"] || !want["approval_pending"] {
		select {
		case ev := <-ch:
			if _, ok := want[ev[0]]; ok {
				want[ev[0]] = true
			}
			if ev[0] == "approval_pending" {
				var e httpapi.Event
				json.Unmarshal([]byte(ev[1]), &e)
				if e.Approval == nil || e.Approval.ID != a.ID || e.Tool != "wipe" {
					t.Errorf("approval_pending %s, want id %s", ev[1], a.ID)
				}
			}
		case <-timeout:
			t.Fatalf("events seen within 10s: %v", want)
		}
	}
	c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "once", "digest": a.Digest}, nil)
	waitCall(t, done)
	for seen := map[string]bool{}; !seen["approval_settled"] || !seen["call_finished"]; {
		select {
		case ev := <-ch:
			seen[ev[0]] = true
		case <-timeout:
			t.Fatalf("no approval_settled and call_finished within 10s: %v", seen)
		}
	}
}

// TestCallsAndAudit: the live calls list the finished call with its
// redacted arguments; the audit search finds it by tool, outcome, session
// and text, pages with the cursor, and shows one record.
func TestCallsAndAudit(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	for i := range 3 {
		if st := c.do("POST", "/api/calls", map[string]any{"id": fmt.Sprint("e", i), "tool": "echo",
			"arguments": map[string]any{"text": fmt.Sprint("needle-", i, " password=hunter2")}}, nil); st != 200 {
			t.Fatalf("call %d: %d", i, st)
		}
	}
	// The list learns the calls from the engine's events, which come on
	// another goroutine: the last call's may arrive after its answer.
	var calls struct{ Calls []httpapi.Call }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c.do("GET", "/api/calls", nil, &calls)
		if len(calls.Calls) == 3 && calls.Calls[0].State == "finished" || time.Now().After(deadline) {
			break
		}
	}
	if len(calls.Calls) != 3 || calls.Calls[0].ID != "e2" || strings.Contains(string(calls.Calls[0].Arguments), "hunter2") ||
		calls.Calls[0].Result != nil {
		t.Fatalf("calls %+v", calls.Calls)
	}
	var one struct{ Call httpapi.Call }
	if st := c.do("GET", "/api/calls/e1", nil, &one); st != 200 || one.Call.Result == nil || one.Call.Outcome != "ok" {
		t.Errorf("call e1: %d %+v", st, one.Call)
	}
	var page struct {
		Records []httpapi.AuditRecord
		Next    string
	}
	q := "/api/audit?tool=echo&outcome=ok&q=needle&limit=2&session=" + one.Call.Session
	if st := c.do("GET", q, nil, &page); st != 200 || len(page.Records) != 2 || page.Next == "" || page.Records[0].CallID != "e2" {
		t.Fatalf("audit page 1: %d %+v next %q", st, page.Records, page.Next)
	}
	if strings.Contains(string(page.Records[0].Arguments), "hunter2") {
		t.Errorf("the audit view shows a secret: %s", page.Records[0].Arguments)
	}
	c.do("GET", q+"&before="+page.Next, nil, &page)
	if len(page.Records) != 1 || page.Records[0].CallID != "e0" || page.Next != "" {
		t.Errorf("audit page 2: %+v next %q", page.Records, page.Next)
	}
	var rec struct{ Record httpapi.AuditRecord }
	if st := c.do("GET", fmt.Sprint("/api/audit/", page.Records[0].ID), nil, &rec); st != 200 || rec.Record.CallID != "e0" {
		t.Errorf("audit record: %d %+v", st, rec.Record)
	}
	for _, bad := range []string{"/api/audit?since=yesterday", "/api/audit?limit=-1", "/api/audit/x"} {
		if st := c.do("GET", bad, nil, nil); st != 400 {
			t.Errorf("%s: %d, want 400", bad, st)
		}
	}
	if st := c.do("GET", "/api/audit?tool=wipe", nil, &page); st != 200 || len(page.Records) != 0 {
		t.Errorf("audit of wipe: %d %d records", st, len(page.Records))
	}
}

// TestBatchPlanOnly: plan_only plans without running; a batch runs.
func TestBatchPlanOnly(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	body := map[string]any{"plan_only": true, "calls": []map[string]any{
		{"id": "a", "tool": "echo", "arguments": map[string]any{"text": "1"}},
		{"id": "b", "tool": "echo", "arguments": map[string]any{"text": "2"}}}}
	var out struct {
		Plan  struct{ Stages [][]string }
		Calls []httpapi.Call
	}
	if st := c.do("POST", "/api/batch", body, &out); st != 200 || len(out.Plan.Stages) != 1 || len(out.Calls) != 0 || f.echos.Load() != 0 {
		t.Fatalf("plan only: %d %+v, ran %d", st, out, f.echos.Load())
	}
	body["plan_only"] = false
	if st := c.do("POST", "/api/batch", body, &out); st != 200 || len(out.Calls) != 2 || out.Calls[1].Result.Content[0].Text != "2" {
		t.Fatalf("batch: %d %+v", st, out)
	}
	if st := c.do("POST", "/api/batch", map[string]any{"calls": []map[string]any{{"tool": ""}}}, nil); st != 400 {
		t.Errorf("batch with a call without a tool: %d, want 400", st)
	}
}

// TestToolsShowPolicy: each tool has its effects and effective policy.
func TestToolsShowPolicy(t *testing.T) {
	f := newFixture(t)
	var out struct{ Tools []httpapi.Tool }
	f.bearerClient(t).do("GET", "/api/tools", nil, &out)
	got := map[string]string{}
	for _, tl := range out.Tools {
		got[tl.Name] = fmt.Sprint(tl.Policy.Decision, " ", tl.Effects.Destructive, " ", tl.Effects.ReadOnly)
	}
	if got["wipe"] != "ask true false" || got["echo"] != "allow false true" {
		t.Errorf("tools %v", got)
	}
}

// TestApprovalShowsRedactedArguments: a secret in a waiting call's
// arguments is hidden from the page, while the digest binds the answer to
// the real arguments.
func TestApprovalShowsRedactedArguments(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	a, done := c.startWipe("/srv password=hunter2")
	if strings.Contains(string(a.Arguments), "hunter2") || strings.Contains(a.Formatted, "hunter2") {
		t.Errorf("the approval shows the secret: %s / %q", a.Arguments, a.Formatted)
	}
	if a.Formatted != "" {
		t.Errorf("formatted %q for a tool that renders nothing of its own", a.Formatted)
	}
	real, _, _ := approvals.Digest(map[string]any{"path": "/srv password=hunter2"})
	if a.Digest != real {
		t.Errorf("digest %s, want that of the real arguments %s", a.Digest, real)
	}
	c.do("POST", "/api/approvals/"+a.ID, map[string]string{"answer": "deny", "digest": a.Digest}, nil)
	waitCall(t, done)
}

// TestNoTokenStillKeepsSessionsAndCSRF: served without a token (a Unix
// socket only its owner can open), requests need no credentials, but a
// client that takes a session cookie from GET /api/session must still
// send its CSRF value with it.
func TestNoTokenStillKeepsSessionsAndCSRF(t *testing.T) {
	e := lathe.New(lathe.Options{})
	t.Cleanup(func() { e.Close() })
	var ran atomic.Int32
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "echo", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(context.Context, struct{}) (string, error) { ran.Add(1); return "ok", nil })))
	api, err := httpapi.New(httpapi.Options{Engine: e})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() { srv.Close(); api.Close() })
	f := &fixture{srv: srv}
	plain := &client{t: t, f: f, hc: http.DefaultClient}
	if st := plain.do("POST", "/api/calls", map[string]any{"tool": "echo"}, nil); st != 200 || ran.Load() != 1 {
		t.Fatalf("no token: %d, ran %d", st, ran.Load())
	}
	jar, _ := cookiejar.New(nil)
	c := &client{t: t, f: f, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
	var s struct{ CSRF string }
	if st := c.do("GET", "/api/session", nil, &s); st != 200 || s.CSRF == "" {
		t.Fatalf("session: %d %q", st, s.CSRF)
	}
	if st := c.do("POST", "/api/calls", map[string]any{"tool": "echo"}, nil); st != 403 || ran.Load() != 1 {
		t.Errorf("cookie without the CSRF value: %d, ran %d; want 403", st, ran.Load())
	}
	c.csrf = s.CSRF
	if st := c.do("POST", "/api/calls", map[string]any{"tool": "echo"}, nil); st != 200 || ran.Load() != 2 {
		t.Errorf("cookie with the CSRF value: %d, ran %d", st, ran.Load())
	}
}

// TestEventStreamsAreCapped: a client that opens stream after stream gets
// 503 past the cap, and a stream closed makes room.
func TestEventStreamsAreCapped(t *testing.T) {
	f := newFixture(t)
	c := f.bearerClient(t)
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	for i := range 64 {
		r := c.request("GET", "/api/events", nil, nil)
		if r.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, r.StatusCode)
		}
		open = append(open, r)
	}
	r := c.request("GET", "/api/events", nil, nil)
	r.Body.Close()
	if r.StatusCode != 503 {
		t.Fatalf("stream 65: %d, want 503", r.StatusCode)
	}
	open[0].Body.Close()
	open = open[1:]
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := c.request("GET", "/api/events", nil, nil)
		if r.StatusCode == 200 {
			open = append(open, r)
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("no room for a stream within 10s of closing one")
		}
	}
}

// TestBodyMustBeDeclaredJSON: a body sent as a form, as text/plain or with
// no type (what a page of another site can send without asking first) is
// refused before anything runs, even with valid credentials.
func TestBodyMustBeDeclaredJSON(t *testing.T) {
	f := newFixture(t)
	c := f.login(t)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
		req, _ := http.NewRequest("POST", f.srv.URL+"/api/calls", strings.NewReader(`{"tool":"echo","arguments":{"text":"x"}}`))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		req.Header.Set(httpapi.CSRFHeader, c.csrf)
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 415 {
			t.Errorf("Content-Type %q: %d, want 415", ct, resp.StatusCode)
		}
	}
	if f.echos.Load() != 0 {
		t.Errorf("echo ran for a body not declared JSON")
	}
}

// TestProgressFollowedWhileWatched: the engine's calls report progress to
// the API only while an event stream is open (the page, or a program
// watching): then a call's progress is shown and sent on the stream, and
// lathe asks an upstream server for it; with none open no call, and no
// upstream, is asked for progress that nobody would see.
func TestProgressFollowedWhileWatched(t *testing.T) {
	f := newFixture(t)
	watched := func() string {
		out := f.e.Call(context.Background(), &tool.Call{Name: "watched", Arguments: json.RawMessage(`{}`)})
		if out.Result == nil {
			t.Fatalf("watched: %+v", out)
		}
		return out.Result.Text()
	}
	waitWatched := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for watched() != want {
			if time.Now().After(deadline) {
				t.Fatalf("a call's progress followed: %s, want %s", watched(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := watched(); got != "false" {
		t.Errorf("with no event stream open, a call's progress is followed")
	}
	c := f.login(t)
	resp := c.request("GET", "/api/events", nil, nil)
	ch := make(chan [2]string, 64)
	go readEvents(resp.Body, ch)
	waitWatched("true")
	f.e.Call(context.Background(), &tool.Call{Name: "echo", Arguments: json.RawMessage(`{"text":"x","steps":2}`)})
	timeout := time.After(10 * time.Second)
	for seen := false; !seen; {
		select {
		case ev := <-ch:
			seen = ev[0] == "progress"
		case <-timeout:
			t.Fatal("no progress event on the open stream within 10s")
		}
	}
	resp.Body.Close()
	waitWatched("false")
}
