package load

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/wasm"
	"github.com/lathe-tools/lathe/tool"
)

// wasmRuntime returns the runtime of the configuration's WASM tools, made
// the first time: with wazero's compilation cache in lathe's cache
// directory, or with none (and a warning) when that place is unsafe.
func (l *localLoader) wasmRuntime() (*wasm.Runtime, error) {
	if l.wasm != nil {
		return l.wasm, nil
	}
	rt, err := wasm.NewRuntime(wasm.Config{CacheDir: wasm.DefaultCacheDir(), Workspace: l.ws})
	if err != nil {
		if l.log != nil {
			l.log.Warn("WASM modules are compiled without the disk cache", "reason", err)
		}
		if rt, err = wasm.NewRuntime(wasm.Config{}); err != nil {
			return nil, err
		}
	}
	l.wasm = rt
	return rt, nil
}

// wasmModule loads the module a [tools.NAME] or [toolsets.NAME] table names
// (its command: the module file, relative to the workspace), with its host.
// table ("tools.NAME" or "toolsets.NAME") and pos say which table grants
// the module's permissions: one host serves every tool of a module.
func (l *localLoader) wasmModule(name, table string, pos config.Pos, argv []string, shell bool, perms config.HostPermissions,
	profile config.SandboxProfile, toolName string) (*wasm.Module, error) {
	if shell {
		return nil, errors.New("a WASM module runs no shell; drop shell = true")
	}
	if len(argv) > 1 {
		return nil, fmt.Errorf("a WASM tool's command is its module file alone (%s), and it has %d more elements; "+
			"give the module what it needs through options", argv[0], len(argv)-1)
	}
	if strings.Contains(argv[0], "{") {
		return nil, fmt.Errorf("a WASM module reads its arguments from its request: the command %s cannot hold a placeholder", argv[0])
	}
	path := argv[0]
	if !filepath.IsAbs(path) {
		path = filepath.Join(l.ws, path)
	}
	rt, err := l.wasmRuntime()
	if err != nil {
		return nil, err
	}
	h, err := l.hostFor(name, table, pos, perms, profile)
	if err != nil {
		return nil, err
	}
	limits := l.cfg.Sandbox.Limits
	opts := wasm.Options{
		Tool: toolName, Host: h, Workspace: h.Workspace(), Perms: h.Permissions(),
		MemoryLimit: limits.Memory, MaxOutputBytes: limits.OutputBytes, Logger: l.log,
	}
	ctx, cancel := context.WithTimeout(l.ctx, describeTimeout)
	defer cancel()
	return rt.Load(ctx, path, opts)
}

// describeModule asks a module for its tools, within the describe timeout
// or the table's shorter one.
func (l *localLoader) describeModule(m *wasm.Module, timeout time.Duration) ([]protocol.ToolSchema, error) {
	if timeout <= 0 || timeout > describeTimeout {
		timeout = describeTimeout
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	return m.Describe(ctx)
}

// wasmTool builds the tool of a [tools.NAME] table whose command is a WASM
// module: the module describes it unless the table declares its
// parameters.
func (l *localLoader) wasmTool(name string, t *config.Tool) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: t.Pos, Msg: fmt.Sprintf("[tools.%s] ", name) + fmt.Sprintf(format, args...)}
	}
	m, err := l.wasmModule(name, "tools."+name, t.Pos, t.Command, t.Shell, t.Permissions(), t.Profile, "")
	if ce := (*config.Error)(nil); errors.As(err, &ce) {
		return ce
	} else if err != nil {
		return fail("%v", err)
	}
	def := tool.Definition{Name: name, Source: "local", Runtime: wasm.RuntimeName}
	toolName := name
	if t.Parameters != nil {
		def.InputSchema = config.ParamsSchema(t.Parameters)
	} else {
		schemas, err := l.describeModule(m, t.Timeout)
		if err != nil {
			return fail("%s; declare the tool's parameters ([tools.%s.parameters.NAME] tables, or parameters = {} for none), or update the tool",
				describeError(t.Command, err), name)
		}
		var s *protocol.ToolSchema
		for i := range schemas {
			if schemas[i].Name == name {
				s = &schemas[i]
			}
		}
		if s == nil && len(schemas) == 1 {
			s = &schemas[0]
		}
		if s == nil {
			names := make([]string, len(schemas))
			for i, s := range schemas {
				names[i] = s.Name
			}
			return fail("the module describes %d tools (%s), none named %s; register them all with a [toolsets.NAME] table",
				len(schemas), strings.Join(names, ", "), name)
		}
		if def, err = wasm.Definition(*s, name); err != nil {
			l.leaveOut(name, t.Pos, "[tools."+name+"]", err)
			return nil
		}
		toolName = s.Name
		l.declare(name, *s)
	}
	tl := withOptions(m.Tool(def, toolName), t.Options)
	tl.Timeout = t.Timeout
	return l.add(tl, t.Pos)
}

// wasmToolset builds every tool a [toolsets.NAME] module describes.
func (l *localLoader) wasmToolset(s *config.Toolset) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: s.Pos, Msg: fmt.Sprintf("[toolsets.%s] ", s.Name) + fmt.Sprintf(format, args...)}
	}
	m, err := l.wasmModule(s.Name, "toolsets."+s.Name, s.Pos, s.Command, false, s.Permissions(), s.Profile, "")
	if ce := (*config.Error)(nil); errors.As(err, &ce) {
		return ce
	} else if err != nil {
		return fail("%v", err)
	}
	schemas, err := l.describeModule(m, s.Timeout)
	if err != nil {
		return fail("%s; update it, or define its tools one by one with [tools.NAME] tables and their parameters",
			describeError(s.Command, err))
	}
	var errs []error
	for _, d := range schemas {
		name := s.Prefix + d.Name
		def, err := wasm.Definition(d, name)
		if err != nil {
			l.leaveOut(name, s.Pos, "[toolsets."+s.Name+"]", err)
			continue
		}
		t, options, err := l.described(s, name, &def)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pos := s.Pos
		if t != nil {
			pos = t.Pos
		}
		l.declare(name, d)
		tl := withOptions(m.Tool(def, d.Name), options)
		tl.Timeout = s.Timeout
		errs = append(errs, l.add(tl, pos))
	}
	return errors.Join(errs...)
}

// withOptions sets the options a tool's requests carry.
func withOptions(t tool.Tool, options map[string]any) tool.Tool {
	if options != nil {
		t.Runtime = t.Runtime.(*wasm.Module).WithOptions(options)
	}
	return t
}
