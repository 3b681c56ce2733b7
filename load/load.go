// Package load builds the engine a workspace describes, the same engine the
// lathe command builds from the same files.
//
// A workspace is a directory, usually a repository, whose lathe.toml says
// which tools its agents get: the standard tools (files, search,
// run_command), local tools (a program with declared parameters, or a
// binary that describes its own tools), the tools of upstream MCP servers,
// the policy that says which calls need a person's approval, the audit log,
// and the sandbox the programs run in. The user's own file
// ($XDG_CONFIG_HOME/lathe/config.toml) is merged underneath.
//
// # Opening a workspace
//
// [Open] reads the configuration, checks trust, and returns a [Workspace]
// whose Engine holds every tool:
//
//	ws, err := load.Open(ctx, load.Options{Dir: "/path/to/repo"})
//	if err != nil {
//		return err
//	}
//	defer ws.Close()
//	out := ws.Engine.Call(ctx, &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"go.mod"}`)})
//
// An empty [Options].Dir finds the workspace as git does: from the current
// directory up to the nearest directory that holds a lathe.toml or is a
// repository root (see [Find]).
//
// # Trust
//
// A workspace file that starts programs (local tools, MCP servers), lets
// calls run without asking, or loosens the sandbox is code: it applies only
// once a person has trusted it, by content hash, and again after every
// change (the lathe trust command records that). Until then [Open] applies
// only the part of it that narrows what lathe allows and lists the rest in
// [Workspace].Untrusted. [Options].Trust is asked, per file, whether to
// trust it now; [Options].RequireTrust makes a file left out an error
// instead, for a server that must not run with part of its tools.
//
// JavaScript and TypeScript tool files (in .lathe/tools of the workspace,
// the user's tools directory and the configuration's tools_dirs; see
// docs/js.md) are code too: a tool runs, and is even described, only once
// a person has trusted its file with every file its code is built from.
// Until then it is left out and listed in [Workspace].Untrusted.
//
// # Questions and approvals
//
// A call the policy says to ask about goes to [Options].Approver; without
// one, ask means deny. What an upstream MCP server asks (elicitation,
// sampling) goes to the hooks of the call that caused it, else to
// [Options].Hooks.
//
// # Ownership
//
// The [Workspace] owns what Open started: the engine, the runtimes of its
// tools, the pool of upstream MCP servers and the audit database. Close
// releases them all; the engine must not be used afterwards.
package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
	"github.com/lathe-tools/lathe/tools/command"
	"github.com/lathe-tools/lathe/trust"
)

// Options configure [Open]. The zero value opens the workspace found from
// the current directory, trusts nothing new, and asks no one.
type Options struct {
	// Dir is the workspace's directory. Empty means the one [Find] finds
	// from the current directory.
	Dir string
	// Config is a configuration file to read instead of DIR/lathe.toml.
	Config string
	// Tools are builtin tools registered beside the standard ones, under
	// the same [tools.NAME] tables and policy.
	Tools []tool.Tool
	// Approver answers the calls the policy says to ask about. Nil means
	// there is no one to ask, and ask means deny.
	Approver policy.Approver
	// Fallback answers, in place of a caller that cannot (no approver,
	// no elicitation), while the call waits: [policy.Options].Fallback.
	Fallback policy.Approver
	// Middleware are stages of one's own, run before the policy's.
	Middleware []lathe.Middleware
	// Hooks answer what an upstream MCP server asks (elicitation,
	// sampling) and hear its progress, when the call that caused it brings
	// no hooks of its own. The zero value answers no question.
	Hooks tool.Hooks
	// Trust is asked, once per workspace file that needs a person's trust
	// and lacks it, whether to trust it now; true records the trust (the
	// file's SHA-256, outside the workspace) and applies the whole file. Nil
	// trusts nothing.
	Trust func(ctx context.Context, u Untrusted) (bool, error)
	// RequireTrust makes a file left out for want of trust an error (a
	// [*TrustError]) rather than a partial configuration.
	RequireTrust bool
	// Warn receives what costs part of the configuration and not the
	// rest: a local tool whose binary described a bad schema, an optional
	// MCP server that cannot start, a policy rule of the user's file that
	// names no tool here. Nil drops them.
	Warn func(error)
	// Logger receives lathe's log: call records, the standard error of
	// process tools and of upstream servers, the servers' own log messages.
	// Nil discards it.
	Logger *slog.Logger
	// Need, when not nil, names the only tools the caller will call (lathe
	// call NAME): an upstream server whose tool list is not cached is then
	// started only if a needed name begins with its prefix, and is
	// otherwise left out, its tools unregistered. Nil registers every
	// server's tools, starting those the cache does not hold.
	Need []string
	// LongLived says the engine serves for long (lathe serve): idle
	// upstream servers
	// are pinged, every ping_interval of their [mcp.NAME] table or
	// [DefaultPingInterval], and restarted when they do not answer. A
	// one-shot command leaves it false and pings nothing.
	LongLived bool
	// Stages, if set, is given the configuration and the engine's own
	// stages, outer (the audit log) and inner (the policy), and returns
	// those the engine is built with: how a program adds stages of its own
	// around them, as lathe's CLI adds package telemetry's spans. Nil
	// builds the engine with lathe's stages alone.
	Stages func(cfg *config.Config, outer, inner []lathe.Middleware) ([]lathe.Middleware, []lathe.Middleware, error)
	// RefreshToolCache starts every upstream server to list its tools, as
	// if none were cached, and caches what they list (lathe list
	// --refresh).
	RefreshToolCache bool
	// Dispatch returns what reaches the workers of the queues that tools
	// are routed to (queue = "NAME" in a [tools.NAME], [toolsets.NAME] or
	// [mcp.NAME] table), for the configuration's [temporal] table. It is
	// called only when something is routed; the engine closes what it
	// returns, if that is an io.Closer. Nil makes a route a configuration
	// error.
	Dispatch func(ctx context.Context, cfg *config.Config) (Dispatcher, error)
	// Serving names the queue this engine serves (lathe worker --queue
	// NAME): what is routed to it runs here, so that the callers and the
	// workers of a queue can share one configuration.
	Serving string
}

