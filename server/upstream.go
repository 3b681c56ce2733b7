package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// What the server offers besides tools comes from the upstream MCP servers
// of [Options].Upstream: their resources, resource templates and
// subscriptions, prompts, completion and logging, routed as
// [mcp.Pool.Catalog] says. A capability is declared to clients only when
// an upstream server declares it: a client is never offered an empty list
// that nothing could fill. The lists are mirrored into the SDK's server,
// as the tools are, so that a change upstream (list_changed) reaches every
// client as list_changed of its own.

// surfaceTimeout bounds listing the upstream servers' catalog and sending
// a notice to one client.
const surfaceTimeout = 30 * time.Second

// surfaceState is the part of a [Server] that mirrors its upstream's
// catalog.
type surfaceState struct {
	ctx    context.Context // ends when the server closes
	cancel context.CancelFunc

	sync      sync.Mutex // one mirroring at a time
	resources map[string]string
	templates map[string]string
	prompts   map[string]string

	mu       sync.Mutex
	watching map[*sdk.ServerSession]bool // sessions whose log level the pool holds
	syncing  bool                        // a mirroring runs or is about to
	again    bool                        // a change came during it: mirror once more
}

// surfaceOptions declares the capabilities the upstream servers back and
// sets the SDK's handlers for them. Without an upstream pool, logging is
// declared as before: the engine's tools may be upstream tools whose log
// messages reach the client of their call.
func (s *Server) surfaceOptions(o *sdk.ServerOptions) {
	p := s.opts.Upstream
	if p == nil {
		o.Capabilities.Logging = &sdk.LoggingCapabilities{}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), surfaceTimeout)
	defer cancel()
	f := p.Features(ctx)
	o.HasResources = f.Resources
	o.HasPrompts = f.Prompts
	if f.Logging {
		o.Capabilities.Logging = &sdk.LoggingCapabilities{}
	}
	if f.Resources && f.Subscribe {
		o.SubscribeHandler = func(ctx context.Context, req *sdk.SubscribeRequest) error {
			return p.Subscribe(ctx, req.Params.URI)
		}
		// Unsubscribing upstream would end the subscription of every other
		// client of the same resource; the SDK stops sending this client
		// the updates, and the upstream subscription lasts as long as the
		// session with the upstream server.
		o.UnsubscribeHandler = func(context.Context, *sdk.UnsubscribeRequest) error { return nil }
	}
	if f.Completions {
		o.CompletionHandler = func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			res, err := p.Complete(s.followed(ctx, req.Session, req.Params.GetMeta()), req.Params)
			if err != nil {
				return nil, err
			}
			return &sdk.CompleteResult{Completion: res.Completion, Meta: res.Meta}, nil
		}
	}
}

// gate refuses the methods of a capability the server does not declare,
// as a method it does not have: the SDK would answer resources/list or
// prompts/list with an empty list whatever it declared.
func (s *Server) gate(o *sdk.ServerOptions) {
	declared := map[string]bool{
		"resources/":          o.HasResources,
		"prompts/":            o.HasPrompts,
		"completion/complete": o.CompletionHandler != nil,
		"logging/setLevel":    o.Capabilities.Logging != nil,
	}
	s.mcp.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			for prefix, ok := range declared {
				if !ok && strings.HasPrefix(method, prefix) {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
						Message: fmt.Sprintf("method %q not found: the server does not offer %s", method, strings.TrimSuffix(prefix, "/"))}
				}
			}
			return next(ctx, method, req)
		}
	})
}

// startSurface mirrors the upstream's catalog, follows its notices, and
// passes clients' log levels on to it.
func (s *Server) startSurface() {
	p := s.opts.Upstream
	if p == nil {
		return
	}
	st := &s.surf
	st.ctx, st.cancel = context.WithCancel(context.Background())
	st.resources, st.templates, st.prompts = map[string]string{}, map[string]string{}, map[string]string{}
	st.watching = map[*sdk.ServerSession]bool{}
	s.mcp.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			switch req.(type) {
			case *sdk.ReadResourceRequest, *sdk.GetPromptRequest:
				// Reads and gets are actions of a client: the audit log
				// keeps each, with the session that made it (access.go).
				return s.audited(ctx, method, req, next)
			}
			res, err := next(ctx, method, req)
			if r, ok := req.(*sdk.ServerRequest[*sdk.SetLoggingLevelParams]); ok && err == nil && r.Params != nil {
				s.setLevel(ctx, r.Session, string(r.Params.Level))
			}
			return res, err
		}
	})
	unwatch := p.Watch(s.notice)
	prev := s.unsubscribe
	s.unsubscribe = func() {
		unwatch()
		st.cancel()
		prev()
	}
	s.syncSurface()
}

// setLevel passes a client's log level to the upstream servers, and
// forgets it when the client's session ends.
func (s *Server) setLevel(ctx context.Context, ss *sdk.ServerSession, level string) {
	p, st := s.opts.Upstream, &s.surf
	who := s.sessionID(ss)
	if err := p.SetLogLevel(ctx, who, level); err != nil {
		s.opts.Logger.Warn("log level not set upstream", "session", who, "error", err)
	}
	st.mu.Lock()
	watched := st.watching[ss]
	st.watching[ss] = true
	st.mu.Unlock()
	if watched {
		return
	}
	s.goUnlessClosed(func() {
		ss.Wait()
		st.mu.Lock()
		delete(st.watching, ss)
		st.mu.Unlock()
		ctx, cancel := context.WithTimeout(st.ctx, surfaceTimeout)
		defer cancel()
		p.SetLogLevel(ctx, who, "")
	})
}

