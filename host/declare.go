package host

import (
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-tools/lathe/host/scope"
	"github.com/lathe-tools/lathe/runtime/process/protocol"
)

// Declared converts the permissions a tool declares in its
// self-description (protocol.ToolSchema.Permissions) into [Permissions].
// A declaration grants nothing: it is compared with what the
// configuration grants ([Compare]) and shown to the person.
func Declared(p *protocol.Permissions) Permissions {
	if p == nil {
		return Permissions{}
	}
	return Permissions{Read: slices.Clone(p.Read), Write: slices.Clone(p.Write), Net: slices.Clone(p.Net),
		Env: slices.Clone(p.Env), Run: slices.Clone(p.Run)}
}

// Need is one entry a tool declares, and whether the configuration grants
// it.
type Need struct {
	Key     string // "read", "write", "net", "env" or "run"
	Entry   string
	Granted bool
}

// Compare says, for each entry of declared, whether granted covers it. An
// entry counts as granted only when everything it could name is: a path
// pattern when a granted pattern matches its part before the first
// wildcard (a granted directory grants all below it) or is the same
// pattern; a net entry when it names one host and port that a granted
// entry matches, or is a granted entry; env and run entries when granted
// list them. Malformed entries are never granted.
func Compare(declared, granted Permissions) []Need {
	var out []Need
	paths := func(key string, entries, grants []string) {
		var gs []scope.Path
		for _, g := range grants {
			if p, err := scope.CompilePath(g); err == nil {
				gs = append(gs, p)
			}
		}
		for _, e := range entries {
			ok := slices.Contains(grants, e)
			if p, err := scope.CompilePath(e); err == nil && !ok {
				ok = matchAny(gs, p.Prefix())
			}
			out = append(out, Need{Key: key, Entry: e, Granted: ok})
		}
	}
	paths("read", declared.Read, append(slices.Clone(granted.Read), granted.Write...))
	paths("write", declared.Write, granted.Write)
	for _, e := range declared.Net {
		ok := slices.Contains(granted.Net, e)
		if n, err := scope.CompileNet(e); err == nil && !ok && n.Literal() {
			host, port := e, 0
			if i := strings.LastIndexByte(e, ':'); i > 0 && !strings.HasSuffix(e, "]") {
				host = e[:i]
				port, _ = strconv.Atoi(e[i+1:])
			}
			if port != 0 {
				for _, g := range granted.Net {
					if gn, err := scope.CompileNet(g); err == nil && gn.Match(host, port) {
						ok = true
					}
				}
			}
		}
		out = append(out, Need{Key: "net", Entry: e, Granted: ok})
	}
	for _, e := range declared.Env {
		out = append(out, Need{Key: "env", Entry: e, Granted: slices.Contains(granted.Env, e)})
	}
	for _, e := range declared.Run {
		out = append(out, Need{Key: "run", Entry: e, Granted: slices.Contains(granted.Run, e)})
	}
	return out
}
