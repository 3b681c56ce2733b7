// Package mcp runs the tools of upstream MCP servers as lathe tools.
//
// A [Pool] holds one session per configured server, started once and shared
// by every call of the engine. [Open] starts the servers (a command over
// stdio, or a streamable HTTP endpoint), lists their tools and registers
// them, each named with its server's prefix ("fs__read_file"); their input
// and output schemas are kept byte for byte as the server sent them.
//
//	pool, err := mcp.Open(ctx, engine, []mcp.Config{{Name: "fs", Command: []string{"mcp-fs", "/tmp"}}}, mcp.Options{})
//
// A call is a tools/call on the server's session: its content comes back as
// lathe content, its progress notifications reach the call's
// [tool.Hooks].Progress, and a server that asks for elicitation or sampling
// is answered by the call's hooks. An elicitation that no hook can answer
// ends the call with a [tool.Question] per property of what the server
// asks; the call, run again with the answers in [tool.Call].Answers, runs
// the upstream tool again and answers its elicitation from them. Cancelling
// a call's context sends notifications/cancelled. A server that crashes fails its calls in flight at
// once and is started again, with a growing back-off, by the next call. A
// server that announces notifications/tools/list_changed has its tools
// listed again and replaced in the engine.
//
// Besides tools, a pool proxies its servers' resources, templates and
// subscriptions, prompts, completion and log levels ([Pool.Catalog],
// [Pool.ReadResource], [Pool.GetPrompt], [Pool.Complete],
// [Pool.SetLogLevel]); what its servers say besides results reaches
// [Pool.Watch]. A call's log messages reach its hooks before it returns.
//
// A server need not run for its tools to be offered: with a [ToolCache] in
// [Options].Cache, Open registers the tools of a server whose list the
// cache holds without starting it, and the server starts at the first call
// of one of its tools (or at once, in the background, with
// [Options].StartCached). [Options].Defer leaves out the servers a command
// will not call. A server given a [Config].PingInterval is pinged while
// idle, and one that does not answer is restarted.
//
// Once opened, the pool belongs to the engine it registered in: closing the
// engine closes it (see [Pool]).
package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os/exec"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/lathe-tools/lathe/tool"
)

// RuntimeName is the name of this runtime in definitions and errors.
const RuntimeName = "mcp"

// Defaults for a [Config] that leaves a duration zero.
const (
	DefaultStartupTimeout = 30 * time.Second
)

// MaxPingWait bounds how long a ping waits for its answer, whatever the
// interval.
const MaxPingWait = 10 * time.Second

// Config describes one upstream server. Exactly one of Command and URL is set.
type Config struct {
	// Name names the server; its tools' source is "mcp.NAME".
	Name string
	// Command is the argv of a server spoken to over stdio.
	Command []string
	// Env holds variables set for the command. The command gets lathe's one
	// environment for the processes it starts: PATH, HOME, LANG, TERM and
	// TMPDIR of lathe's environment, the names of PassEnv, and Env; nothing
	// else of lathe's environment reaches the server.
	Env map[string]string
	// PassEnv names variables passed to the command from lathe's
	// environment.
	PassEnv []string
	// Stderr receives the command's standard error; nil means
	// [Options.Stderr], the one writer of every server of the pool.
	Stderr io.Writer
	// Sandbox, when set, is called with the server's command just before it
	// starts and may rewrite it to run confined (pass a sandbox.Config's
	// Wrap method); the function it returns runs once the process is gone.
	// An error fails the start: the server never runs unconfined.
	Sandbox func(cmd *exec.Cmd) (cleanup func(), err error)
	// Dir is the command's working directory; empty means lathe's.
	Dir string
	// URL is the endpoint of a server spoken to over streamable HTTP.
	URL string
	// Headers are sent with every HTTP request (Authorization, say), and
	// only to the origin of URL: a redirect to another origin is not
	// followed.
	Headers map[string]string
	// OAuth, if set, authorizes the requests to URL: it gives the token
	// of each request and runs the authorization flow when the server
	// answers 401 (see package runtime/mcp/oauth). Its token, like
	// Headers, goes to URL's origin only.
	OAuth auth.OAuthHandler
	// Prefix is put before each tool's name; nil means Name + "__".
	Prefix *string
	// Allow, if not empty, keeps only the tools whose upstream name matches
	// one of its patterns; Deny then drops those matching one of its. The
	// patterns are those of path.Match: "read_*", "get-?um".
	Allow, Deny []string
	// Timeout bounds one call of the server's tools; zero means the engine's.
	Timeout time.Duration
	// StartupTimeout bounds starting the server, initializing the session
	// and listing its tools; zero means [DefaultStartupTimeout].
	StartupTimeout time.Duration
	// Optional says that a server which cannot be started is reported and
	// skipped rather than failing [Open].
	Optional bool
	// NoResources and NoPrompts keep the server's resources (and their
	// templates, subscriptions and completion) and its prompts (and their
	// completion) from the pool's clients: its tools alone are offered.
	NoResources, NoPrompts bool
	// LogLevel, if set, is the least log level the server is asked to send
	// (logging/setLevel) from the start; a client may ask for a more
	// verbose one (see [Pool.SetLogLevel]).
	LogLevel string
	// PingInterval, when positive, has the server pinged after that long
	// without a call in flight: a server that does not answer within the
	// interval (at most [MaxPingWait]) is taken for hung, stopped and
	// started again. Zero pings never, which suits a pool that lives for
	// one command.
	PingInterval time.Duration
	// ExitGrace is how long a server run as a command has, once its
	// standard input is closed, to exit before it is sent SIGTERM (and, as
	// long again later, SIGKILL); zero means one second. A one-shot
	// command that must not wait for a server's leisurely exit sets it
	// short.
	ExitGrace time.Duration
}

