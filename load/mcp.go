package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/internal/linelog"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/tool"
)

// DefaultPingInterval is how long an upstream server of a long-lived
// engine ([Options].LongLived) may sit idle before it is pinged, where its
// [mcp.NAME] table sets no ping_interval.
const DefaultPingInterval = 30 * time.Second

// oneShotExitGrace is how long a server has to exit on its own, once its
// input is closed, at the end of a one-shot command before it is sent
// SIGTERM: the command's work is done, and a person waits for the prompt.
const oneShotExitGrace = 100 * time.Millisecond

// loadMCP registers the tools of the [mcp.NAME] servers of the
// configuration, marking their names known for cfg.Unused: from the tool
// cache, without starting the server, when it holds them (the server then
// starts at the first call of one of its tools), else by starting the
// server and listing them. With [Options].Need, a server whose tools are
// not cached and that cannot hold a needed tool is not started at all. The
// pool, once open, belongs to the engine: closing it closes the pool, even
// when the pool holds no tool (a server may list tools later).
func (w *Workspace) loadMCP(ctx context.Context, opts *Options, known map[string]bool) error {
	cfg, ws := w.Config, w.Dir
	servers, err := cfg.MCPServers(os.LookupEnv)
	if err != nil {
		return &ConfigError{err}
	}
	var skipped, unneeded []config.MCPServer
	cfgs := make([]mcp.Config, 0, len(servers))
	for _, s := range servers {
		if s.Unavailable != nil {
			opts.warn(fmt.Errorf("%w (optional, skipped)", s.Unavailable))
			skipped = append(skipped, s)
			continue
		}
		dir := s.Cwd
		if dir == "" {
			dir = ws
		} else if !filepath.IsAbs(dir) {
			dir = filepath.Join(ws, dir)
		}
		ping, grace := time.Duration(0), oneShotExitGrace
		if opts.LongLived {
			ping, grace = DefaultPingInterval, 0
			if s.PingInterval != nil {
				ping = *s.PingInterval
			}
		}
		c := mcp.Config{
			Name: s.Name, Command: s.Command, Env: s.Env, PassEnv: s.Permissions.Env, Dir: dir,
			URL: s.URL, Headers: s.Headers, Prefix: s.Prefix, Allow: s.Allow, Deny: s.Deny,
			Timeout: s.Timeout, StartupTimeout: s.StartupTimeout, Optional: s.Optional, LogLevel: s.LogLevel,
			NoResources: s.Resources != nil && !*s.Resources, NoPrompts: s.Prompts != nil && !*s.Prompts,
			Sandbox: mcpSandbox(cfg, s, ws, dir), PingInterval: ping, ExitGrace: grace,
		}
		if s.URL != "" {
			// The stored token of lathe auth login, if any (see oauth.go).
			if h := oauthHandler(ws, s, opts.warn); h != nil {
				c.OAuth = h
			}
		}
		cfgs = append(cfgs, c)
	}
	defer func() {
		skippedTables(cfg, skipped, known, opts.warn)
		skippedTables(cfg, unneeded, known, func(error) {})
	}()
	if len(cfgs) == 0 {
		return nil
	}
	mo := mcp.Options{
		Hooks:  fallbackHooks(opts.Hooks),
		Adjust: cfg.Apply,
		Warn:   opts.warn,
		Logger: opts.Logger,
		Cache:  w.toolCache(opts),

		// A server whose lists are cached starts at its first use, even
		// under lathe serve: a gateway that started every server at once
		// would cost their memory and start-up for servers no client uses.
		RefreshCache: opts.RefreshToolCache,
	}
	if opts.Need != nil {
		mo.Defer = func(c *mcp.Config) bool { return !w.mayHold(c, opts.Need) }
	}
	if opts.Logger != nil {
		// A writer per server: its lines name it, and two servers'
		// partial lines never run together.
		for i := range cfgs {
			cfgs[i].Stderr = logWriter(opts.Logger.With("server", cfgs[i].Name), "MCP server stderr")
		}
	}
	pool, err := mcp.Open(ctx, w.Engine, cfgs, mo)
	if errors.Is(err, mcp.ErrCollision) {
		return &ConfigError{err}
	}
	if err != nil {
		return &tool.Error{Kind: tool.KindRuntimeFailure, Stage: "load", Err: err}
	}
	// A deferred server's tools are as unknown as a skipped one's, and
	// its [tools.NAME] tables are accepted alike, without a warning: the
	// server is not broken, only not needed.
	deferred := pool.Deferred()
	for _, name := range slices.Concat(pool.Skipped(), deferred) {
		if i := slices.IndexFunc(servers, func(s config.MCPServer) bool { return s.Name == name }); i >= 0 {
			if slices.Contains(deferred, name) {
				unneeded = append(unneeded, servers[i])
			} else {
				skipped = append(skipped, servers[i])
			}
		}
	}
	for _, n := range pool.Names() {
		known[n] = true
	}
	w.MCP = pool
	return nil
}

