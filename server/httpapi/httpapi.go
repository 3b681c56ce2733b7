// Package httpapi is lathe's HTTP JSON API: the tools and their effective
// policy, the upstream servers, one call (with its progress as server-sent
// events), a batch, the live calls, the approvals waiting for a person (and
// their answers), the audit log, the grants, a reload, and the engine's
// events as a stream. docs/http.md describes it for its users, and
// [OpenAPI] returns its OpenAPI 3.1 description.
//
// [New] returns an [API], an http.Handler serving under /api/. lathe serve
// mounts it beside MCP (server.HTTPOptions.Mounts), which rejects requests
// from other web origins; the API authenticates its own requests: a bearer
// token, or the session cookie of POST /api/login, with which every
// request that is not a GET must carry the CSRF header ([CSRFHeader]).
//
// Each client has an engine session of its own ([lathe.WithSession]): the
// cookie's login, or, for a bearer token, each request alone. An answer
// "allow for the session" holds for the session of the call it answered,
// never for another client's.
package httpapi

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
)

// Options configure [New]. Engine is required; every other field may be
// left out, and the endpoints that need it answer 404 or 501 saying so.
type Options struct {
	// Engine runs the calls and publishes the events.
	Engine *lathe.Engine
	// Token, if set, is the token of the bearer header and of the login.
	// Without one every request is allowed: serve the API without a token
	// only where nobody else can connect (a Unix socket only you can open).
	Token string
	// Approvals is the queue of the approvals a person answers here (the
	// policy's fallback approver).
	Approvals *approvals.Queue
	// Policy gives each tool's effective policy for GET /api/tools.
	Policy *policy.Policy
	// Grants lists and revokes the stored grants.
	Grants Grants
	// Audit opens the audit log, for the search and for finished calls.
	Audit func() (*audit.Store, error)
	// Redactor hides secrets in the arguments the API shows, as the audit
	// log hides them. Nil uses the default patterns.
	Redactor *audit.Redactor
	// Upstreams reports the upstream MCP servers.
	Upstreams func() []Upstream
	// Reload reads the configuration and the registry again, and serves
	// them ([API.Replace]). An error wrapping [ErrUntrusted] is answered
	// 409, any other 422; nil Reload, 501.
	Reload func(ctx context.Context) error
	// LoginDelay is how long a wrong login waits before its answer; zero
	// means a second. Failed logins are answered one at a time.
	LoginDelay time.Duration
	// SessionTTL is how long a login lasts; zero means 12 hours.
	SessionTTL time.Duration
	// MaxLogins caps the logins kept at once; zero means 256. Past it the
	// login that would end soonest is ended.
	MaxLogins int
	// Calls keeps the live calls; nil makes one that keeps 200 finished
	// calls and knows the arguments of the API's own calls only (see
	// [NewCalls]).
	Calls *Calls
	// Logger receives what the API cannot answer a client with.
	Logger *slog.Logger
}

// Grants are the stored grants, as package audit's Grants keeps them.
type Grants interface {
	List(ctx context.Context) ([]policy.Grant, error)
	// RevokeCommand removes the grant of toolName for one command line,
	// or every grant of the tool when command is "". It reports whether
	// there was one.
	RevokeCommand(ctx context.Context, toolName, command string) (bool, error)
}

// Upstream is an upstream MCP server as GET /api/upstreams reports it.
type Upstream struct {
	Name string `json:"name"`
	// State is "running", "skipped" (optional, and it could not start) or
	// "deferred" (not started: its tools are not in use).
	State string `json:"state"`
	Tools int    `json:"tools"`
	Error string `json:"error,omitempty"`
}

// ErrUntrusted is what Options.Reload wraps when the configuration changed
// in a way a person must trust first.
var ErrUntrusted = errors.New("the configuration changed and needs trust (lathe trust)")

// API serves the HTTP JSON API. Close it when done: it stops following the
// engine's events and ends the logins' sessions.
type API struct {
	token  *[32]byte
	logins logins
	failMu sync.Mutex
	mux    *http.ServeMux
	hub    *hub
	// gen is what a reload replaces ([API.Replace]); the rest stays.
	gen       atomic.Pointer[generation]
	mu        sync.Mutex // orders Replace and Close
	stopQueue func()
	closed    bool

	// watchMu guards watchers, the event streams open, and each
	// generation's progress subscription, which lives while one is.
	watchMu  sync.Mutex
	watchers int
}

