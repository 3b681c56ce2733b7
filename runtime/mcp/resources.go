package mcp

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// Besides tools, a pool proxies what its servers offer of the rest of MCP:
// resources and their templates, subscriptions to them, prompts,
// completion, and logging. The lists are gathered from every server by
// [Pool.Catalog], which also decides where a request goes:
//
//   - A prompt is named like a tool, with its server's prefix: "fs__review".
//   - A resource keeps its URI, since a URI is a global name that clients
//     and the resources' own contents refer to. A read goes to the server
//     that listed the URI. A URI that several servers list is left out for
//     all of them and reported: whichever lathe picked, a client could be
//     handed what another server says is that resource. A URI no server
//     lists goes to the server whose template matches it; if templates of
//     several servers match, the read is refused as ambiguous rather than
//     guessed.
//   - A template keeps its URI template; one that several servers list is
//     left out, as a URI is.
//   - A prompt name that several servers' prefixes make the same is left
//     out, as a URI is.
//
// A server's list_changed notifications and resource updates reach the
// functions given to [Pool.Watch].

// maxListed bounds the resources, templates or prompts taken from one
// server, so that a server cannot make lathe hold an endless list.
const maxListed = 10000

// Features says which parts of MCP besides tools at least one of a pool's
// servers offers.
type Features struct {
	Resources bool // resources/list and resources/read
	Subscribe bool // resources/subscribe
	Prompts   bool
	// Completions is completion/complete, for prompts' arguments and
	// templates' variables.
	Completions bool
	// Logging says a server takes logging/setLevel.
	Logging bool
}

// Catalog is what a pool's servers offer besides tools, as a client of the
// pool sees it: prompts named with their server's prefix, resources and
// templates as the servers listed them.
type Catalog struct {
	Resources []*sdk.Resource
	Templates []*sdk.ResourceTemplate
	Prompts   []*sdk.Prompt
}

// Notice is something a server says besides the results of calls: see
// [Pool.Watch].
type Notice struct {
	Kind NoticeKind
	// Server names the server that said it.
	Server string
	// URI is the resource of a NoticeResourceUpdated.
	URI string
	// Log is the message of a NoticeLog.
	Log *sdk.LoggingMessageParams
	// Session, when set, is the only session a NoticeLog is for: the
	// message came just after a call of that session ended, and may be
	// about it, so no other client may see it.
	Session string
}

// NoticeKind is the kind of a [Notice].
type NoticeKind int

const (
	// NoticeResourcesChanged: a server's resources or templates changed;
	// [Pool.Catalog] lists them anew.
	NoticeResourcesChanged NoticeKind = iota + 1
	// NoticePromptsChanged: a server's prompts changed.
	NoticePromptsChanged
	// NoticeResourceUpdated: a resource subscribed to with
	// [Pool.Subscribe] changed.
	NoticeResourceUpdated
	// NoticeLog: a log message that belongs to no call in flight (the
	// server sent it while none of its calls ran).
	NoticeLog
)

// surface holds the routes of what a pool proxies besides tools, and who
// watches for its notices.
type surface struct {
	mu        sync.Mutex
	resources map[string]*server // URI → the server that listed it; nil if several did
	templates []templateRoute
	prompts   map[string]promptRoute // prompt name as served → where it goes
	subs      map[string]*server     // URI subscribed to → its server
	watchers  map[int]func(Notice)
	nextWatch int
	levels    map[string]sdk.LoggingLevel // who (a client session) → level it asked for
	sent      map[*sdk.ClientSession]sdk.LoggingLevel
	held      map[*server]map[sdk.LoggingLevel]int // levels of calls in flight (holdLevel), counted
}

type templateRoute struct {
	srv  *server
	raw  string
	tmpl *uritemplate.Template
}

type promptRoute struct {
	srv      *server
	upstream string
}