// goUnlessClosed runs f on a goroutine that Close waits for, unless Close
// has begun: Close stops taking sessions under s.mu before it waits, so
// that no goroutine is added to a wait under way.
func (s *Server) goUnlessClosed(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		return
	}
	s.wg.Go(f)
}

// notice handles what an upstream server says besides results.
func (s *Server) notice(n mcp.Notice) {
	st := &s.surf
	switch n.Kind {
	case mcp.NoticeResourcesChanged, mcp.NoticePromptsChanged:
		s.resync()
	case mcp.NoticeResourceUpdated:
		ctx, cancel := context.WithTimeout(st.ctx, surfaceTimeout)
		defer cancel()
		s.mcp.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: n.URI})
	case mcp.NoticeLog:
		// A message of no call goes to every client, each filtering it by
		// the level it set, under a logger that names its server.
		m := *n.Log
		m.Logger = n.Server
		if n.Log.Logger != "" {
			m.Logger += "/" + n.Log.Logger
		}
		// One that came just after a call ended goes to that call's
		// session alone (n.Session): it may be about the call.
		s.mu.Lock()
		sessions := make([]*sdk.ServerSession, 0, len(s.sessions))
		for ss, cs := range s.sessions {
			if n.Session == "" || cs.id == n.Session {
				sessions = append(sessions, ss)
			}
		}
		s.mu.Unlock()
		for _, ss := range sessions {
			ctx, cancel := context.WithTimeout(st.ctx, surfaceTimeout)
			ss.Log(ctx, &m)
			cancel()
		}
	}
}

// resync mirrors the catalog again, off the upstream's notification
// goroutine: listing sends requests whose answers that goroutine must be
// free to read. Changes that come while a mirroring runs make one more
// after it, not one each, so that a server that floods list_changed costs
// one listing at a time.
func (s *Server) resync() {
	st := &s.surf
	st.mu.Lock()
	if st.syncing {
		st.again = true
		st.mu.Unlock()
		return
	}
	st.syncing = true
	st.mu.Unlock()
	s.goUnlessClosed(func() {
		for {
			s.syncSurface()
			st.mu.Lock()
			if !st.again || st.ctx.Err() != nil {
				st.syncing, st.again = false, false
				st.mu.Unlock()
				return
			}
			st.again = false
			st.mu.Unlock()
		}
	})
}

// syncSurface mirrors the upstream's current catalog into the SDK's
// server: it adds the new, replaces the changed and removes the gone, and
// so makes the SDK send list_changed to the clients.
func (s *Server) syncSurface() {
	st, p := &s.surf, s.opts.Upstream
	st.sync.Lock()
	defer st.sync.Unlock()
	if st.ctx.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(st.ctx, surfaceTimeout)
	defer cancel()
	cat := p.Catalog(ctx)

	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		res, err := p.ReadResource(s.followed(ctx, req.Session, req.Params.GetMeta()), req.Params.URI)
		if err != nil {
			return nil, err
		}
		return &sdk.ReadResourceResult{Contents: res.Contents, Meta: res.Meta}, nil
	}
	now := map[string]bool{}
	for _, r := range cat.Resources {
		now[r.URI] = true
		mirror(s, st.resources, r.URI, r, func() { s.mcp.AddResource(r, read) })
	}
	s.mcp.RemoveResources(gone(st.resources, now)...)

	now = map[string]bool{}
	for _, t := range cat.Templates {
		now[t.URITemplate] = true
		mirror(s, st.templates, t.URITemplate, t, func() { s.mcp.AddResourceTemplate(t, read) })
	}
	s.mcp.RemoveResourceTemplates(gone(st.templates, now)...)

	get := func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		res, err := p.GetPrompt(s.followed(ctx, req.Session, req.Params.GetMeta()), req.Params.Name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		return &sdk.GetPromptResult{Description: res.Description, Messages: res.Messages, Meta: res.Meta}, nil
	}
	now = map[string]bool{}
	for _, pr := range cat.Prompts {
		now[pr.Name] = true
		mirror(s, st.prompts, pr.Name, pr, func() { s.mcp.AddPrompt(pr, get) })
	}
	s.mcp.RemovePrompts(gone(st.prompts, now)...)
}

// followed gives ctx, that of a client's request other than a tool call
// (a resource read, a prompt get, a completion), the ways back to that
// client, for the upstream pool to follow the request by (runtime/mcp,
// follow.go): what the upstream logs in its course reaches this client
// alone, on the request's own stream, at the level the request names
// under MCP 2026-07-28 (else the session's), and not every client, as a
// message of no call does. The request cannot ask the client anything.
func (s *Server) followed(ctx context.Context, ss *sdk.ServerSession, meta sdk.Meta) context.Context {
	h := s.hooks(ctx, ss, ss, nil, nil)
	h.LogLevel = requestLevel(ss, meta)
	return lathe.WithSession(tool.WithHooks(ctx, h), s.sessionID(ss))
}

// mirror adds v under key unless served holds it unchanged. The SDK
// panics on what it will not serve (a URI it cannot parse, a template it
// cannot read): that entry is left out and logged.
func mirror(s *Server, served map[string]string, key string, v any, add func()) {
	b, _ := json.Marshal(v)
	if served[key] == string(b) {
		return
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		add()
		return nil
	}()
	if err != nil {
		s.opts.Logger.Warn("upstream entry not served", "name", key, "error", err)
		delete(served, key)
		return
	}
	served[key] = string(b)
}

// gone removes from served the keys not in now, and returns them.
func gone(served map[string]string, now map[string]bool) []string {
	var out []string
	for k := range served {
		if !now[k] {
			out = append(out, k)
			delete(served, k)
		}
	}
	return out
}
