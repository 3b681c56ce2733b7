package load

import (
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/host"
)

// hostFor returns the host of the confined tool name ("vfs" or "wasm"):
// its permissions from its table, the workspace, and the sandbox profile of
// the commands it may run.
//
// (Contract stub: built on the branch that owns package host.)
func (l *localLoader) hostFor(name string, perms config.HostPermissions, profile config.SandboxProfile) (*host.Host, error) {
	return host.New(host.Config{Tool: name, Workspace: l.ws, Perms: host.Permissions{
		Read: perms.Read, Write: perms.Write, Net: perms.Net, Env: perms.Env, Run: perms.Run}})
}
