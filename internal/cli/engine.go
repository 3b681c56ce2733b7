package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tools"
	"github.com/lathe-tools/lathe/tools/command"
)

// openEngine loads the configuration of the workspace and returns an engine
// holding the tools it enables. The caller closes the engine.
func (g *globals) openEngine() (*lathe.Engine, error) {
	ws, err := g.workspaceDir()
	if err != nil {
		return nil, err
	}
	// Settings of the workspace that start programs or widen what is
	// allowed apply only once a person has trusted the file (trust.go).
	cfg, pending, err := g.loadConfig(ws, g.trust)
	if err != nil {
		return nil, err
	}
	// The workspace handle lives as long as the process: the engine's
	// batches resolve paths through it for as long as the engine serves.
	w, err := tools.NewWorkspace(ws)
	if err != nil {
		return nil, &usageError{err}
	}
	outer, inner, err := g.policyStages(cfg, ws)
	if err != nil {
		return nil, err
	}
	e := lathe.New(lathe.Options{
		Outer:          outer,
		Middleware:     inner,
		Timeout:        cfg.Defaults.Timeout,
		MaxOutputBytes: cfg.Defaults.MaxOutputBytes,
		Batch: lathe.BatchConfig{
			MaxConcurrency: cfg.Batch.MaxConcurrency,
			MaxPerTool:     cfg.Batch.MaxPerTool,
			MaxPerServer:   cfg.Batch.MaxPerServer,
			ResolvePath:    w.Resolve,
		},
	})
	std, err := tools.Standard(ws, tools.Options{Describe: e.Lookup})
	if err != nil {
		e.Close()
		return nil, err
	}
	rc, err := command.New(ws, *commandSandbox(cfg, ws))
	if err != nil {
		e.Close()
		return nil, err
	}
	std = append(std, rc)
	all := append(std, g.extra...)
	known := make(map[string]bool, len(all))
	for _, t := range all {
		known[t.Definition.Name] = true
		if !cfg.Apply(&t) {
			continue
		}
		if err := e.Register(t); err != nil {
			e.Close()
			return nil, err
		}
	}
	if err := g.loadLocal(e, cfg, ws, known); err != nil {
		e.Close()
		return nil, err
	}
	if err := g.loadMCP(e, cfg, ws, known); err != nil {
		e.Close()
		return nil, err
	}
	untrusted := leftOut(cfg, pending)
	if err := cfg.Unused(func(name string) bool { return known[name] || untrusted(name) }); err != nil {
		e.Close()
		return nil, &configError{err}
	}
	if err := g.checkRules(e, cfg, known, len(pending) > 0); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// workspaceDir returns the workspace's absolute path, checked to be a
// directory.
func (g *globals) workspaceDir() (string, error) {
	ws := g.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		ws = wd
	}
	ws, err := filepath.Abs(ws)
	if err != nil {
		return "", &usageError{err}
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return "", &usageError{fmt.Errorf("workspace %s is not a directory", ws)}
	}
	return ws, nil
}
