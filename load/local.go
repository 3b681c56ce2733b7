package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
)

// describeTimeout bounds asking one binary for its schema while loading.
const describeTimeout = 30 * time.Second

// loadLocal registers the local tools of the configuration: each
// [tools.NAME] table with a command, and every tool each [toolsets.NAME]
// binary describes, with its [tools.NAME] table applied. It marks their
// names known for cfg.Unused. Problems of the configuration, a binary that
// does not describe itself among them, are config errors naming the file
// and line.
func (w *Workspace) loadLocal(ctx context.Context, opts *Options, known map[string]bool) error {
	cfg, e := w.Config, w.Engine
	if len(cfg.Toolsets) == 0 && !slices.ContainsFunc(slices.Collect(maps.Values(cfg.Tools)), hasLocalKeys) {
		return nil
	}
	if err := cfg.CheckLocal(); err != nil {
		return &ConfigError{err}
	}
	l := &localLoader{ctx: ctx, cfg: cfg, ws: w.Dir, log: opts.Logger, cache: process.NewCache(process.DefaultCacheDir())}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		if t := cfg.Tools[name]; t.IsLocal() {
			errs = append(errs, l.tool(name, t))
		}
	}
	for _, s := range cfg.EnabledToolsets() {
		errs = append(errs, l.toolset(s))
	}
	// Parameters, options and env mean nothing to a tool that is not local.
	for _, name := range slices.Sorted(maps.Keys(cfg.Tools)) {
		t := cfg.Tools[name]
		if known[name] && !l.local[name] && hasLocalKeys(t) && !runCodeOptions(name, t) {
			errs = append(errs, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
				"[tools.%s] parameters, options and env apply to local tools, and %s is a %s tool", name, name, sourceOf(e, name))})
		}
	}
	// The engine closes the WASM runtime and the hosts of the confined
	// tools (their workspace descriptors) with itself, after the tools.
	owned := l.hosts
	if l.wasm != nil {
		owned = append([]io.Closer{l.wasm}, owned...)
	}
	for _, c := range owned {
		if err := e.Own(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := joinByPos(errs); err != nil {
		closeAll(l.tools)
		return &ConfigError{err}
	}
	w.Declared = l.declared
	for _, name := range slices.Sorted(maps.Keys(l.dropped)) {
		known[name] = true
		opts.warn(l.dropped[name])
	}
	for i, t := range l.tools {
		known[t.Definition.Name] = true
		if !cfg.Apply(&t) {
			t.Runtime.(tool.Closer).Close()
			continue
		}
		if err := e.Register(t); err != nil {
			closeAll(l.tools[i:])
			return &ConfigError{&config.Error{Pos: l.pos[t.Definition.Name], Msg: strings.TrimPrefix(err.Error(), "lathe: ")}}
		}
	}
	return nil
}

// joinByPos joins the errors in the order of their places in the files.
func joinByPos(errs []error) error {
	var flat []error
	for _, err := range errs {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			flat = append(flat, j.Unwrap()...)
		} else if err != nil {
			flat = append(flat, err)
		}
	}
	slices.SortStableFunc(flat, func(a, b error) int {
		var ea, eb *config.Error
		if !errors.As(a, &ea) || !errors.As(b, &eb) {
			return 0
		}
		return cmp.Or(cmp.Compare(ea.Pos.File, eb.Pos.File), cmp.Compare(ea.Pos.Line, eb.Pos.Line))
	})
	return errors.Join(flat...)
}

func hasLocalKeys(t *config.Tool) bool {
	return t != nil && (t.IsLocal() || t.Parameters != nil || t.Options != nil || t.Env != nil || t.Shell || t.Runtime != "")
}

func closeAll(tools []tool.Tool) {
	for _, t := range tools {
		if c, ok := t.Runtime.(tool.Closer); ok {
			c.Close()
		}
	}
}

func sourceOf(e *lathe.Engine, name string) string {
	if d, ok := e.Lookup(name); ok && d.Source != "" {
		return d.Source
	}
	return "builtin"
}

// localLoader builds the local tools of one configuration.
type localLoader struct {
	ctx   context.Context
	cfg   *config.Config
	ws    string
	log   *slog.Logger
	cache *process.Cache
	tools []tool.Tool
	local map[string]bool       // names of the tools built
	pos   map[string]config.Pos // where each was configured
	// wasm runs the WASM tools, made with the first; the engine owns it.
	wasm  *wasm.Runtime
	hosts []io.Closer
	// dropped holds, by name, the tools left out because what their binary
	// said of them is unusable.
	dropped map[string]error
	// declared holds what confined tools declared they need (declare).
	declared map[string]host.Permissions
}

// leaveOut records that the tool name is left out, and why. A binary's
// description is its own answer, not the configuration: a bad one, hostile
// or mistaken, costs that one tool and never the others or the process,
// and the warning says why.
func (l *localLoader) leaveOut(name string, pos config.Pos, table string, why error) {
	if l.dropped == nil {
		l.dropped = map[string]error{}
	}
	l.dropped[name] = &config.Error{Pos: pos, Msg: fmt.Sprintf("%s the tool %s is left out: %v", table, name, why)}
}