// mayHold reports whether the server c may hold one of the tools need
// names: a name begins with its prefix and is no tool the engine holds
// already (a builtin or local tool, which the server could only collide
// with).
func (w *Workspace) mayHold(c *mcp.Config, need []string) bool {
	prefix := c.Name + "__"
	if c.Prefix != nil {
		prefix = *c.Prefix
	}
	for _, n := range need {
		if _, ok := w.Engine.Lookup(n); ok {
			continue
		}
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// ToolCacheDir returns where the tool lists of upstream servers are
// cached: $LATHE_CACHE_DIR/mcp, or lathe/mcp in the user's cache
// directory; "" when there is no such place.
func ToolCacheDir() string {
	if dir := os.Getenv(process.CacheDirEnv); dir != "" {
		return filepath.Join(dir, "mcp")
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "lathe", "mcp")
}

// toolCache returns the cache of upstream tool lists, or nil when there is
// none to use. A cache inside the workspace is refused, with a warning: a
// tool may write there, and the cache says what tools are offered and what
// they claim to do.
func (w *Workspace) toolCache(opts *Options) *mcp.ToolCache {
	dir := ToolCacheDir()
	if dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	if in, err := statedir.Inside(dir, w.Dir); err != nil || in {
		opts.warn(fmt.Errorf("the MCP tool cache %s is inside the workspace, where tools may write; upstream servers are started to list their tools instead", dir))
		return nil
	}
	return mcp.NewToolCache(dir)
}

// fallbackHooks answer what a server asks when the call that caused it
// brings no hooks of its own: with h, or with an error that says nobody can
// answer.
func fallbackHooks(h tool.Hooks) tool.Hooks {
	out := h
	if out.Elicit == nil {
		out.Elicit = func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			return nil, fmt.Errorf("the tool asks for input (%s), and nobody can answer it here (no terminal to ask on, no client that answers)", r.Message)
		}
	}
	if out.Sample == nil {
		out.Sample = func(context.Context, *tool.SamplingRequest) (*tool.SamplingResult, error) {
			return nil, errors.New("the tool asks for a model's completion, and nobody can answer it here (no terminal to ask on, no client that answers)")
		}
	}
	return out
}

// skippedTables accepts, with a warning, each [tools.NAME] table that names
// no known tool but would name one of a skipped optional server, under its
// prefix: which tools such a server has cannot be known, and a server lathe
// can do without must not stop it by its absence.
func skippedTables(cfg *config.Config, skipped []config.MCPServer, known map[string]bool, warn func(error)) {
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		if known[name] {
			continue
		}
		for _, s := range skipped {
			if strings.HasPrefix(name, s.ToolPrefix()) {
				known[name] = true
				warn(fmt.Errorf("%s: [tools.%s] is not checked: it may name a tool of the optional MCP server %s, which is skipped",
					cfg.Tools[name].Pos, name, s.Name))
				break
			}
		}
	}
}

// logWriter returns a writer that logs each line written to it at debug
// level, as msg with the line as "line"; an unfinished line past
// maxLogLine is logged in pieces (linelog.New).
func logWriter(l *slog.Logger, msg string) io.Writer {
	return linelog.New(maxLogLine, func(line []byte) { l.Debug(msg, "line", string(line)) })
}

// maxLogLine bounds a line kept before it is logged: a process that writes
// no newline cannot make lathe hold its whole output.
const maxLogLine = 4 << 10
