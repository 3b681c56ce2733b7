package host_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lathe-tools/lathe/host"
)

// server is an httptest server that counts the requests it got, so that a
// denial can be told from a fetch that failed after reaching it.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) hostPort() string { return strings.TrimPrefix(s.URL, "http://") }

func TestFetchAllowed(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Seen", r.Header.Get("X-Ask"))
		w.Write([]byte("hello " + r.Method))
	})
	f := newFixture(t)
	s := f.host(t, host.Permissions{Net: []string{srv.hostPort()}}).Begin(testCtx(t))
	defer s.End()
	var r host.FetchResult
	wantOK(t, "fetch", call(t, s, host.MethodFetch, host.FetchParams{URL: srv.URL + "/x?q=1", Method: "POST",
		Headers: map[string]string{"X-Ask": "yes"}}, &r))
	if r.Status != 200 || string(r.Body) != "hello POST" || r.Headers["X-Seen"] != "yes" || r.Truncated {
		t.Fatalf("fetch = %+v", r)
	}
}

func TestFetchDenied(t *testing.T) {
	allowed := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	forbidden := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("forbidden data")) })
	f := newFixture(t)
	s := f.host(t, host.Permissions{Net: []string{allowed.hostPort()}}).Begin(testCtx(t))
	defer s.End()
	u, _ := url.Parse(forbidden.URL)
	for _, c := range []struct{ url, want string }{
		{forbidden.URL + "/", `to net`}, // a port not granted
		{"http://user:pw@" + allowed.hostPort() + "/", "user information"},
		{"file:///etc/passwd", "only http and https"},
		{"ftp://" + allowed.hostPort() + "/", "only http and https"},
		{"http://localhost:" + u.Port() + "/", `"localhost:` + u.Port() + `" to net`},
		{"http:///x", "no host"},
	} {
		e := call(t, s, host.MethodFetch, host.FetchParams{URL: c.url}, nil)
		wantCode(t, "fetch "+c.url, e, host.CodeDenied, c.want)
	}
	if n := forbidden.hits.Load(); n != 0 {
		t.Fatalf("the forbidden server got %d requests", n)
	}
	if n := allowed.hits.Load(); n != 0 {
		t.Fatalf("the allowed server got %d requests from refused URLs", n)
	}
}

// A redirect from a granted host to one that is not is refused before the
// second host is asked anything.
func TestFetchRedirectToForbiddenHost(t *testing.T) {
	forbidden := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("forbidden data")) })
	allowed := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, forbidden.URL+"/steal", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/done", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			w.Write([]byte("done"))
		}
	})
	f := newFixture(t)
	s := f.host(t, host.Permissions{Net: []string{allowed.hostPort()}}).Begin(testCtx(t))
	defer s.End()
	e := call(t, s, host.MethodFetch, host.FetchParams{URL: allowed.URL + "/away"}, nil)
	wantCode(t, "fetch redirected away", e, host.CodeDenied, "redirect", forbidden.hostPort())
	if n := forbidden.hits.Load(); n != 0 {
		t.Fatalf("the redirect was followed: the forbidden server got %d requests", n)
	}
	var r host.FetchResult
	wantOK(t, "fetch redirected within", call(t, s, host.MethodFetch, host.FetchParams{URL: allowed.URL + "/here"}, &r))
	if string(r.Body) != "done" {
		t.Fatalf("fetch /here = %q", r.Body)
	}
	wantCode(t, "redirect loop", call(t, s, host.MethodFetch, host.FetchParams{URL: allowed.URL + "/loop"}, nil), host.CodeFailed, "redirects")
}

// A name granted through a wildcard that resolves to a loopback address
// is refused: only an entry that names the host literally reaches one.
func TestFetchPrivateAddressNeedsALiteralEntry(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("internal")) })
	u, _ := url.Parse(srv.URL)
	f := newFixture(t)
	// "localhos?" is a wildcard that grants the name localhost.
	s := f.host(t, host.Permissions{Net: []string{"localhos?:" + u.Port()}}).Begin(testCtx(t))
	e := call(t, s, host.MethodFetch, host.FetchParams{URL: "http://localhost:" + u.Port() + "/"}, nil)
	s.End()
	wantCode(t, "fetch localhost through a wildcard", e, host.CodeDenied, "loopback")
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the loopback server got %d requests", n)
	}
	s = f.host(t, host.Permissions{Net: []string{"localhost:" + u.Port()}}).Begin(testCtx(t))
	defer s.End()
	var r host.FetchResult
	wantOK(t, "fetch localhost named literally", call(t, s, host.MethodFetch, host.FetchParams{URL: "http://localhost:" + u.Port() + "/"}, &r))
	if string(r.Body) != "internal" {
		t.Fatalf("fetch = %q", r.Body)
	}
}

func TestFetchBodyCapped(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(strings.Repeat("x", 100))) })
	f := newFixture(t)
	h := f.hostWith(t, host.Config{Perms: host.Permissions{Net: []string{srv.hostPort()}}, Limits: host.Limits{Fetch: 10}})
	s := h.Begin(testCtx(t))
	defer s.End()
	var r host.FetchResult
	wantOK(t, "fetch", call(t, s, host.MethodFetch, host.FetchParams{URL: srv.URL}, &r))
	if len(r.Body) != 10 || !r.Truncated {
		t.Fatalf("fetch = %d bytes, truncated %v; want 10, true", len(r.Body), r.Truncated)
	}
}
