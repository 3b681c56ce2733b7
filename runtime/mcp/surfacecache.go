package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/internal/statedir"
)

// What a server offers besides tools (its capabilities, resources,
// resource templates and prompts) is kept in the [ToolCache] too, beside
// its tool list, so that a gateway can declare its capabilities and list
// its catalog without starting the server: the server starts at the first
// read, subscription, prompt or completion that goes to it. The entry has
// the tool list's key, so that it is invalidated by the same changes (the
// command, its program, its environment, its URL or headers), and is
// written whenever the server, running, is listed: at the start of a
// gateway that had no entry, after the server's list_changed, after a
// start of a server whose catalog came from the cache, and by
// [Options].RefreshCache. A file is trusted under the tool list's rules:
// this user's alone, a regular file, not a link.

// surfaceEntry is what the cache keeps of a server besides its tools:
// what the server said, before the configuration's NoResources and
// NoPrompts, which are applied when it is used.
type surfaceEntry struct {
	Version      int                     `json:"version"`
	Key          string                  `json:"key"`
	Capabilities *sdk.ServerCapabilities `json:"capabilities"`
	Resources    []*sdk.Resource         `json:"resources,omitempty"`
	Templates    []*sdk.ResourceTemplate `json:"templates,omitempty"`
	Prompts      []*sdk.Prompt           `json:"prompts,omitempty"`
}

// surfaceFile is the name of the file of a server's surface, beside the
// file of its tools.
func surfaceFile(toolFile string) string {
	return strings.TrimSuffix(toolFile, ".json") + ".surface.json"
}

// loadSurface returns the server's surface as the cache holds it, or an
// error that says why there is no entry to use.
func (c *ToolCache) loadSurface(s *server) (*surfaceEntry, error) {
	file, key, ok := s.cfg.identity()
	if !ok {
		return nil, errors.New("the server's program cannot be found")
	}
	if err := statedir.CheckDir(c.dir, "MCP tool cache"); err != nil {
		return nil, err
	}
	b, err := statedir.ReadPrivate(filepath.Join(c.dir, surfaceFile(file)), maxToolCacheFile)
	if err != nil {
		return nil, err
	}
	var e surfaceEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("cache file %s: %w", surfaceFile(file), err)
	}
	if e.Version != toolCacheVersion || e.Key != key || e.Capabilities == nil {
		return nil, errors.New("the entry is of another configuration or program")
	}
	if len(e.Resources) > maxListed || len(e.Templates) > maxListed || len(e.Prompts) > maxListed {
		return nil, fmt.Errorf("cache file %s: more than %d entries in a list", surfaceFile(file), maxListed)
	}
	return &e, nil
}

// storeSurface writes the server's surface to the cache. A cache that
// cannot be written is no error: the next gateway starts the server.
func (c *ToolCache) storeSurface(s *server, e *surfaceEntry) error {
	file, key, ok := s.cfg.identity()
	if !ok {
		return nil
	}
	e.Version, e.Key = toolCacheVersion, key
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := statedir.MkdirAll(c.dir, "MCP tool cache"); err != nil {
		return err
	}
	return statedir.WriteFile(filepath.Join(c.dir, surfaceFile(file)), b)
}

// listSurface lists what a running server offers besides tools. An error
// of one list is reported and ends that list, as in [Pool.Catalog].
func (s *server) listSurface(ctx context.Context, sess *session) *surfaceEntry {
	e := &surfaceEntry{Capabilities: &sdk.ServerCapabilities{}}
	if ir := sess.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		c := *ir.Capabilities
		e.Capabilities = &c
	}
	if e.Capabilities.Resources != nil {
		each(s, "resources", sess.cs.Resources(ctx, nil), func(r *sdk.Resource) { e.Resources = append(e.Resources, r) })
		each(s, "resource templates", sess.cs.ResourceTemplates(ctx, nil), func(t *sdk.ResourceTemplate) {
			e.Templates = append(e.Templates, t)
		})
	}
	if e.Capabilities.Prompts != nil {
		each(s, "prompts", sess.cs.Prompts(ctx, nil), func(pr *sdk.Prompt) { e.Prompts = append(e.Prompts, pr) })
	}
	return e
}

// live returns the server's session if it runs, without starting it.
func (s *server) live() *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// cachedSurface returns the server's surface from the cache, read once,
// or nil when the pool has no cache or the cache no usable entry.
func (s *server) cachedSurface() *surfaceEntry {
	c := s.pool.opts.Cache
	if c == nil || s.pool.opts.RefreshCache {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.surfLoaded {
		s.surfLoaded = true
		e, err := c.loadSurface(s)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.pool.opts.Logger.Debug("cached MCP catalog not used", "server", s.cfg.Name, "error", err)
		}
		s.surfCached = e
	}
	return s.surfCached
}

// surfaceOf returns what the server offers besides tools, less what its
// configuration keeps from clients: listed from its session when it runs
// (and then written to the cache), else as the cache holds it, else from
// a session started for it. list says the lists are wanted, not only the
// capabilities. A server that cannot be started offers nothing.
func (s *server) surfaceOf(ctx context.Context, list bool) (*surfaceEntry, *session) {
	if s.skipped {
		return nil, nil
	}
	sess := s.live()
	if sess == nil {
		if e := s.cachedSurface(); e != nil {
			return s.filtered(e), nil
		}
		var err error
		if sess, err = s.session(ctx); err != nil || sess.cs == nil {
			return nil, nil
		}
	}
	var e *surfaceEntry
	if list {
		e = s.listSurface(ctx, sess)
		s.rememberSurface(e)
	} else {
		e = &surfaceEntry{Capabilities: &sdk.ServerCapabilities{}}
		if ir := sess.cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
			c := *ir.Capabilities
			e.Capabilities = &c
		}
	}
	return s.filtered(e), sess
}

// rememberSurface writes a listed surface to the cache, and keeps it as
// the server's cached one.
func (s *server) rememberSurface(e *surfaceEntry) {
	c := s.pool.opts.Cache
	if c == nil {
		return
	}
	s.mu.Lock()
	s.surfLoaded, s.surfCached = true, e
	s.mu.Unlock()
	if err := c.storeSurface(s, e); err != nil {
		s.pool.opts.Logger.Debug("caching the MCP catalog failed", "server", s.cfg.Name, "error", err)
	}
}

// filtered returns e less what the configuration keeps from clients.
func (s *server) filtered(e *surfaceEntry) *surfaceEntry {
	c := *e.Capabilities
	out := *e
	out.Capabilities = &c
	if s.cfg.NoResources {
		c.Resources = nil
		out.Resources, out.Templates = nil, nil
	}
	if s.cfg.NoPrompts {
		c.Prompts = nil
		out.Prompts = nil
	}
	if c.Resources == nil && c.Prompts == nil {
		// Completion completes prompts' arguments and templates' variables:
		// with neither offered, there is nothing it could complete.
		c.Completions = nil
	}
	return &out
}