func (c *Config) prefix() string {
	if c.Prefix != nil {
		return *c.Prefix
	}
	return c.Name + "__"
}

func (c *Config) exitGrace() time.Duration {
	if c.ExitGrace > 0 {
		return c.ExitGrace
	}
	return terminateGrace
}

func (c *Config) startupTimeout() time.Duration {
	if c.StartupTimeout > 0 {
		return c.StartupTimeout
	}
	return DefaultStartupTimeout
}

// allowed reports whether the upstream tool name passes Allow and Deny.
func (c *Config) allowed(name string) bool {
	match := func(pats []string) bool {
		for _, p := range pats {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	if len(c.Allow) > 0 && !match(c.Allow) {
		return false
	}
	return !match(c.Deny)
}

func (c *Config) validate() error {
	switch {
	case c.Name == "":
		return errors.New("a server needs a name")
	case len(c.Command) > 0 && c.URL != "":
		return errors.New("set command or url, not both")
	case len(c.Command) == 0 && c.URL == "":
		return errors.New("set command (a server over stdio) or url (a server over streamable HTTP)")
	case c.OAuth != nil && c.URL == "":
		return errors.New("OAuth authorizes a server over HTTP; this one runs a command")
	}
	if c.LogLevel != "" && !ValidLogLevel(c.LogLevel) {
		return fmt.Errorf("unknown log level %q (one of %s)", c.LogLevel, strings.Join(logLevels, ", "))
	}
	for _, p := range slices.Concat(c.Allow, c.Deny) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("bad tool pattern %q: %v", p, err)
		}
	}
	return nil
}

// ErrCollision is in the chain of the error [Open] returns when a tool's
// name is taken: a problem of configuration, solved with a prefix or a
// deny pattern.
var ErrCollision = errors.New("tool name collision")

// Registry is what a pool needs of an engine; *lathe.Engine is one.
type Registry interface {
	Lookup(name string) (tool.Definition, bool)
	Replace(remove []string, add ...tool.Tool) error
}

// Options configure a [Pool]. The zero value is ready to use.
type Options struct {
	// Logger receives the servers' log messages that no call claims, and
	// reports of refreshes and restarts. Nil discards them.
	Logger *slog.Logger
	// Hooks answer what a server asks when the call that caused it carries
	// no hooks of its own (see [tool.Hooks]): the CLI sets an elicitor that
	// asks on the terminal.
	Hooks tool.Hooks
	// Adjust is applied to each tool before it is registered, first at Open
	// and again whenever a server's tools change; returning false leaves the
	// tool out. The CLI applies the [tools.NAME] tables of the config here.
	Adjust func(*tool.Tool) bool
	// OnChange is called after a server's tools were replaced in the
	// registry, after Open: the MCP server face sends tools/list_changed.
	OnChange func()
	// Stderr receives the standard error of servers run as commands; nil
	// keeps only its last lines, for error messages.
	Stderr io.Writer
	// Warn receives what costs part of the servers but not the pool: an
	// optional server that cannot be started, which is skipped, and a tool
	// that is left out (its definition or schema is bad), with the names of
	// its server and of the tool, at Open and whenever a server's tools are
	// listed again, from any goroutine. Nil logs them.
	Warn func(error)
	// OnClose is called once, when the pool has closed.
	OnClose func()
	// Cache, when set, keeps each server's tool list between runs: [Open]
	// registers the tools of a server it holds without starting the
	// server, which starts at the first call of one of its tools (see
	// [ToolCache]).
	Cache *ToolCache
	// RefreshCache starts every server, as if the cache held none of
	// them, and writes what they list to the cache.
	RefreshCache bool
	// StartCached starts the servers whose tools came from the cache in
	// the background once Open has registered them, rather than at their
	// first call: for a pool that serves for long, whose first calls
	// should not wait and whose servers may announce changes to their
	// tools.
	StartCached bool
	// Defer, when set, is asked at [Open] about each server whose tools
	// the cache does not hold; true leaves that server unstarted and its
	// tools unregistered, for a command that will not call them (see
	// [Pool.Deferred]). Nil starts every such server.
	Defer func(*Config) bool
}