func (l *localLoader) add(t tool.Tool, pos config.Pos) error {
	name := t.Definition.Name
	if l.local[name] {
		return &config.Error{Pos: pos, Msg: fmt.Sprintf("a local tool named %s is already defined at %s", name, l.pos[name])}
	}
	if l.local == nil {
		l.local, l.pos = map[string]bool{}, map[string]config.Pos{}
	}
	l.local[name], l.pos[name] = true, pos
	l.tools = append(l.tools, t)
	return nil
}

// runtimeFor chooses the runtime of a local tool: the one configured, or
// one inferred from the program's name, or process. A runtime that this
// lathe does not have is an error, never a silent fallback.
func runtimeFor(explicit string, argv []string) (string, error) {
	rt := explicit
	if rt == "" {
		switch strings.ToLower(filepath.Ext(argv[0])) {
		case ".wasm":
			rt = "wasm"
		case ".js", ".mjs", ".cjs", ".ts":
			rt = "js"
		default:
			rt = process.RuntimeName
		}
	}
	switch rt {
	case process.RuntimeName:
		return rt, nil
	case vfs.RuntimeName:
		// Never inferred: a VFS tool is one written for the host API.
		return rt, nil
	case wasm.RuntimeName:
		return rt, nil
	case "js", "node":
		// A JavaScript tool is a file, found and trusted as one (load/js.go):
		// a command cannot name it.
		how := ""
		if explicit == "" {
			how = " (inferred from the command " + argv[0] + ")"
		}
		return "", fmt.Errorf("runtime %q%s is for tool files: put the tool in .lathe/tools/ (NAME.ts, NAME.js, "+
			"or a directory with tool.json) and give its permissions in [tools.NAME] without a command; see docs/js.md", rt, how)
	case "remote", "temporal":
		return "", fmt.Errorf("runtime %q is not built into this lathe yet; "+
			"run the tool as a process (runtime = \"process\", with a command that starts it)", rt)
	}
	return "", fmt.Errorf("unknown runtime %q: local tools run as \"process\", \"vfs\" or \"wasm\"", rt)
}

// tool builds the tool of a [tools.NAME] table with a command.
func (l *localLoader) tool(name string, t *config.Tool) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: t.Pos, Msg: fmt.Sprintf("[tools.%s] ", name) + fmt.Sprintf(format, args...)}
	}
	rt, err := runtimeFor(t.Runtime, t.Command)
	if err != nil {
		return fail("%v", err)
	}
	if rt == vfs.RuntimeName {
		return l.vfsTool(name, t)
	}
	if rt == wasm.RuntimeName {
		return l.wasmTool(name, t)
	}
	cmd := process.Command{Argv: t.Command, Shell: t.Shell, Dir: l.ws, Env: t.Env}
	names, err := cmd.Placeholders()
	if err != nil {
		return fail("command: %v", err)
	}
	def := tool.Definition{Name: name}
	opts := process.Options{Options: t.Options, Logger: l.log}
	sandboxOptions(&opts, l.cfg, t.Profile, cmd)
	switch {
	case t.Parameters != nil:
		for _, n := range names {
			if _, ok := t.Parameters[n]; !ok {
				return fail("command: the placeholder {%s} names no parameter; declare [tools.%s.parameters.%s]", n, name, n)
			}
		}
		def.InputSchema = config.ParamsSchema(t.Parameters)
	case len(names) > 0 || t.Shell:
		// The placeholders are the parameters: strings, all required.
		params := map[string]*config.Param{}
		yes := true
		for _, n := range names {
			params[n] = &config.Param{Type: "string", Required: &yes}
		}
		def.InputSchema = config.ParamsSchema(params)
	default:
		s, err := l.describeOne(name, t, cmd, &opts)
		if err != nil {
			return err
		}
		if def, err = process.Definition(s, name); err != nil {
			l.leaveOut(name, t.Pos, "[tools."+name+"]", err)
			return nil
		}
		opts.Tool = s.Name
	}
	pt, err := process.NewTool(def, cmd, opts)
	if err != nil {
		return fail("%v", err)
	}
	pt.Timeout = t.Timeout
	return l.add(pt, t.Pos)
}

