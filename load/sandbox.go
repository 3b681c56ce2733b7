package load

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/internal/childenv"
	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tools"
)

// sandboxConfig turns the [sandbox] table into a sandbox configuration for
// the workspace ws.
func sandboxConfig(cfg *config.Config, ws string) sandbox.Config {
	s := cfg.Sandbox
	return sandbox.Config{
		Profile:   sandbox.Profile(s.Profile),
		Workspace: ws,
		Limits: sandbox.Limits{
			Wall: s.Limits.WallTime, Memory: s.Limits.Memory, CPU: s.Limits.CPUTime,
			Processes: s.Limits.Processes, Output: s.Limits.OutputBytes, CPUs: s.Limits.CPUs,
			FileSize: s.Limits.FileSize,
		},
		Perms: sandbox.Permissions{
			Read: s.Permissions.Read, Write: s.Permissions.Write,
			Network: s.Permissions.Network, Env: s.Permissions.Env,
		},
	}
}

// sandboxOptions sets the sandbox of a process tool: profile, else the
// [sandbox] profile. The same options serve the tool's calls and its
// discovery (process.Describe), so that whenever the binary runs it is
// confined alike. A process tool with neither profile runs as before, a
// host process with a minimal environment; the configuration opts in.
func sandboxOptions(opts *process.Options, cfg *config.Config, profile config.SandboxProfile, cmd process.Command) {
	if profile == "" {
		profile = cfg.Sandbox.Profile
	}
	if profile == "" {
		return
	}
	sc := sandboxConfig(cfg, cmd.Dir)
	sc.Profile = sandbox.Profile(profile)
	sc.Perms.Env = append(slices.Clone(sc.Perms.Env), cmd.Env...)
	if sc.Limits.Output > 0 {
		opts.MaxOutputBytes = sc.Limits.Output
	}
	opts.Sandbox = func(c *exec.Cmd) (func(), error) {
		s := sc
		// The tool's own program must be reachable: its directory is
		// readable, wherever it is.
		if filepath.IsAbs(c.Path) {
			s.Perms.Read = append(slices.Clone(s.Perms.Read), filepath.Dir(c.Path))
		}
		// Under a profile the [sandbox.permissions] names pass too, as to
		// run_command and to an MCP server.
		c.Env = childenv.Build(s.Perms.Env, nil)
		return s.Wrap(c)
	}
}

// commandSandbox is the sandbox of run_command: [tools.run_command]
// profile, else [sandbox] profile, else standard, with the [sandbox]
// limits and permissions.
func commandSandbox(cfg *config.Config, ws string) *sandbox.Config {
	sc := sandboxConfig(cfg, ws)
	if t := cfg.Tools["run_command"]; t != nil && t.Profile != "" {
		sc.Profile = sandbox.Profile(t.Profile)
	}
	return &sc
}

// mcpSandbox returns the sandbox of an upstream server's command, started
// in dir: the server's profile, else the [sandbox] profile; nil, with
// neither, for a host process (which still gets only the minimal
// environment). The [sandbox] permissions apply, with the server's own added,
// and lathe's state directory is hidden, as from run_command. Of the limits,
// memory, processes and cpus apply; wall time and CPU time do not, since the
// server lives as long as lathe and would be killed once it had run that
// long in all, while each call of its tools is bounded by the call's
// timeout. Unset, memory is [serverMemory] rather than the default of a
// run: the runtimes servers are written in reserve address space they never
// use, and RLIMIT_AS counts it.
func mcpSandbox(cfg *config.Config, srv config.MCPServer, ws, dir string) func(*exec.Cmd) (func(), error) {
	profile := srv.Profile
	if profile == "" {
		profile = cfg.Sandbox.Profile
	}
	if profile == "" || len(srv.Command) == 0 {
		return nil
	}
	sc := sandboxConfig(cfg, ws)
	sc.Profile = sandbox.Profile(profile)
	sc.Limits.Wall, sc.Limits.CPU = -1, -1
	if sc.Limits.Memory == 0 {
		sc.Limits.Memory = serverMemory
	}
	p := srv.Permissions
	sc.Perms.Read = slices.Concat(sc.Perms.Read, p.Read)
	sc.Perms.Write = slices.Concat(sc.Perms.Write, p.Write)
	sc.Perms.Network = sc.Perms.Network || p.Network
	sc.Perms.Env = slices.Concat(sc.Perms.Env, p.Env, slices.Sorted(maps.Keys(srv.Env)))
	sc.Hide = append(slices.Clone(sc.Hide), tools.StateDir)
	if !statedir.Within(ws, dir) {
		// The configured working directory must exist for the server.
		sc.Perms.Read = append(sc.Perms.Read, dir)
	}
	return func(c *exec.Cmd) (func(), error) {
		s := sc
		// The server's own program must be reachable: its directory is
		// readable, wherever it is.
		if filepath.IsAbs(c.Path) {
			s.Perms.Read = append(slices.Clone(s.Perms.Read), filepath.Dir(c.Path))
		}
		// Under a profile the [sandbox.permissions] names pass too.
		c.Env = childenv.Build(s.Perms.Env, srv.Env)
		return s.Wrap(c)
	}
}

// serverMemory is the address space of a sandboxed MCP server when
// [sandbox.limits] sets none: a Go server under the 1 GiB of a run aborts
// now and then, unable to map a thread's stack.
const serverMemory = 4 << 30