// generation is the engine the API serves and what belongs to its
// workspace, with the live calls of that engine.
type generation struct {
	Options
	calls *Calls
	red   *audit.Redactor
	stop  func() // ends the subscription to the engine's events
	// progress ends the subscription to its progress, nil when there is
	// none (guarded by API.watchMu).
	progress func()
}

// g returns what the API serves now.
func (a *API) g() *generation { return a.gen.Load() }

// New returns the API of opts.Engine.
func New(opts Options) (*API, error) {
	if opts.Engine == nil {
		return nil, errors.New("httpapi: no engine")
	}
	if opts.LoginDelay <= 0 {
		opts.LoginDelay = time.Second
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.MaxLogins <= 0 {
		opts.MaxLogins = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{logins: logins{m: map[[32]byte]*login{}, ttl: opts.SessionTTL, max: opts.MaxLogins}, hub: newHub()}
	if opts.Token != "" {
		sum := sha256.Sum256([]byte(opts.Token))
		a.token = &sum
	}
	g, err := a.follow(opts)
	if err != nil {
		return nil, err
	}
	a.gen.Store(g)
	a.stopQueue = func() {}
	if opts.Approvals != nil {
		a.stopQueue = opts.Approvals.Subscribe(func(c approvals.Change) {
			kind := "approval_pending"
			if c.Settled {
				kind = "approval_settled"
			}
			a.hub.publish(queueEvent(kind, c))
		})
	}
	a.routes()
	return a, nil
}

// follow makes the generation of opts and subscribes to its engine.
func (a *API) follow(opts Options) (*generation, error) {
	g := &generation{Options: opts, calls: opts.Calls, red: opts.Redactor}
	if g.red == nil {
		red, err := audit.NewRedactor(nil, nil)
		if err != nil {
			return nil, err
		}
		g.red = red
	}
	if g.calls == nil {
		g.calls = newCalls(200, g.red)
	}
	// Every kind but progress, which is followed while an event stream is
	// open (watch).
	stop := opts.Engine.Subscribe(g.deliver(a), lathe.EventToolsChanged, lathe.EventCallStarted,
		lathe.EventApprovalAsked, lathe.EventApprovalAnswered, lathe.EventCallFinished, lathe.EventOperation)
	g.stop = func() {
		stop()
		a.watchMu.Lock()
		defer a.watchMu.Unlock()
		if g.progress != nil {
			g.progress()
			g.progress = nil
		}
	}
	if a.watchers > 0 {
		g.progress = opts.Engine.Subscribe(g.deliver(a), lathe.EventProgress)
	}
	return g, nil
}

// deliver is how the generation takes the engine's events: into its live
// calls, and out on the event streams.
func (g *generation) deliver(a *API) func(lathe.Event) {
	return func(ev lathe.Event) {
		g.calls.event(ev)
		a.hub.publish(engineEvent(ev))
	}
}

// watch counts an event stream opened (+1) or closed (-1). A call's
// progress is followed only while one is open: the engine then gives every
// call a progress hook, and lathe asks each upstream server for progress
// (a progress token in every tools/call, which a server decodes and may
// answer with notifications); with nobody to see it, nobody is asked.
func (a *API) watch(delta int) {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	a.watchers += delta
	g := a.g()
	switch {
	case a.watchers > 0 && g.progress == nil:
		g.progress = g.Engine.Subscribe(g.deliver(a), lathe.EventProgress)
	case a.watchers == 0 && g.progress != nil:
		g.progress()
		g.progress = nil
	}
}

// Replace serves what a reload made: opts.Engine, and its Policy, Grants,
// Audit, Upstreams, Redactor and Calls (nil: a new one), from now on. The
// logins, the token, the approvals queue and the event streams stay; the
// live calls are those of the new engine. The caller closes the old engine
// once Replace returns (its calls end then).
func (a *API) Replace(opts Options) error {
	if opts.Engine == nil {
		return errors.New("httpapi: no engine")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return errors.New("httpapi: the API is closed")
	}
	old := a.g()
	next := old.Options
	next.Engine, next.Policy, next.Grants, next.Audit, next.Upstreams = opts.Engine, opts.Policy, opts.Grants, opts.Audit, opts.Upstreams
	next.Redactor, next.Calls = opts.Redactor, opts.Calls
	// Under watchMu, so that a stream opened meanwhile finds the
	// generation its progress belongs to.
	a.watchMu.Lock()
	g, err := a.follow(next)
	if err == nil {
		a.gen.Store(g)
	}
	a.watchMu.Unlock()
	if err != nil {
		return err
	}
	old.stop()
	// The tools may all have changed: a page lists them again.
	a.hub.publish(Event{Kind: string(lathe.EventToolsChanged), Time: time.Now()})
	return nil
}

// Close stops following the engine and ends every login.
func (a *API) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.g().stop()
	a.stopQueue()
	a.hub.close()
	a.logins.closeAll()
	return nil
}

// ServeHTTP serves the API's requests.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	a.mux.ServeHTTP(w, r)
}