// Untrusted is a workspace file that needs a person's trust and lacks it.
type Untrusted struct {
	// File is the file's path.
	File string
	// Status says whether it was never trusted or changed since.
	Status trust.Status
	// Widenings are what it would do beyond what lathe allows untrusted.
	Widenings []config.Widening
	// Diff shows what changed since the file was trusted; for a file never
	// trusted it is empty.
	Diff string
}

// Workspace is an opened workspace: its configuration, and the engine that
// holds its tools.
type Workspace struct {
	// Dir is the workspace's absolute path.
	Dir string
	// Config is the merged configuration, as trust let it apply.
	Config *config.Config
	// Untrusted lists the files whose widening part was left out for want
	// of trust.
	Untrusted []Untrusted
	// Engine holds the tools. It is nil for a Workspace from [ReadConfig].
	Engine *lathe.Engine
	// MCP is the pool of the [mcp.NAME] servers, which the engine owns;
	// nil when none is configured. An MCP server face offers their
	// resources and prompts through it (server.Options.Upstream).
	MCP *mcp.Pool
	// Declared holds, by tool name, what each confined tool (runtime vfs
	// or wasm) declared it needs of the host API in its self-description:
	// shown to the person (lathe describe), never granted.
	Declared map[string]host.Permissions

	store  *lazyStore
	remote *remote

	mu     sync.Mutex
	closed bool
}

// ConfigError reports an invalid configuration. Its message names each
// problem's file and line.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// TrustError reports a configuration that needs trust where
// [Options].RequireTrust refuses to go without it (Untrusted lists the
// files), or a trust store that cannot be used.
type TrustError struct {
	Untrusted []Untrusted
	Err       error
}

func (e *TrustError) Error() string { return e.Err.Error() }
func (e *TrustError) Unwrap() error { return e.Err }

// WorkspaceError reports a workspace directory that cannot be used: it
// does not exist, is not a directory, or was found by [Find] in a place
// another user controls.
type WorkspaceError struct {
	Dir string
	Err error
}

func (e *WorkspaceError) Error() string { return e.Err.Error() }
func (e *WorkspaceError) Unwrap() error { return e.Err }

// Open builds the engine the workspace describes. See the package
// documentation for what it holds. The caller closes the Workspace.
func Open(ctx context.Context, opts Options) (*Workspace, error) {
	w, pending, err := readConfig(ctx, &opts)
	if err != nil {
		return nil, err
	}
	if err := w.build(ctx, &opts, pending); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// ReadConfig reads and merges the workspace's configuration under the same
// trust rules as [Open], without starting anything: for commands that only
// read it. The returned Workspace has no Engine; closing it is not needed.
func ReadConfig(ctx context.Context, opts Options) (*Workspace, error) {
	w, _, err := readConfig(ctx, &opts)
	return w, err
}

// dir returns the absolute path of the workspace opts name: opts.Dir, or
// the one [Find] finds from the current directory. It checks that the
// path is a directory.
func (opts *Options) dir() (string, error) {
	dir := opts.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", &WorkspaceError{Err: err}
		}
		return Find(wd)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", &WorkspaceError{Dir: opts.Dir, Err: err}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", &WorkspaceError{Dir: dir, Err: fmt.Errorf("workspace %s is not a directory", dir)}
	}
	return dir, nil
}

