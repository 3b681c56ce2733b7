// Package host is what a confined tool may ask lathe to do for it: read,
// write, list, stat and remove files; fetch a URL; run a command under a
// sandbox profile; read an environment variable; log; report progress;
// ask the person a question. Each operation is checked against the tool's
// permissions ([Permissions], from its [tools.NAME] table) and the policy,
// and recorded with its call ([lathe.RecordOperation]).
//
// (Contract skeleton: the branch that owns this package builds it.)
package host

import (
	"context"
	"encoding/json"
)

// Permissions are what a tool may reach through the host, scoped as
// Deno's are. Paths are relative to the workspace (or absolute); a pattern
// may end in "/" or "/**" for everything below a directory, and may hold
// * and ? within one element.
type Permissions struct {
	Read  []string `json:"read,omitempty"`  // paths it may read, list and stat
	Write []string `json:"write,omitempty"` // paths it may also write and remove
	Net   []string `json:"net,omitempty"`   // "host:port" or "host" (any port), * within a label
	Env   []string `json:"env,omitempty"`   // variable names
	Run   []string `json:"run,omitempty"`   // programs, by name or path
}

// Config is a host for one tool.
type Config struct {
	// Tool is the tool's name, for messages and the policy.
	Tool string
	// Workspace is the workspace root, an absolute directory.
	Workspace string
	// Perms are what the configuration grants.
	Perms Permissions
}

// Host answers the host requests of one tool's calls.
type Host struct{ cfg Config }

// New returns a host for cfg.
func New(cfg Config) (*Host, error) { return &Host{cfg: cfg}, nil }

// Session is the host of one call: it answers requests until End, and
// refuses every request after it with [CodeEnded].
type Session struct{ h *Host }

// Begin starts the session of the call running in ctx (its deadline,
// hooks, policy and recorder).
func (h *Host) Begin(ctx context.Context) *Session { return &Session{h: h} }

// Do runs one request. A returned error is a *[Error].
func (s *Session) Do(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return nil, &Error{Code: -32601, Message: "host API: not built yet"}
}

// End ends the session.
func (s *Session) End() {}