// Pool holds the sessions of upstream servers and runs the calls of their
// tools. It is the [tool.Runtime] of every tool it registers; closing it ends
// every session and stops every server process.
//
// Ownership: when the registry [Open] registers in can own resources (it
// has an Own(io.Closer) error method, as a *lathe.Engine has), the pool is
// handed to it before Open returns, and closing the engine closes the pool,
// whether or not the pool holds a tool at that moment (its servers may list
// none yet, and must keep their sessions to list them later). Otherwise the
// one who opened the pool closes it. Close is idempotent.
type Pool struct {
	reg     Registry
	opts    Options
	servers []*server

	mu     sync.RWMutex
	routes map[string]route // lathe tool name → where it goes
	closed bool

	// surf routes resources, prompts, completion and logging (resources.go,
	// logging.go).
	surf surface
}

type route struct {
	srv      *server
	upstream string // the tool's name on its server
}

var (
	_ tool.Runtime     = (*Pool)(nil)
	_ tool.Closer      = (*Pool)(nil)
	_ tool.Cooperative = (*Pool)(nil)
)

// Cooperative reports true: a call returns as soon as its context ends (the
// SDK sends notifications/cancelled and stops waiting), so the engine may
// run it on the caller's goroutine.
func (p *Pool) Cooperative() bool { return true }

// Open registers the tools of the configured servers in reg, server by
// server in the order of cfgs. The tools of a server that [Options].Cache
// holds are registered from the cache, and the server starts at the first
// call of one of them; a server that [Options].Defer defers is neither
// started nor registered; the others are started, concurrently, and their
// tools listed (and cached). A required server that cannot be started, or
// a tool name that collides with one already registered, fails Open, which
// then stops everything it started; an optional server that cannot be
// started is passed to [Options.Warn] and skipped. With no error the pool
// belongs to the engine, or else to the caller; see [Pool].
func Open(ctx context.Context, reg Registry, cfgs []Config, opts Options) (*Pool, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{reg: reg, opts: opts, routes: map[string]route{}}
	seen := map[string]bool{}
	for i := range cfgs {
		c := cfgs[i]
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", c.Name, err)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("mcp server %s: configured twice", c.Name)
		}
		seen[c.Name] = true
		p.servers = append(p.servers, newServer(p, c))
	}

	errs := make([]error, len(p.servers))
	var wg sync.WaitGroup
	for i, s := range p.servers {
		if opts.Cache != nil && !opts.RefreshCache {
			tools, err := opts.Cache.load(s)
			if err == nil {
				s.tools, s.fromCache = tools, true
				continue
			}
			if !errors.Is(err, fs.ErrNotExist) {
				opts.Logger.Debug("cached MCP tool list not used", "server", s.cfg.Name, "error", err)
			}
		}
		if opts.Defer != nil && opts.Defer(&s.cfg) {
			s.deferred = true
			continue
		}
		wg.Go(func() {
			var sess *session
			sess, errs[i] = s.session(ctx)
			if errs[i] == nil && opts.Cache != nil && sess.cs != nil {
				// A server started to list its tools is listed besides
				// them, so that a gateway opened later need not start it
				// (surfacecache.go).
				s.rememberSurface(s.listSurface(ctx, sess))
			}
		})
	}
	wg.Wait()

	var failed []error
	for i, s := range p.servers {
		if errs[i] == nil {
			continue
		}
		err := fmt.Errorf("mcp server %s: %w", s.cfg.Name, errs[i])
		if !s.cfg.Optional {
			failed = append(failed, err)
			continue
		}
		if opts.Warn != nil {
			opts.Warn(fmt.Errorf("%w (optional, skipped)", err))
		} else {
			opts.Logger.Warn("optional MCP server skipped", "server", s.cfg.Name, "error", errs[i])
		}
		s.skipped = true
		s.close()
	}
	if len(failed) > 0 {
		p.Close()
		return nil, errors.Join(failed...)
	}
	for i, s := range p.servers {
		if errs[i] != nil || s.deferred {
			continue
		}
		if err := p.install(s, s.currentTools(), true); err != nil {
			p.uninstall()
			p.Close()
			return nil, err
		}
	}
	if o, ok := reg.(owner); ok {
		if err := o.Own(p); err != nil {
			return nil, err
		}
	}
	if opts.StartCached {
		for _, s := range p.servers {
			if s.currentFromCache() {
				s.startInBackground()
			}
		}
	}
	return p, nil
}