// handler is an endpoint behind the authentication.
type handler func(w http.ResponseWriter, r *http.Request, c *caller)

func (a *API) auth(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := a.authenticate(w, r)
		if !ok {
			return
		}
		h(w, r, c)
	}
}

func (a *API) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /api/login", a.handleLogin)
	m.HandleFunc("POST /api/logout", a.handleLogout)
	m.HandleFunc("GET /api/session", a.handleSession)
	m.HandleFunc("GET /api/openapi.json", a.auth(func(w http.ResponseWriter, r *http.Request, _ *caller) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openapi)
	}))
	m.HandleFunc("GET /api/tools", a.auth(a.handleTools))
	m.HandleFunc("GET /api/upstreams", a.auth(a.handleUpstreams))
	m.HandleFunc("POST /api/calls", a.auth(a.handleCall))
	m.HandleFunc("GET /api/calls", a.auth(a.handleCalls))
	m.HandleFunc("GET /api/calls/{id}", a.auth(a.handleCallByID))
	m.HandleFunc("POST /api/batch", a.auth(a.handleBatch))
	m.HandleFunc("GET /api/approvals", a.auth(a.handleApprovals))
	m.HandleFunc("POST /api/approvals/{id}", a.auth(a.handleAnswer))
	m.HandleFunc("GET /api/audit", a.auth(a.handleAudit))
	m.HandleFunc("GET /api/audit/{id}", a.auth(a.handleAuditRecord))
	m.HandleFunc("GET /api/grants", a.auth(a.handleGrants))
	m.HandleFunc("DELETE /api/grants/{tool}", a.auth(a.handleRevoke))
	m.HandleFunc("POST /api/reload", a.auth(a.handleReload))
	m.HandleFunc("GET /api/events", a.auth(a.handleEvents))
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no endpoint "+r.Method+" "+r.URL.Path+" (GET /api/openapi.json lists them)")
	})
	a.mux = m
}

// errorBody is every error's shape.
type errorBody struct {
	Error struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	var b errorBody
	b.Error.Kind, b.Error.Message = kind, msg
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// maxBody bounds a request body the API reads, beside the server's own
// bound, for the API served alone.
const maxBody = 4 << 20

// readJSON decodes the body into v, refusing what is not declared JSON, is
// not JSON, has unknown fields or trailing data; on failure it has
// answered 400 or 415.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	// Only application/json: a page of another site can send a body of
	// the other types (a form, text/plain, a beacon with none) without
	// asking the server first.
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "bad_request", "the body must be application/json (Content-Type: application/json)")
		return false
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", "the body is not the JSON this endpoint takes: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "bad_request", "the body has more than one JSON value")
		return false
	}
	return true
}

func (a *API) internal(w http.ResponseWriter, what string, err error) {
	a.g().Logger.Warn("httpapi: "+what, "err", err)
	writeError(w, http.StatusInternalServerError, "internal", fmt.Sprintf("%s: %v", what, err))
}

// wantsEvents reports whether the client asked for server-sent events.
func wantsEvents(r *http.Request) bool {
	for _, v := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(v)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

//go:embed openapi.json
var openapi []byte

// OpenAPI returns the API's OpenAPI 3.1 description (docs/openapi.json).
func OpenAPI() []byte { return append([]byte(nil), openapi...) }
