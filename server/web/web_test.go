package web

import (
	"context"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestHandlerHeaders checks that each file of the page is served with the
// headers that keep a hostile value from running as script (a strict CSP
// with no inline script, no sniffing) and the page from being framed.
func TestHandlerHeaders(t *testing.T) {
	h := Handler()
	for _, c := range []struct{ path, typ string }{
		{"/", "text/html; charset=utf-8"},
		{"/assets/app.js", "text/javascript; charset=utf-8"},
		{"/assets/app.css", "text/css; charset=utf-8"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", c.path, rec.Code, rec.Body)
		}
		hd := rec.Header()
		if got := hd.Get("Content-Type"); got != c.typ {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.typ)
		}
		csp := hd.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: CSP %q lacks %q", c.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: CSP %q allows inline script or eval", c.path, csp)
		}
		if hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: headers %v", c.path, hd)
		}
		if rec.Body.Len() == 0 {
			t.Errorf("GET %s: empty body", c.path)
		}
		// An unchanged file costs a 304.
		rec2 := httptest.NewRecorder()
		req := httptest.NewRequest("GET", c.path, nil)
		req.Header.Set("If-None-Match", hd.Get("ETag"))
		h.ServeHTTP(rec2, req)
		if rec2.Code != http.StatusNotModified || rec2.Body.Len() != 0 {
			t.Errorf("GET %s with its ETag: %d, %d bytes; want 304 and none", c.path, rec2.Code, rec2.Body.Len())
		}
	}
}

// TestHandlerRefuses checks that the page answers only its own paths, and
// only to reads: a mistyped API path must not get the page as an answer,
// and a POST to the page must not look as if it did something.
func TestHandlerRefuses(t *testing.T) {
	h := Handler()
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/api/nothing", 404},
		{"GET", "/assets/", 404},
		{"GET", "/assets/index.html", 404},
		{"GET", "/assets/../web.go", 404},
		{"GET", "/index.html", 404},
		{"POST", "/", 405},
		{"DELETE", "/assets/app.js", 405},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		if rec.Code != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.code)
		}
		if rec.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("%s %s: no CSP on the refusal", c.method, c.path)
		}
	}
}

// TestAssetsStayText reads the page's own files for what would let a
// value from a tool or a model become markup or code, or make the page
// depend on the network: HTML parsing sinks, eval, inline handlers and
// scripts, and addresses of other origins. The browser test shows the
// same for one hostile value; this covers each place in the code.
func TestAssetsStayText(t *testing.T) {
	sinks := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(['"]|setInterval\(['"]|javascript:`)
	inline := regexp.MustCompile(`(?i)\son[a-z]+=|<script>|<style|style=`)
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	n := 0
	fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := assets.ReadFile(p)
		n++
		s := string(b)
		if m := sinks.FindString(s); m != "" {
			t.Errorf("%s uses %q: a value would be parsed as HTML or code", p, m)
		}
		if strings.HasSuffix(p, ".html") {
			if m := inline.FindString(s); m != "" {
				t.Errorf("%s has inline %q, which the CSP refuses", p, m)
			}
		}
		if m := remote.FindString(s); m != "" {
			t.Errorf("%s names another origin %q: the page must work with no network", p, m)
		}
		return nil
	})
	if n < 3 {
		t.Fatalf("only %d embedded files", n)
	}
}

// TestHandlerRefusesRebinding: a page of another site whose name the
// attacker points at 127.0.0.1 (DNS rebinding) would get lathe's page under
// the attacker's origin, and a person might log in there, giving that
// origin a session. On a loopback listener only loopback names and
// addresses are answered; a listener on another address keeps its names.
func TestHandlerRefusesRebinding(t *testing.T) {
	h := Handler()
	for _, c := range []struct {
		local, host string
		code        int
	}{
		{"127.0.0.1:8080", "evil.example:8080", http.StatusMisdirectedRequest},
		{"127.0.0.1:8080", "evil.example", http.StatusMisdirectedRequest},
		{"[::1]:8080", "evil.example:8080", http.StatusMisdirectedRequest},
		{"127.0.0.1:8080", "127.0.0.1:8080", http.StatusOK},
		{"127.0.0.1:8080", "localhost:8080", http.StatusOK},
		{"[::1]:8080", "[::1]:8080", http.StatusOK},
		{"10.0.0.5:8080", "lathe.internal.example:8080", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Host = c.host
		addr, err := net.ResolveTCPAddr("tcp", c.local)
		if err != nil {
			t.Fatal(err)
		}
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, addr))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("Host %s on %s: %d, want %d", c.host, c.local, rec.Code, c.code)
		}
	}
}