// Features says what the pool's servers offer besides tools: what a
// running server declared, what the cache holds of one that is not
// running, and what a server neither running nor cached declares when it
// is started for it (see surfacecache.go). A server that cannot be started
// offers nothing.
func (p *Pool) Features(ctx context.Context) Features {
	var f Features
	for _, s := range p.servers {
		e, _ := s.surfaceOf(ctx, false)
		if e == nil {
			continue
		}
		c := e.Capabilities
		if c.Resources != nil {
			f.Resources = true
			f.Subscribe = f.Subscribe || c.Resources.Subscribe
		}
		f.Prompts = f.Prompts || c.Prompts != nil
		f.Completions = f.Completions || c.Completions != nil
		f.Logging = f.Logging || c.Logging != nil
	}
	return f
}

// Catalog lists the resources, templates and prompts of every server and
// makes them the pool's routes (see the rules above). A running server is
// asked; one that is not is taken from the cache, and started only when
// the cache holds nothing of it (see surfacecache.go). A server that fails
// to list is reported to [Options.Warn] and offers nothing until the next
// Catalog; so is each entry left out for a collision.
func (p *Pool) Catalog(ctx context.Context) *Catalog {
	var (
		resources = newClaims[*sdk.Resource]()
		templates = newClaims[*sdk.ResourceTemplate]()
		prompts   = newClaims[*sdk.Prompt]()
		parsed    = map[string]*uritemplate.Template{}
		upstream  = map[string]string{} // prompt name as served → its name upstream
	)
	for _, s := range p.servers {
		e, _ := s.surfaceOf(ctx, true)
		if e == nil {
			continue
		}
		for _, r := range e.Resources {
			resources.claim(s, r.URI, r)
		}
		for _, t := range e.Templates {
			tmpl, err := uritemplate.New(t.URITemplate)
			if err != nil {
				s.warn(fmt.Errorf("mcp server %s: resource template %q left out: %w", s.cfg.Name, t.URITemplate, err))
				continue
			}
			parsed[t.URITemplate] = tmpl
			templates.claim(s, t.URITemplate, t)
		}
		for _, pr := range e.Prompts {
			c := *pr
			c.Name = s.cfg.prefix() + pr.Name
			upstream[c.Name] = pr.Name
			prompts.claim(s, c.Name, &c)
		}
	}
	cat := &Catalog{}
	routes := map[string]*server{}
	for _, k := range resources.keys {
		s, r, ok := resources.only(p, "resource", k)
		// A contested URI keeps a route to no server, so that no template
		// takes it either.
		routes[k] = s
		if ok {
			cat.Resources = append(cat.Resources, r)
		}
	}
	var troutes []templateRoute
	for _, k := range templates.keys {
		if s, t, ok := templates.only(p, "resource template", k); ok {
			troutes = append(troutes, templateRoute{srv: s, raw: k, tmpl: parsed[k]})
			cat.Templates = append(cat.Templates, t)
		}
	}
	proutes := map[string]promptRoute{}
	for _, k := range prompts.keys {
		if s, pr, ok := prompts.only(p, "prompt", k); ok {
			proutes[k] = promptRoute{srv: s, upstream: upstream[k]}
			cat.Prompts = append(cat.Prompts, pr)
		}
	}
	p.surf.mu.Lock()
	p.surf.resources, p.surf.templates, p.surf.prompts = routes, troutes, proutes
	p.surf.mu.Unlock()
	return cat
}

// each calls f with each item of a server's list, up to maxListed; an
// error ends the list and is reported.
func each[T any](s *server, what string, seq iter.Seq2[T, error], f func(T)) {
	n := 0
	for v, err := range seq {
		if err != nil {
			s.warn(fmt.Errorf("mcp server %s: listing %s: %w", s.cfg.Name, what, err))
			return
		}
		if n++; n > maxListed {
			s.warn(fmt.Errorf("mcp server %s: lists more than %d %s; the rest are left out", s.cfg.Name, maxListed, what))
			return
		}
		f(v)
	}
}

