package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/trust"
)

// openEngine opens the workspace and returns the engine holding the tools
// its configuration enables. The caller closes the engine; Run closes the
// rest of the workspace (the MCP pool, the audit database) when the
// command ends.
func (g *globals) openEngine() (*lathe.Engine, error) {
	w, err := g.openWorkspace(context.Background())
	if err != nil {
		return nil, err
	}
	return w.Engine, nil
}

// lookupTool opens the workspace and finds the tool name in it. What lathe
// makes of the tool is worked out from w.Config, the configuration the
// engine was built from: the files are read once.
func (g *globals) lookupTool(ctx context.Context, name string) (*load.Workspace, tool.Definition, error) {
	w, err := g.openWorkspace(ctx)
	if err != nil {
		return nil, tool.Definition{}, err
	}
	d, ok := w.Engine.Lookup(name)
	if !ok {
		return nil, tool.Definition{}, w.Engine.UnknownTool(name)
	}
	return w, d, nil
}

// openWorkspace opens the workspace through the loader with what the
// command line and the terminal give it: the person answers approvals,
// questions of upstream servers and, under trustAsk, trust.
func (g *globals) openWorkspace(ctx context.Context) (*load.Workspace, error) {
	opts := g.loadOptions(g.trust)
	opts.Tools = g.extra
	opts.Approver = g.approver
	opts.Fallback = g.fallback
	opts.Middleware = g.middleware
	opts.Hooks = g.hooks
	opts.Logger = g.logger()
	opts.Need = g.need
	opts.LongLived = g.longLived
	opts.RefreshToolCache = g.refresh
	opts.Dispatch = g.dispatch
	opts.Serving = g.serving
	stages, err := g.telemetryStages(ctx)
	if err != nil {
		return nil, err
	}
	opts.Stages = stages
	w, err := load.Open(ctx, opts)
	if err != nil {
		return nil, g.loadError(err)
	}
	g.reportUntrusted(w)
	g.mu.Lock()
	g.opened = append(g.opened, w)
	g.mu.Unlock()
	return w, nil
}

// closeWorkspaces closes every workspace the command opened.
func (g *globals) closeWorkspaces() {
	g.mu.Lock()
	ws := g.opened
	g.opened = nil
	g.mu.Unlock()
	for _, w := range ws {
		w.Close()
	}
}

// loadOptions are the loader's options for the workspace and config flags
// and the trust mode: the terminal asks only under trustAsk, and only
// when there is one.
func (g *globals) loadOptions(mode trustMode) load.Options {
	opts := load.Options{
		Dir:          g.workspace,
		Config:       g.config,
		RequireTrust: mode == trustRefuse,
		Warn:         func(err error) { fmt.Fprintln(g.streams.Err, "lathe: warning:", err) },
	}
	if mode == trustAsk && isTerminal(g.streams.In) {
		opts.Trust = func(_ context.Context, u load.Untrusted) (bool, error) {
			// A changed file shows what changed; a new one, what it
			// would do (lathe trust shows the whole of it).
			showPending(g.streams.Err, u.File, u.Status, u.Widenings, u.Diff)
			return confirm(g.streams.In, g.streams.Err, "Trust "+trust.Visible(u.File)+"?")
		}
	}
	return opts
}

// readWorkspace reads the configuration of the workspace and applies of
// each workspace file what its trust allows, saying on standard error what
// was left out; it starts nothing, and the Workspace has no engine.
func (g *globals) readWorkspace(mode trustMode) (*load.Workspace, error) {
	w, err := load.ReadConfig(context.Background(), g.loadOptions(mode))
	if err != nil {
		return nil, g.loadError(err)
	}
	g.addUntrustedTools(w)
	g.reportUntrusted(w)
	return w, nil
}

