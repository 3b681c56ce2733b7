package cli

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/server/httpapi"
	"github.com/lathe-tools/lathe/tool"
)

// apiFace is the HTTP API of lathe serve --http. Its stages go into each
// engine before the workspace is opened (prepareAPI), and what depends on
// the configuration (the approval wait, the redaction patterns) is made
// once it is read. No call reaches an engine before that: the listener
// serves a workspace only once its API is made.
type apiFace struct {
	queue *approvals.Queue
	// slot is where the stage of the engine being built finds the live
	// calls it records into; each workspace gets its own, so that the
	// calls of an engine a reload replaced never mix with the new one's.
	slot *callsSlot
}

type callsSlot struct{ calls *httpapi.Calls }

// prepareAPI makes g's engines ask the API's queue when a call's client
// cannot answer, and record the calls' arguments for the API.
func (g *globals) prepareAPI() *apiFace {
	f := &apiFace{slot: &callsSlot{}}
	g.fallback = policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		return f.queue.Approve(ctx, r)
	})
	g.middleware = append(g.middleware, func(next lathe.Handler) lathe.Handler {
		// The engine builds its pipeline once, as it is made: this stage
		// keeps the slot of that engine's workspace.
		slot := f.slot
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			return slot.calls.Middleware()(next)(ctx, inv)
		}
	})
	return f
}

// options are the API's options for workspace w: its engine, policy,
// audit log, grants and upstream servers, and the live calls recorded by
// its engine's stage.
func (f *apiFace) options(w *load.Workspace) (httpapi.Options, error) {
	cfg := w.Config
	red, err := audit.NewRedactor(patternStrings(cfg.Audit.RedactKeys), patternStrings(cfg.Audit.RedactValues))
	if err != nil {
		return httpapi.Options{}, err
	}
	calls, err := httpapi.NewCalls(0, red)
	if err != nil {
		return httpapi.Options{}, err
	}
	f.slot.calls = calls
	opts := httpapi.Options{Engine: w.Engine, Policy: load.Policy(cfg), Redactor: red, Calls: calls, Upstreams: upstreams(w)}
	if cfg.Audit.Enable == nil || *cfg.Audit.Enable {
		opts.Audit = w.Audit
		if dir, err := audit.DefaultGrantDir(); err == nil {
			if gs, err := audit.OpenGrants(dir, w.Dir); err == nil {
				opts.Grants = gs
			}
		}
	}
	return opts, nil
}

// generation is one workspace served: its MCP server and the handler of
// the listener.
type generation struct {
	w   *load.Workspace
	srv *server.Server
	h   http.Handler
}

// serving is the listener's handler: the current generation's, which
// POST /api/reload replaces. The API, its logins and its queue of
// approvals outlive generations.
type serving struct {
	g      *globals
	face   *apiFace
	api    *httpapi.API
	token  string
	mounts map[string]http.Handler // beside MCP and the API
	cur    atomic.Pointer[generation]
	mu     sync.Mutex // one reload at a time
	closed bool
}

// serve makes the API of the workspace w, served by srv.
// mounts are the other faces served beside MCP and the API.
func (f *apiFace) serve(ctx context.Context, g *globals, w *load.Workspace, srv *server.Server, token string,
	mounts map[string]http.Handler) (*serving, error) {
	opts, err := f.options(w)
	if err != nil {
		return nil, err
	}
	f.queue = approvals.New(approvals.Options{Wait: w.Config.Serve.ApprovalWait})
	opts.Token, opts.Approvals, opts.Logger = token, f.queue, g.logger()
	st := &serving{g: g, face: f, token: token, mounts: maps.Clone(mounts)}
	opts.Reload = st.reload
	if st.api, err = httpapi.New(opts); err != nil {
		return nil, err
	}
	st.cur.Store(st.generation(w, srv))
	return st, nil
}

func (st *serving) generation(w *load.Workspace, srv *server.Server) *generation {
	mounts := maps.Clone(st.mounts)
	if mounts == nil {
		mounts = map[string]http.Handler{}
	}
	mounts["/api/"] = st.api
	return &generation{w: w, srv: srv, h: srv.Handler(server.HTTPOptions{Token: st.token, Mounts: mounts})}
}

func (st *serving) ServeHTTP(w http.ResponseWriter, r *http.Request) { st.cur.Load().h.ServeHTTP(w, r) }

// reload opens the workspace again, with the configuration and the tools
// as they are now, and serves it in place of the current one, whose calls
// in flight end (cancelled) and whose MCP clients connect again. A
// configuration that needs trust, or that does not load, leaves the
// current one served, and the error says why.
func (st *serving) reload(ctx context.Context) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return errors.New("the server is stopping")
	}
	// The new engine's stage records into a slot of its own.
	prevSlot := st.face.slot
	st.face.slot = &callsSlot{}
	w, err := st.g.openWorkspace(context.WithoutCancel(ctx))
	if err != nil {
		st.face.slot = prevSlot
		var ue *untrustedError
		if errors.As(err, &ue) {
			return errors.Join(httpapi.ErrUntrusted, err)
		}
		return err
	}
	opts, err := st.face.options(w)
	if err == nil {
		err = st.api.Replace(opts)
	}
	if err != nil {
		w.Close()
		st.face.slot = prevSlot
		return err
	}
	srv := server.New(w.Engine, server.Options{Name: "lathe", Version: version(), Upstream: w.MCP, Logger: st.g.logger(),
		Audit: accessAudit(w)})
	old := st.cur.Swap(st.generation(w, srv))
	// The old workspace's engine and upstream servers go now, not when
	// the command ends (closing again, as the command does for the
	// first, does nothing).
	old.srv.Close()
	old.w.Close()
	return nil
}

// end ends the calls in flight of the current generation (serveHTTP calls
// it when the server stops).
func (st *serving) end() error {
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	return st.cur.Load().srv.Close()
}

// close closes the API and the current generation.
func (st *serving) close() {
	st.api.Close()
	st.mu.Lock()
	st.closed = true
	st.mu.Unlock()
	cur := st.cur.Load()
	cur.srv.Close()
	cur.w.Close()
}

func patternStrings(ps []config.Pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// upstreams reports the upstream servers of w: those skipped or deferred,
// and the other enabled ones as running, with the number of tools each has.
func upstreams(w *load.Workspace) func() []httpapi.Upstream {
	return func() []httpapi.Upstream {
		if w.MCP == nil {
			return nil
		}
		count := map[string]int{}
		for _, d := range w.Engine.Tools() {
			if name, ok := strings.CutPrefix(d.Source, "mcp."); ok {
				count[name]++
			}
		}
		state := map[string]string{}
		for n, s := range w.Config.MCP {
			if s != nil && (s.Enable == nil || *s.Enable) {
				state[n] = "running"
			}
		}
		for _, n := range w.MCP.Skipped() {
			state[n] = "skipped"
		}
		for _, n := range w.MCP.Deferred() {
			state[n] = "deferred"
		}
		var out []httpapi.Upstream
		for _, n := range slices.Sorted(maps.Keys(state)) {
			out = append(out, httpapi.Upstream{Name: n, State: state[n], Tools: count[n]})
		}
		return out
	}
}
