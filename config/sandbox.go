package config

import (
	"fmt"
	"time"
)

// Sandbox is the [sandbox] table: how process tools, run_command and the
// commands of MCP servers are isolated (package sandbox; the project's
// docs/security.md).
type Sandbox struct {
	// Profile is the isolation level of every process tool and MCP server
	// that names none itself: "dev", "standard" or "hardened". Empty means
	// standard for run_command.
	Profile SandboxProfile `toml:"profile"`
	// Limits bound each run.
	Limits SandboxLimits `toml:"limits"`
	// Permissions say what a process may reach besides the workspace.
	Permissions SandboxPermissions `toml:"permissions"`
}

// SandboxProfile names a sandbox profile.
type SandboxProfile string

// validate accepts the three profiles; the decoder calls it.
func (p SandboxProfile) validate() error {
	switch p {
	case "dev", "standard", "hardened":
		return nil
	}
	return fmt.Errorf("unknown sandbox profile %q (want dev, standard or hardened)", string(p))
}

// SandboxLimits is the [sandbox.limits] table. Zero fields mean the
// defaults of package sandbox.
type SandboxLimits struct {
	WallTime    time.Duration `toml:"wall_time"`
	Memory      int64         `toml:"memory"`
	CPUTime     time.Duration `toml:"cpu_time"`
	Processes   int           `toml:"processes"`
	OutputBytes int           `toml:"output_bytes"`
	CPUs        float64       `toml:"cpus"`
	FileSize    int64         `toml:"file_size"`
}

// SandboxPermissions is the [sandbox.permissions] table.
type SandboxPermissions struct {
	Read    []string `toml:"read"`
	Write   []string `toml:"write"`
	Network bool     `toml:"network"`
	Env     []string `toml:"env"`
}