// loadConfig is [globals.readWorkspace] of the workspace ws: the merged
// configuration, and the files trust left out.
func (g *globals) loadConfig(ws string, mode trustMode) (*config.Config, []load.Untrusted, error) {
	opts := g.loadOptions(mode)
	opts.Dir = ws
	w, err := load.ReadConfig(context.Background(), opts)
	if err != nil {
		return nil, nil, g.loadError(err)
	}
	g.addUntrustedTools(w)
	g.reportUntrusted(w)
	return w.Config, w.Untrusted, nil
}

// addUntrustedTools adds the tool files trust leaves out to w.Untrusted:
// ReadConfig builds no engine, so it does not look at them, and a command
// that reads only the configuration says what trust leaves out as one that
// loads the tools does.
func (g *globals) addUntrustedTools(w *load.Workspace) {
	u, err := w.UntrustedTools()
	if err != nil {
		fmt.Fprintln(g.streams.Err, "lathe: warning:", err)
	}
	w.Untrusted = append(w.Untrusted, u...)
}

// reportUntrusted says what trust left out of w, and how to trust it.
func (g *globals) reportUntrusted(w *load.Workspace) {
	if len(w.Untrusted) == 0 {
		return
	}
	for _, u := range w.Untrusted {
		fmt.Fprintf(g.streams.Err, "lathe: %s is %s; lathe left out what it would do:\n", trust.Visible(u.File), u.Status)
		writeWidenings(g.streams.Err, u.Widenings)
	}
	fmt.Fprintf(g.streams.Err, "lathe: read it, then run: %s\n", g.trustCommand(w.Dir, w.Untrusted))
}

// loadError maps the loader's errors to the CLI's, which carry the exit
// codes.
func (g *globals) loadError(err error) error {
	var (
		ce *load.ConfigError
		te *load.TrustError
		we *load.WorkspaceError
	)
	switch {
	case errors.As(err, &ce):
		return &configError{ce.Err}
	case errors.As(err, &te):
		if len(te.Untrusted) == 0 {
			return &untrustedError{te.Err}
		}
		var sb strings.Builder
		for _, u := range te.Untrusted {
			fmt.Fprintf(&sb, "%s is %s, and it would:\n", trust.Visible(u.File), u.Status)
			writeWidenings(&sb, u.Widenings)
		}
		ws, _ := g.workspaceDir()
		fmt.Fprintf(&sb, "read it, then run: %s", g.trustCommand(ws, te.Untrusted))
		return &untrustedError{errors.New("the workspace configuration needs your trust before lathe serves it: " + sb.String())}
	case errors.As(err, &we):
		return &usageError{we.Err}
	}
	return err
}

// workspaceDir returns the workspace's absolute path: --workspace, checked
// to be a directory, else the one found from the current directory
// (load.Find).
func (g *globals) workspaceDir() (string, error) {
	if g.workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		ws, err := load.Find(wd)
		if err != nil {
			return "", g.loadError(err)
		}
		return ws, nil
	}
	ws, err := filepath.Abs(g.workspace)
	if err != nil {
		return "", &usageError{err}
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return "", &usageError{fmt.Errorf("workspace %s is not a directory", ws)}
	}
	return ws, nil
}

// logEnv names the variable that, set to debug, turns on lathe's log as
// --verbose does.
const logEnv = "LATHE_LOG"

// logger returns lathe's log, written to standard error at debug level
// under --verbose or LATHE_LOG=debug, or nil (no log) otherwise: call
// records, the standard error of process tools and of upstream servers,
// and the servers' log messages.
func (g *globals) logger() *slog.Logger {
	level, on := slog.LevelDebug, g.verbose
	switch strings.ToLower(os.Getenv(logEnv)) {
	case "debug":
		on = true
	case "info":
		level, on = slog.LevelInfo, true
	case "warn":
		level, on = slog.LevelWarn, true
	}
	if g.verbose {
		level = slog.LevelDebug
	}
	if !on {
		return nil
	}
	return slog.New(slog.NewTextHandler(g.streams.Err, &slog.HandlerOptions{Level: level}))
}