// claims gathers which servers list an entry under one key, in the order
// the keys were first listed.
type claims[T any] struct {
	keys []string
	by   map[string][]claim[T]
}

type claim[T any] struct {
	srv *server
	v   T
}

func newClaims[T any]() *claims[T] { return &claims[T]{by: map[string][]claim[T]{}} }

func (c *claims[T]) claim(s *server, key string, v T) {
	prev := c.by[key]
	if len(prev) == 0 {
		c.keys = append(c.keys, key)
	}
	for _, cl := range prev {
		if cl.srv == s {
			return // a server that lists a key twice keeps the first
		}
	}
	c.by[key] = append(prev, claim[T]{s, v})
}

// only returns the entry under key if one server alone claims it. A key
// that several servers claim is left out for all of them, and reported:
// whichever server lathe picked, a client asking for it could be handed
// what another server says it is.
func (c *claims[T]) only(p *Pool, what, key string) (*server, T, bool) {
	cl := c.by[key]
	if len(cl) == 1 {
		return cl[0].srv, cl[0].v, true
	}
	names := make([]string, len(cl))
	for i, x := range cl {
		names[i] = x.srv.cfg.Name
	}
	err := fmt.Errorf("mcp servers %s: %s %q is listed by each of them, and left out (%w)",
		strings.Join(names, ", "), what, key, ErrCollision)
	if p.opts.Warn != nil {
		p.opts.Warn(err)
	} else {
		p.opts.Logger.Warn("MCP entry left out", "error", err)
	}
	var zero T
	return nil, zero, false
}

// ErrAmbiguous is in the chain of the error of a request that more than
// one server could serve, and that lathe refuses rather than guess.
var ErrAmbiguous = errors.New("more than one MCP server could serve it")

// resourceServer finds the server a URI goes to (see [Pool.Catalog]).
func (p *Pool) resourceServer(uri string) (*server, error) {
	p.surf.mu.Lock()
	defer p.surf.mu.Unlock()
	if s, ok := p.surf.resources[uri]; ok {
		if s == nil {
			return nil, fmt.Errorf("resource %q: several servers list it (%w)", uri, ErrAmbiguous)
		}
		return s, nil
	}
	var found *server
	for _, t := range p.surf.templates {
		if t.tmpl.Match(uri) == nil {
			continue
		}
		if found != nil && found != t.srv {
			return nil, fmt.Errorf("resource %q: the templates of servers %s and %s both match it (%w)",
				uri, found.cfg.Name, t.srv.cfg.Name, ErrAmbiguous)
		}
		found = t.srv
	}
	if found == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	return found, nil
}

// ReadResource reads a resource from the server it goes to; with the
// hooks of the client that asked, what the server logs while it reads
// reaches that client (follow.go).
func (p *Pool) ReadResource(ctx context.Context, uri string) (*sdk.ReadResourceResult, error) {
	s, err := p.resourceServer(uri)
	if err != nil {
		return nil, err
	}
	sess, err := s.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	return followed(ctx, s, sess, func(ctx context.Context) (*sdk.ReadResourceResult, error) {
		return sess.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	})
}

// Subscribe subscribes to a resource on the server it goes to; its updates
// then reach the pool's watchers as [NoticeResourceUpdated]. An update of
// a URI that was not subscribed to, or that a server other than the one it
// goes to sends, is dropped: a server cannot speak for another's resource.
func (p *Pool) Subscribe(ctx context.Context, uri string) error {
	s, err := p.resourceServer(uri)
	if err != nil {
		return err
	}
	sess, err := s.session(ctx)
	if err != nil {
		return fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	if err := sess.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		return err
	}
	p.surf.mu.Lock()
	if p.surf.subs == nil {
		p.surf.subs = map[string]*server{}
	}
	p.surf.subs[uri] = s
	p.surf.mu.Unlock()
	return nil
}