// owner is the ability of a registry to close what it is handed when it
// closes; see [Pool].
type owner interface {
	Own(io.Closer) error
}

// install replaces the tools of s in the registry with tools. At load time
// (strict) a name taken by another source is an error; later, when a server
// changes its tools, such a tool is left out with a warning, since there is
// no load left to fail.
func (p *Pool) install(s *server, tools []upTool, strict bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("mcp: the pool is closed")
	}
	var old []string
	for name, r := range p.routes {
		if r.srv == s {
			old = append(old, name)
		}
	}
	keep := make([]tool.Tool, 0, len(tools))
	next := map[string]route{}
	for _, ut := range tools {
		t, upstream := ut.tool, ut.upstream
		t.Definition.Name = s.cfg.prefix() + t.Definition.Name
		if p.opts.Adjust != nil && !p.opts.Adjust(&t) {
			continue
		}
		name := t.Definition.Name
		var clash string
		if r, mine := p.routes[name]; !mine || r.srv != s {
			if prev, taken := p.reg.Lookup(name); taken {
				clash = "the tool of that name from " + sourceName(prev.Source)
			}
		}
		if dup, ok := next[name]; ok {
			clash = fmt.Sprintf("upstream tool %q of the same server", dup.upstream)
		}
		if clash != "" {
			err := fmt.Errorf("mcp server %s: tool %q (upstream %q) collides with %s; give the server another prefix, or deny the tool (%w)",
				s.cfg.Name, name, upstream, clash, ErrCollision)
			if strict {
				return err
			}
			p.opts.Logger.Warn("tool left out", "error", err)
			continue
		}
		next[name] = route{srv: s, upstream: upstream}
		keep = append(keep, t)
	}
	if err := p.reg.Replace(old, keep...); err != nil {
		return fmt.Errorf("mcp server %s: %w", s.cfg.Name, err)
	}
	for _, n := range old {
		delete(p.routes, n)
	}
	maps.Copy(p.routes, next)
	return nil
}

func sourceName(src string) string {
	if src == "" {
		return "an unnamed source"
	}
	return src
}

// uninstall removes every tool of the pool from the registry.
func (p *Pool) uninstall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := slices.Collect(maps.Keys(p.routes))
	if err := p.reg.Replace(names); err != nil {
		p.opts.Logger.Warn("removing tools failed", "error", err)
	}
	clear(p.routes)
}

// refreshed is called by a server whose tools changed after Open.
func (p *Pool) refreshed(s *server, tools []upTool) {
	if err := p.install(s, tools, false); err != nil {
		p.opts.Logger.Warn("refreshing tools failed", "server", s.cfg.Name, "error", err)
		return
	}
	p.opts.Logger.Info("tools refreshed", "server", s.cfg.Name, "tools", len(tools))
	if p.opts.OnChange != nil {
		p.opts.OnChange()
	}
}

// Skipped returns the names of the optional servers that [Open] could not
// start and skipped.
func (p *Pool) Skipped() []string {
	var names []string
	for _, s := range p.servers {
		if s.skipped {
			names = append(names, s.cfg.Name)
		}
	}
	return names
}

// Deferred returns the names of the servers that [Options].Defer left
// unstarted and whose tools are not registered.
func (p *Pool) Deferred() []string {
	var names []string
	for _, s := range p.servers {
		if s.deferred {
			names = append(names, s.cfg.Name)
		}
	}
	return names
}

// Names returns the names under which the pool's tools are registered
// (or would be, for those that Adjust left out), sorted.
func (p *Pool) Names() []string {
	var names []string
	for _, s := range p.servers {
		for _, t := range s.currentTools() {
			names = append(names, s.cfg.prefix()+t.tool.Definition.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Execute runs a call on the server that owns the tool.
func (p *Pool) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	p.mu.RLock()
	r, ok := p.routes[def.Name]
	p.mu.RUnlock()
	if !ok {
		return nil, &tool.Error{Kind: tool.KindUnknownTool, Tool: def.Name, Runtime: RuntimeName, Stage: "execute",
			Message: "the MCP server no longer offers this tool"}
	}
	return r.srv.call(ctx, def, r.upstream, call)
}

// Close ends every session and stops every server process. It is safe to
// call more than once.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range p.servers {
		wg.Go(s.close)
	}
	wg.Wait()
	if p.opts.OnClose != nil {
		p.opts.OnClose()
	}
	return nil
}

// summaryOf is the first line of a description, cut to a length a list
// shows well.
func summaryOf(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	line = strings.TrimSpace(line)
	const limit = 160
	if r := []rune(line); len(r) > limit {
		line = string(r[:limit-1]) + "…"
	}
	return line
}
