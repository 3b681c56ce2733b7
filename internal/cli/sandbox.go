package cli

import (
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
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
