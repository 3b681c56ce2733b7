package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
)

// CookieName is the session cookie [API] sets on login.
const CookieName = "lathe_session"

// CSRFHeader is the header that must repeat the session's CSRF value on
// every request that carries the cookie and is not a GET or HEAD.
const CSRFHeader = "X-Lathe-CSRF"

// login is one client logged in with the cookie: its CSRF value, and the
// engine session its calls belong to, which ends with it.
type login struct {
	csrf    string
	session string
	end     chan struct{}
	expires time.Time
}

// logins are the sessions of the cookie, by the SHA-256 of the cookie's
// value: the map never holds a cookie a thief of memory could replay as is.
type logins struct {
	mu  sync.Mutex
	m   map[[32]byte]*login
	ttl time.Duration
	max int
}

func randomHex(n int) string {
	b := make([]byte, n)
	// crypto/rand.Read does not fail (it panics when the system has no
	// randomness to give, which leaves nothing to guard).
	rand.Read(b)
	return hex.EncodeToString(b)
}

// start makes a new login and returns its cookie value.
func (l *logins) start() (string, *login) {
	cookie := randomHex(32)
	lg := &login{csrf: randomHex(32), session: "api-" + randomHex(8), end: make(chan struct{}),
		expires: time.Now().Add(l.ttl)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked()
	// At the cap, the login that ends soonest goes: a client that logs
	// in again and again cannot make the map grow.
	for len(l.m) >= l.max {
		var oldest [32]byte
		var first *login
		for k, v := range l.m {
			if first == nil || v.expires.Before(first.expires) {
				oldest, first = k, v
			}
		}
		l.endLocked(oldest)
	}
	l.m[sha256.Sum256([]byte(cookie))] = lg
	return cookie, lg
}

func (l *logins) find(cookie string) *login {
	k := sha256.Sum256([]byte(cookie))
	l.mu.Lock()
	defer l.mu.Unlock()
	lg, ok := l.m[k]
	if !ok {
		return nil
	}
	if time.Now().After(lg.expires) {
		l.endLocked(k)
		return nil
	}
	return lg
}

func (l *logins) end(cookie string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(sha256.Sum256([]byte(cookie)))
}

func (l *logins) endLocked(k [32]byte) {
	if lg, ok := l.m[k]; ok {
		close(lg.end)
		delete(l.m, k)
	}
}

func (l *logins) pruneLocked() {
	now := time.Now()
	for k, lg := range l.m {
		if now.After(lg.expires) {
			l.endLocked(k)
		}
	}
}

func (l *logins) closeAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		l.endLocked(k)
	}
}

// caller is who made a request, as the authentication found it.
type caller struct {
	// login is the cookie's login; nil for a bearer token or no token.
	login *login
}

type callerKey struct{}

// authenticate finds the caller of r, or answers the request itself (401,
// 403) and returns false. A bearer token is for programs; the cookie is
// for the page, and then every unsafe request must carry the CSRF value,
// which a page of another origin cannot read.
func (a *API) authenticate(w http.ResponseWriter, r *http.Request) (*caller, bool) {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, got, _ := strings.Cut(strings.TrimSpace(auth), " ")
		if a.tokenOK(strings.TrimSpace(got)) && strings.EqualFold(scheme, "Bearer") {
			return &caller{}, true
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="lathe"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "the bearer token is wrong")
		return nil, false
	}
	if c, err := r.Cookie(CookieName); err == nil {
		if lg := a.logins.find(c.Value); lg != nil {
			// Every request with the cookie, reads included, carries the
			// session's CSRF value: browsers send a host's cookies to all
			// its ports, so a web server another user runs on localhost
			// gets the cookie, but not the value, which the login gave
			// the page alone.
			if !csrfOK(r, lg.csrf) {
				writeError(w, http.StatusForbidden, "csrf",
					"a request with the session cookie must carry the header "+CSRFHeader+
						" with the value POST /api/login answered")
				return nil, false
			}
			return &caller{login: lg}, true
		}
	}
	if a.token == nil {
		// No token: the listener is one only its owner can reach.
		return &caller{}, true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="lathe"`)
	writeError(w, http.StatusUnauthorized, "unauthorized",
		"a bearer token (Authorization: Bearer TOKEN) or a session cookie from POST /api/login is required")
	return nil, false
}

// csrfOK reports whether r carries want, the session's CSRF value, in the
// header, or, for a read (EventSource opens its stream without headers),
// in the query parameter csrf; compared in constant time.
func csrfOK(r *http.Request, want string) bool {
	got := r.Header.Get(CSRFHeader)
	if got == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		got = r.URL.Query().Get("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// tokenOK compares got with the token by their SHA-256 digests in constant
// time, so that neither the token's bytes nor its length show in the time
// taken.
func (a *API) tokenOK(got string) bool {
	if a.token == nil {
		return true
	}
	sum := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1
}

// withSession puts the caller's engine session in ctx: the login's, which
// lasts as long as it, or, for a request without one (a bearer token), a
// session of this request alone, so that an "allow for the session"
// answered for one program never lets another's call run.
func (a *API) withSession(ctx context.Context, c *caller) (context.Context, func()) {
	if c != nil && c.login != nil {
		return lathe.WithSessionEnd(lathe.WithSession(ctx, c.login.session), c.login.end), func() {}
	}
	end := make(chan struct{})
	return lathe.WithSessionEnd(lathe.WithSession(ctx, "api-"+randomHex(8)), end), func() { close(end) }
}

type loginRequest struct {
	Token string `json:"token"`
}

// handleLogin checks the token and sets the session cookie. A wrong token
// is answered after a delay, and the failed attempts are taken one at a
// time, so that guessing the token cannot go faster by sending many at once.
func (a *API) handleLogin(w http.ResponseWriter, r *http.Request) {
	var in loginRequest
	if !readJSON(w, r, &in) {
		return
	}
	if !a.tokenOK(in.Token) {
		a.failMu.Lock()
		time.Sleep(a.g().LoginDelay)
		a.failMu.Unlock()
		writeError(w, http.StatusUnauthorized, "unauthorized", "the token is wrong")
		return
	}
	cookie, lg := a.logins.start()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, Expires: lg.expires})
	writeJSON(w, http.StatusOK, map[string]any{"csrf": lg.csrf})
}

func (a *API) handleLogout(w http.ResponseWriter, r *http.Request) {
	c, ok := a.authenticate(w, r)
	if !ok {
		return
	}
	if ck, err := r.Cookie(CookieName); err == nil && c.login != nil {
		a.logins.end(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

// handleSession tells the page, after a reload, whether the session it
// kept (its cookie, and the CSRF value it kept in its origin's
// sessionStorage) still holds; a cookie without the value learns nothing
// (see authenticate). Without a token, a client without a session gets a
// new login, so that its calls still have a session of their own.
func (a *API) handleSession(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(CookieName); err == nil {
		if lg := a.logins.find(ck.Value); lg != nil && csrfOK(r, lg.csrf) {
			writeJSON(w, http.StatusOK, map[string]any{"csrf": lg.csrf})
			return
		}
	}
	if a.token != nil {
		writeError(w, http.StatusUnauthorized, "unauthorized", "no session: log in with POST /api/login")
		return
	}
	cookie, lg := a.logins.start()
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, Expires: lg.expires})
	writeJSON(w, http.StatusOK, map[string]any{"csrf": lg.csrf})
}
