// Package web is lathe's page for people: live calls, pending approvals,
// the audit log, the catalog of tools and the grants, served by
// [Handler] from files embedded in the binary (no network, no CDN).
//
// The page holds no secret and no data: it is the same for everyone, so
// [Handler] serves it without authentication. Everything it shows comes
// from the HTTP JSON API under /api/, which authenticates each request
// (the page logs in with the serve token and carries a session cookie and
// a CSRF value). Mount it beside that API on the listener of lathe serve:
//
//	h := srv.Handler(server.HTTPOptions{Token: token, Mounts: map[string]http.Handler{
//		"/api/": api,
//		"/":     web.Handler(),
//	}})
//
// Every value the page shows that came from a tool, a model or a client
// (names, arguments, results, reasons) is set as text, never parsed as
// HTML, and a Content-Security-Policy that allows only the page's own
// script and style stops whatever would slip past that.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"

	"github.com/lathe-tools/lathe/server"
)

//go:embed assets
var assets embed.FS

// CSP is the Content-Security-Policy of every response of [Handler]: the
// page's own script, style and API only; no inline script or style, no
// other origin, no plugin, no frame around it, no form sent elsewhere.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// file is one embedded asset with what its response needs.
type file struct {
	body []byte
	typ  string
	etag string
}

// Handler returns the handler of the page: the page itself at "/", its
// script and style under "/assets/". Any other path is 404 and any method
// but GET and HEAD 405, so that a mistyped API path does not answer with
// the page.
func Handler() http.Handler {
	files := map[string]file{}
	types := map[string]string{".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
		".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		name := "/" + p
		if p == "assets/index.html" {
			name = "/"
		}
		files[name] = file{body: b, typ: types[path.Ext(p)], etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in: failing to read them is a broken build.
		panic("web: reading the embedded page: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if server.Rebound(r) {
			http.Error(w, "misdirected: this server answers only loopback names", http.StatusMisdirectedRequest)
			return
		}
		f, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", f.typ)
		// The assets change only with the binary: the browser asks again
		// each time, and an unchanged file costs a 304.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" && inm == f.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(f.body)
	})
}