// build registers the tools of w.Config in a new engine.
func (w *Workspace) build(ctx context.Context, opts *Options, pending []config.Pending) error {
	cfg := w.Config
	// The workspace handle lives as long as the engine: its batches
	// resolve paths through it.
	outer, inner, err := w.policyStages(opts)
	if err != nil {
		return err
	}
	if opts.Stages != nil {
		if outer, inner, err = opts.Stages(cfg, outer, inner); err != nil {
			return err
		}
	}
	// What is routed to a queue does not run here: the loaders below see
	// a configuration without it, and loadRemote registers it from the
	// queue.
	routes := cfg.Routes(opts.Serving)
	if len(routes) > 0 {
		w.Config = withoutRoutes(cfg, routes)
		defer func() { w.Config = cfg }()
	}
	root, err := tools.NewWorkspace(w.Dir)
	if err != nil {
		return &WorkspaceError{Dir: w.Dir, Err: err}
	}
	e := lathe.New(lathe.Options{
		Outer:          outer,
		Middleware:     inner,
		Timeout:        cfg.Defaults.Timeout,
		MaxOutputBytes: cfg.Defaults.MaxOutputBytes,
		Logger:         opts.Logger,
		Batch: lathe.BatchConfig{
			MaxConcurrency: cfg.Batch.MaxConcurrency,
			MaxPerTool:     cfg.Batch.MaxPerTool,
			MaxPerServer:   cfg.Batch.MaxPerServer,
			ResolvePath:    root.Resolve,
		},
	})
	w.Engine = e
	// The engine closes the workspace handle, and so its descriptor of the
	// workspace, with itself; the standard tools share it.
	if err := e.Own(root); err != nil {
		return err
	}
	std, err := tools.Standard(w.Dir, tools.Options{Describe: e.Lookup, Declaration: declaration(e, cfg), Workspace: root})
	if err != nil {
		return err
	}
	rc, err := command.New(w.Dir, *commandSandbox(cfg, w.Dir))
	if err != nil {
		return err
	}
	std = append(std, rc)
	all := append(std, opts.Tools...)
	known := make(map[string]bool, len(all)+1)
	for _, t := range all {
		known[t.Definition.Name] = true
		if !cfg.Apply(&t) {
			continue
		}
		if err := e.Register(t); err != nil {
			return err
		}
	}
	if err := registerRunCode(e, cfg, known); err != nil {
		return err
	}
	if err := w.loadLocal(ctx, opts, known); err != nil {
		return err
	}
	if err := w.loadJS(ctx, opts, known); err != nil {
		return err
	}
	if err := w.loadMCP(ctx, opts, known); err != nil {
		return err
	}
	if err := w.loadRemote(ctx, opts, cfg, routes, known); err != nil {
		return err
	}
	untrusted := leftOut(cfg, pending)
	if err := cfg.Unused(func(name string) bool { return known[name] || untrusted(name) }); err != nil {
		return &ConfigError{err}
	}
	return w.checkRules(opts, known, len(pending) > 0)
}

// Close closes the engine, which stops the runtimes of its tools, the pool
// of upstream MCP servers, and the audit database if a call opened it.
// Calls in flight end first. Close is safe to call more than once.
func (w *Workspace) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	var errs []error
	if w.Engine != nil {
		errs = append(errs, w.Engine.Close())
	}
	if w.store != nil {
		errs = append(errs, w.store.close())
	}
	return errors.Join(errs...)
}

// Audit returns the workspace's audit log, opening it at its first use;
// an error when the configuration keeps none ([audit] enable = false).
func (w *Workspace) Audit() (*audit.Store, error) {
	if w.store == nil {
		return nil, errors.New("the configuration keeps no audit log ([audit] enable = false)")
	}
	return w.store.get()
}

// AuditPath returns the audit database the configuration names, whether
// or not it exists yet.
func (w *Workspace) AuditPath() string { return auditPath(w.Config, w.Dir) }

func (opts *Options) warn(err error) {
	if opts.Warn != nil {
		opts.Warn(err)
	}
}
