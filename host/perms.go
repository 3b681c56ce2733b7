package host

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/lathe-tools/lathe/host/scope"
)

// Validate reports every malformed entry of p, each naming its key and
// entry: a path that leads out of the workspace with "..", a net entry
// that is a URL, a run entry that is a command line, an env entry that is
// not a variable's name. Whether an absolute path lies inside the
// workspace is checked by [New], which knows the workspace.
func (p Permissions) Validate() error {
	var errs []error
	for _, key := range []struct {
		name    string
		entries []string
		check   func(string) error
	}{
		{"read", p.Read, scope.CheckPath},
		{"write", p.Write, scope.CheckPath},
		{"net", p.Net, func(s string) error { _, err := scope.CompileNet(s); return err }},
		{"env", p.Env, scope.CheckEnv},
		{"run", p.Run, scope.CheckRun},
	} {
		for _, e := range key.entries {
			if err := key.check(e); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key.name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// compiled are the permissions of a host, ready to match.
type compiled struct {
	read, write []scope.Path
	net         []scope.Net
	env         map[string]bool
	run         []runEntry
}

// runEntry is one entry of run: a name looked up in PATH, or a path,
// absolute once compiled.
type runEntry struct {
	src  string
	name string // set for a name
	path string // set for a path: absolute, clean
}

// compile checks and compiles p for the workspace ws. An absolute path
// must lie inside the workspace, under one of names (the workspace as
// configured, and with its links resolved).
func compile(p Permissions, names []string, ws string) (compiled, error) {
	if err := p.Validate(); err != nil {
		return compiled{}, err
	}
	var c compiled
	var errs []error
	paths := func(key string, entries []string) []scope.Path {
		var out []scope.Path
		for _, e := range entries {
			rel := e
			if filepath.IsAbs(e) {
				r, ok := within(names, e)
				if !ok {
					errs = append(errs, fmt.Errorf("%s: %q is outside the workspace %s; the host reaches the workspace only", key, e, ws))
					continue
				}
				rel = r
			}
			sp, err := scope.CompilePath(rel)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", key, err))
				continue
			}
			out = append(out, sp)
		}
		return out
	}
	c.read = paths("read", p.Read)
	c.write = paths("write", p.Write)
	for _, n := range p.Net {
		sn, _ := scope.CompileNet(n)
		c.net = append(c.net, sn)
	}
	c.env = map[string]bool{}
	for _, n := range p.Env {
		c.env[n] = true
	}
	for _, r := range p.Run {
		switch {
		case !strings.ContainsRune(r, '/'):
			c.run = append(c.run, runEntry{src: r, name: r})
		case filepath.IsAbs(r):
			c.run = append(c.run, runEntry{src: r, path: filepath.Clean(r)})
		default:
			c.run = append(c.run, runEntry{src: r, path: filepath.Join(ws, filepath.FromSlash(r))})
		}
	}
	return c, errors.Join(errs...)
}

// within returns abs relative to the first of roots it lies in, with "/"
// between elements.
func within(roots []string, abs string) (string, bool) {
	abs = filepath.Clean(abs)
	for _, r := range roots {
		if r == "" {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(r), abs)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel), true
		}
	}
	return "", false
}

// canRead reports whether rel (resolved, "/" between elements) may be
// read: a read or a write pattern grants it.
func (c *compiled) canRead(rel string) bool {
	return matchAny(c.read, rel) || matchAny(c.write, rel)
}

func (c *compiled) canWrite(rel string) bool { return matchAny(c.write, rel) }

func matchAny(ps []scope.Path, rel string) bool {
	for _, p := range ps {
		if p.Match(rel) {
			return true
		}
	}
	return false
}

// netAllows reports whether host:port is granted, and whether by a
// pattern that names it literally (which alone lets it reach a private or
// loopback address).
func (c *compiled) netAllows(host string, port int) (ok, literal bool) {
	for _, n := range c.net {
		if n.Match(host, port) {
			ok = true
			literal = literal || n.Literal()
		}
	}
	return ok, literal
}

// runAllows returns the entry of run that grants argv0, or nil. A name
// grants only itself, never a path ("./git", "/tmp/git"); a path grants
// only itself, a relative one taken from the workspace.
func (c *compiled) runAllows(argv0, ws string) *runEntry {
	for i := range c.run {
		e := &c.run[i]
		switch {
		case e.name != "":
			if argv0 == e.name {
				return e
			}
		case strings.ContainsRune(argv0, '/'):
			p := argv0
			if !filepath.IsAbs(p) {
				p = filepath.Join(ws, filepath.FromSlash(p))
			}
			if filepath.Clean(p) == e.path {
				return e
			}
		}
	}
	return nil
}

// suggest is the path entry a denial proposes: the resolved path itself.
func suggest(rel string) string {
	if rel == "." {
		return "."
	}
	return path.Clean(rel)
}