// Unsubscribe ends a subscription of [Pool.Subscribe].
func (p *Pool) Unsubscribe(ctx context.Context, uri string) error {
	p.surf.mu.Lock()
	s := p.surf.subs[uri]
	delete(p.surf.subs, uri)
	p.surf.mu.Unlock()
	if s == nil {
		return nil
	}
	sess, err := s.session(ctx)
	if err != nil {
		return fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	return sess.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri})
}

// Watch calls f with each [Notice] of the pool's servers until cancel is
// called. f is called on the goroutine that received the notice, and
// should return soon.
func (p *Pool) Watch(f func(Notice)) (cancel func()) {
	p.surf.mu.Lock()
	defer p.surf.mu.Unlock()
	if p.surf.watchers == nil {
		p.surf.watchers = map[int]func(Notice){}
	}
	p.surf.nextWatch++
	id := p.surf.nextWatch
	p.surf.watchers[id] = f
	return func() {
		p.surf.mu.Lock()
		delete(p.surf.watchers, id)
		p.surf.mu.Unlock()
	}
}

// notify hands n to every watcher.
func (p *Pool) notify(n Notice) {
	p.surf.mu.Lock()
	fs := make([]func(Notice), 0, len(p.surf.watchers))
	for _, f := range p.surf.watchers {
		fs = append(fs, f)
	}
	p.surf.mu.Unlock()
	for _, f := range fs {
		f(n)
	}
}

// The handlers of the notifications a server sends about its resources and
// prompts (set in newServer).

func (s *server) resourcesChanged(context.Context, *sdk.ResourceListChangedRequest) {
	s.pool.notify(Notice{Kind: NoticeResourcesChanged, Server: s.cfg.Name})
}

func (s *server) promptsChanged(context.Context, *sdk.PromptListChangedRequest) {
	s.pool.notify(Notice{Kind: NoticePromptsChanged, Server: s.cfg.Name})
}

func (s *server) resourceUpdated(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
	if req.Params == nil {
		return
	}
	p := s.pool
	p.surf.mu.Lock()
	mine := p.surf.subs[req.Params.URI] == s
	p.surf.mu.Unlock()
	if !mine {
		p.opts.Logger.Debug("resource update dropped: not subscribed to this server", "server", s.cfg.Name, "uri", req.Params.URI)
		return
	}
	p.notify(Notice{Kind: NoticeResourceUpdated, Server: s.cfg.Name, URI: req.Params.URI})
}

// resume brings a restarted server's session in line with what the pool
// holds: the subscriptions of its resources are made again, and the
// watchers hear that its resources and prompts may have changed, since
// the server that lists them now is another process.
func (s *server) resume(sess *session) {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.startupTimeout())
	defer cancel()
	p := s.pool
	p.surf.mu.Lock()
	var uris []string
	for uri, srv := range p.surf.subs {
		if srv == s {
			uris = append(uris, uri)
		}
	}
	p.surf.mu.Unlock()
	for _, uri := range uris {
		if err := sess.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			s.warn(fmt.Errorf("mcp server %s: subscribing again to %q after a restart: %w", s.cfg.Name, uri, err))
		}
	}
	p.notify(Notice{Kind: NoticeResourcesChanged, Server: s.cfg.Name})
	p.notify(Notice{Kind: NoticePromptsChanged, Server: s.cfg.Name})
}

// ResourceServer names the server a read of uri goes to, as
// [Pool.ReadResource] would route it. The error says why no server would
// serve it; when several could, [ErrAmbiguous] is in its chain.
func (p *Pool) ResourceServer(uri string) (string, error) {
	s, err := p.resourceServer(uri)
	if err != nil {
		return "", err
	}
	return s.cfg.Name, nil
}

// PromptServer names the server a prompt, named as the pool serves it,
// goes to; "" when no server offers it.
func (p *Pool) PromptServer(name string) string {
	p.surf.mu.Lock()
	defer p.surf.mu.Unlock()
	if r, ok := p.surf.prompts[name]; ok {
		return r.srv.cfg.Name
	}
	return ""
}
