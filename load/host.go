package load

import (
	"slices"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/sandbox"
)

// hostFor returns the host of the confined tool name ("vfs" or "wasm"):
// its permissions from its table, the workspace, and the sandbox of the
// programs it may run (proc/run): profile, else the [sandbox] profile,
// else standard, with the [sandbox] limits and permissions, as
// run_command has them. A denial names the table whose keys widen what the
// tool may do, table ("tools.NAME" or "toolsets.NAME"), and where it is,
// pos (zero when the configuration has no such table). An error is a
// *config.Error at pos when there is one. The engine owns the host.
func (l *localLoader) hostFor(name, table string, pos config.Pos, perms config.HostPermissions, profile config.SandboxProfile) (*host.Host, error) {
	sc := sandboxConfig(l.cfg, l.ws)
	if profile != "" {
		sc.Profile = sandbox.Profile(profile)
	}
	cfg := host.Config{
		Tool:      name,
		Workspace: l.ws,
		Perms: host.Permissions{
			Read: slices.Clone(perms.Read), Write: slices.Clone(perms.Write), Net: slices.Clone(perms.Net),
			Env: slices.Clone(perms.Env), Run: slices.Clone(perms.Run)},
		Table:   table,
		Sandbox: &sc,
	}
	if pos.File != "" {
		cfg.Origin = pos.String()
	}
	h, err := host.New(cfg)
	if err != nil && pos.File != "" {
		// An absolute path outside the workspace is known only here.
		return nil, &config.Error{Pos: pos, Msg: err.Error()}
	}
	if err == nil {
		// The engine closes every host, and so its descriptor of the
		// workspace, with itself (see loadLocal).
		l.hosts = append(l.hosts, h)
	}
	return h, err
}

// declare records what the confined tool name declared it needs of the
// host API in its self-description (s.Permissions), for the person to see
// beside what its table grants ([Workspace].Declared). It grants nothing.
func (l *localLoader) declare(name string, s protocol.ToolSchema) {
	if s.Permissions == nil {
		return
	}
	if l.declared == nil {
		l.declared = map[string]host.Permissions{}
	}
	l.declared[name] = host.Declared(s.Permissions)
}

// toolPos returns where the [tools.NAME] table is, or the zero Pos when
// the configuration has none.
func (l *localLoader) toolPos(name string) config.Pos {
	if t := l.cfg.Tools[name]; t != nil {
		return t.Pos
	}
	return config.Pos{}
}