// describeOne asks the command of [tools.NAME] for its schema, with the
// options of its calls, and picks the tool: the one named NAME, or the only
// one.
func (l *localLoader) describeOne(name string, t *config.Tool, cmd process.Command, opts *process.Options) (protocol.ToolSchema, error) {
	schemas, err := l.describe(cmd, opts, t.Timeout)
	if err != nil {
		return protocol.ToolSchema{}, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
			"[tools.%s] %s; declare the tool's parameters ([tools.%s.parameters.NAME] tables, or parameters = {} for none), or update the tool",
			name, describeError(t.Command, err), name)}
	}
	for _, s := range schemas {
		if s.Name == name {
			return s, nil
		}
	}
	if len(schemas) == 1 {
		return schemas[0], nil
	}
	names := make([]string, len(schemas))
	for i, s := range schemas {
		names[i] = s.Name
	}
	return protocol.ToolSchema{}, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
		"[tools.%s] the command describes %d tools (%s), none named %s; register them all with a [toolsets.NAME] table",
		name, len(schemas), strings.Join(names, ", "), name)}
}

func describeError(argv []string, err error) string {
	prog := argv[0]
	if errors.Is(err, process.ErrNoSchema) {
		return fmt.Sprintf("%s does not describe itself: %v", prog, strings.TrimPrefix(err.Error(), process.ErrNoSchema.Error()+": "))
	}
	return fmt.Sprintf("cannot ask %s for its schema: %v", prog, err)
}

// describe asks cmd for its schema through the cache. opts are those of
// the calls, sandbox included, so that the binary runs no less confined
// while it describes itself.
func (l *localLoader) describe(cmd process.Command, opts *process.Options, timeout time.Duration) ([]protocol.ToolSchema, error) {
	if timeout <= 0 || timeout > describeTimeout {
		timeout = describeTimeout
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	return l.cache.Describe(ctx, cmd, opts)
}

// toolset builds every tool a [toolsets.NAME] binary describes.
func (l *localLoader) toolset(s *config.Toolset) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: s.Pos, Msg: fmt.Sprintf("[toolsets.%s] ", s.Name) + fmt.Sprintf(format, args...)}
	}
	rt, err := runtimeFor(s.Runtime, s.Command)
	if err != nil {
		return fail("%v", err)
	}
	if rt == vfs.RuntimeName {
		return l.vfsToolset(s)
	}
	if rt == wasm.RuntimeName {
		return l.wasmToolset(s)
	}
	cmd := process.Command{Argv: s.Command, Dir: l.ws, Env: s.Env}
	// The binary describes itself under the toolset's profile, else the
	// [sandbox] one. The [tools.NAME] profile of one of its tools cannot
	// apply here, since one run describes them all; it applies to that
	// tool's calls.
	discover := process.Options{Options: s.Options, Logger: l.log}
	sandboxOptions(&discover, l.cfg, s.Profile, cmd)
	schemas, err := l.describe(cmd, &discover, s.Timeout)
	if err != nil {
		return fail("%s; update it, or define its tools one by one with [tools.NAME] tables and their parameters",
			describeError(s.Command, err))
	}
	var errs []error
	for _, d := range schemas {
		name := s.Prefix + d.Name
		def, err := process.Definition(d, name)
		if err != nil {
			// A bad name or schema is the binary's answer: it costs that
			// tool alone.
			l.leaveOut(name, s.Pos, "[toolsets."+s.Name+"]", err)
			continue
		}
		t, options, err := l.described(s, name, &def)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c := cmd
		opts := process.Options{Tool: d.Name, Options: options, Logger: l.log}
		pos := s.Pos
		if t != nil {
			c.Env = append(slices.Clone(s.Env), t.Env...)
			pos = t.Pos
		}
		// A tool's calls run under its [tools.NAME] profile, else the
		// toolset's, else (in sandboxOptions) the [sandbox] one. A
		// [tools.NAME] table that names no profile, one that only changes a
		// description, keeps the toolset's.
		profile := s.Profile
		if t != nil && t.Profile != "" {
			profile = t.Profile
		}
		sandboxOptions(&opts, l.cfg, profile, c)
		pt, err := process.NewTool(def, c, opts)
		if err != nil {
			errs = append(errs, fail("%v", err))
			continue
		}
		pt.Timeout = s.Timeout
		errs = append(errs, l.add(pt, pos))
	}
	return errors.Join(errs...)
}

// described applies to def, a tool that toolset s's program describes
// under the name name, the [tools.NAME] table of that name, if there is
// one: its parameters override the described schema, and its options are
// laid over the toolset's. It returns the table (nil without one) and the
// options the tool's requests carry; an error for a table that defines a
// tool of its own (a command) or whose parameters do not apply.
func (l *localLoader) described(s *config.Toolset, name string, def *tool.Definition) (*config.Tool, map[string]any, error) {
	t := l.cfg.Tools[name]
	if t == nil {
		return nil, s.Options, nil
	}
	if t.IsLocal() {
		return nil, nil, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
			"[tools.%s] defines a tool with a command, and [toolsets.%s] describes one of the same name", name, s.Name)}
	}
	var err error
	if def.InputSchema, err = config.Override(def.InputSchema, t.Parameters, name); err != nil {
		return nil, nil, err
	}
	if t.Options != nil {
		return t, merged(s.Options, t.Options), nil
	}
	return t, s.Options, nil
}

// merged returns base with over laid on top, key by key.
func merged(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, over)
	return out
}
