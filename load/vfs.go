package load

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/runtime/vfs"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// vfsOptions returns the options of a VFS tool's process under profile
// (its table's, else the enclosing toolset's): the [sandbox] limits and a
// profile that confines. A VFS tool never runs under dev: its table asking
// for dev is an error, and a [sandbox] profile of dev, meant for process
// tools, leaves it under standard; hardened, from either, is kept.
func (l *localLoader) vfsOptions(profile config.SandboxProfile, options map[string]any) (vfs.Options, error) {
	sc := sandboxConfig(l.cfg, l.ws)
	switch {
	case profile == config.SandboxProfile(sandbox.Dev):
		return vfs.Options{}, fmt.Errorf(`profile = "dev" cannot confine a VFS tool: a host process opens any file itself, so its host permissions would mean nothing; use "standard" or "hardened", or runtime = "process"`)
	case profile != "":
		sc.Profile = sandbox.Profile(profile)
	case sc.Profile != sandbox.Hardened:
		sc.Profile = sandbox.Standard
	}
	opts := vfs.Options{Options: options, Logger: l.log, Sandbox: sc}
	if sc.Limits.Output > 0 {
		opts.MaxOutputBytes = sc.Limits.Output
	}
	return opts, nil
}

// vfsTool builds the VFS tool of a [tools.NAME] table: its parameters as
// declared, or as the binary describes them, confined as its calls are.
func (l *localLoader) vfsTool(name string, t *config.Tool) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: t.Pos, Msg: fmt.Sprintf("[tools.%s] ", name) + fmt.Sprintf(format, args...)}
	}
	if t.Shell {
		return fail(`runtime = "vfs" speaks the protocol; a shell command cannot (drop shell, or use runtime = "process")`)
	}
	opts, err := l.vfsOptions(t.Profile, t.Options)
	if err != nil {
		return fail("%v", err)
	}
	cmd := process.Command{Argv: t.Command, Dir: l.ws}
	h, err := l.hostFor(name, "tools."+name, t.Pos, t.Permissions(), t.Profile)
	if err != nil {
		return err
	}
	def := tool.Definition{Name: name, Source: "local", Runtime: vfs.RuntimeName}
	if t.Parameters != nil {
		def.InputSchema = config.ParamsSchema(t.Parameters)
	} else {
		schemas, err := l.vfsDescribe(cmd, opts, t.Timeout)
		if err != nil {
			return fail("%s; declare the tool's parameters ([tools.%s.parameters.NAME] tables, or parameters = {} for none), or update the tool",
				describeError(t.Command, err), name)
		}
		i := slices.IndexFunc(schemas, func(s protocol.ToolSchema) bool { return s.Name == name })
		if i < 0 && len(schemas) != 1 {
			names := make([]string, len(schemas))
			for i, s := range schemas {
				names[i] = s.Name
			}
			return fail("the command describes %d tools (%s), none named %s; register them all with a [toolsets.NAME] table",
				len(schemas), strings.Join(names, ", "), name)
		}
		if i < 0 {
			i = 0
		}
		if def, err = process.Definition(schemas[i], name); err != nil {
			l.leaveOut(name, t.Pos, "[tools."+name+"]", err)
			return nil
		}
		def.Runtime = vfs.RuntimeName
		opts.Tool = schemas[i].Name
		l.declare(name, schemas[i])
	}
	rt, err := vfs.New(cmd, h, opts)
	if err != nil {
		return fail("%v", strings.TrimPrefix(err.Error(), "vfs: "))
	}
	return l.add(tool.Tool{Definition: def, Runtime: rt, Timeout: t.Timeout}, t.Pos)
}

// vfsToolset builds every tool a [toolsets.NAME] binary of runtime "vfs"
// describes. Each tool's host permissions are the toolset's with those of
// its own [tools.NAME] table added; its profile is its table's, else the
// toolset's.
func (l *localLoader) vfsToolset(s *config.Toolset) error {
	fail := func(format string, args ...any) error {
		return &config.Error{Pos: s.Pos, Msg: fmt.Sprintf("[toolsets.%s] ", s.Name) + fmt.Sprintf(format, args...)}
	}
	discover, err := l.vfsOptions(s.Profile, s.Options)
	if err != nil {
		return fail("%v", err)
	}
	cmd := process.Command{Argv: s.Command, Dir: l.ws}
	schemas, err := l.vfsDescribe(cmd, discover, s.Timeout)
	if err != nil {
		return fail("%s; update it, or define its tools one by one with [tools.NAME] tables and their parameters",
			describeError(s.Command, err))
	}
	var errs []error
	for _, d := range schemas {
		name := s.Prefix + d.Name
		def, err := process.Definition(d, name)
		if err != nil {
			l.leaveOut(name, s.Pos, "[toolsets."+s.Name+"]", err)
			continue
		}
		def.Runtime = vfs.RuntimeName
		l.declare(name, d)
		t, options, err := l.described(s, name, &def)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		perms, profile, pos := s.Permissions(), s.Profile, s.Pos
		if t != nil {
			tp := t.Permissions()
			perms = config.HostPermissions{Read: slices.Concat(perms.Read, tp.Read), Write: slices.Concat(perms.Write, tp.Write),
				Net: slices.Concat(perms.Net, tp.Net), Env: slices.Concat(perms.Env, tp.Env), Run: slices.Concat(perms.Run, tp.Run)}
			if t.Profile != "" {
				profile = t.Profile
			}
			pos = t.Pos
		}
		opts, err := l.vfsOptions(profile, options)
		if err != nil {
			errs = append(errs, &config.Error{Pos: pos, Msg: fmt.Sprintf("[tools.%s] %v", name, err)})
			continue
		}
		opts.Tool = d.Name
		h, err := l.hostFor(name, "tools."+name, l.toolPos(name), perms, profile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rt, err := vfs.New(cmd, h, opts)
		if err != nil {
			errs = append(errs, fail("%v", strings.TrimPrefix(err.Error(), "vfs: ")))
			continue
		}
		errs = append(errs, l.add(tool.Tool{Definition: def, Runtime: rt, Timeout: s.Timeout}, pos))
	}
	return joinByPos(errs)
}

// vfsDescribe asks a VFS binary for its schema, confined as its calls are
// and with no host, through the schema cache that process tools use: an
// entry is keyed by the command, the files it names and the options.
func (l *localLoader) vfsDescribe(cmd process.Command, opts vfs.Options, timeout time.Duration) ([]protocol.ToolSchema, error) {
	if timeout <= 0 || timeout > describeTimeout {
		timeout = describeTimeout
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	return l.cache.DescribeWith(ctx, cmd, opts.Options, func(ctx context.Context) ([]protocol.ToolSchema, error) {
		return vfs.Describe(ctx, cmd, opts)
	})
}
