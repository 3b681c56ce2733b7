package load

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/tool"
)

// Dispatcher sends the calls of tools routed to a queue (a [tools.NAME],
// [toolsets.NAME] or [mcp.NAME] table with queue = "NAME") to the workers
// that serve the queue, on other machines. Package runtime/temporal
// implements it with Temporal; the lathe command fills [Options].Dispatch
// with it, so that this package, and a program that routes nothing, does
// not compile the Temporal SDK.
type Dispatcher interface {
	// Queue returns the tools the workers of queue serve, each with a
	// runtime that sends its calls to them. With fresh false it may answer
	// from a cache. It calls changed, from any goroutine, whenever it
	// learns that the workers now serve other tools than it returned; the
	// loader then asks again, with fresh true.
	Queue(ctx context.Context, queue string, fresh bool, changed func()) ([]tool.Tool, error)
}

// refreshTimeout bounds asking a queue again for its tools once it said
// they changed.
const refreshTimeout = 30 * time.Second

// remote is the state of the tools a workspace takes from queues, for the
// refresh a queue's change calls for.
type remote struct {
	d     Dispatcher
	mu    sync.Mutex
	names map[string][]string // the names registered, by queue
}

// withoutRoutes returns a copy of cfg in which nothing routed to a queue
// runs here: the routed toolsets and MCP servers are gone, and the routed
// [tools.NAME] tables keep only what adjusts a tool (its summary, timeout,
// effects …), not what would make it a local one.
func withoutRoutes(cfg *config.Config, routes []config.Route) *config.Config {
	c := *cfg
	c.Tools, c.Toolsets, c.MCP = maps.Clone(cfg.Tools), maps.Clone(cfg.Toolsets), maps.Clone(cfg.MCP)
	for _, r := range routes {
		switch r.Kind {
		case "tool":
			t := *cfg.Tools[r.Name]
			t.Command, t.Shell, t.Runtime, t.Parameters, t.Options, t.Env = nil, false, "", nil, nil, nil
			t.Read, t.Write, t.Net, t.Run, t.Profile = nil, nil, nil, nil, ""
			c.Tools[r.Name] = &t
		case "toolset":
			delete(c.Toolsets, r.Name)
		case "mcp":
			delete(c.MCP, r.Name)
		}
	}
	return &c
}

// routed returns the tools of those a queue serves that the routes of
// that queue take: a routed tool by its name, a routed toolset's by its
// prefix, a routed MCP server's by their source.
func routed(cfg *config.Config, routes []config.Route, served []tool.Tool) []tool.Tool {
	var out []tool.Tool
	for _, t := range served {
		d := &t.Definition
		take := slices.ContainsFunc(routes, func(r config.Route) bool {
			switch r.Kind {
			case "tool":
				return d.Name == r.Name
			case "toolset":
				return d.Source == "local" && strings.HasPrefix(d.Name, cfg.Toolsets[r.Name].Prefix)
			case "mcp":
				return d.Source == "mcp."+r.Name
			}
			return false
		})
		if take {
			out = append(out, t)
		}
	}
	return out
}

// loadRemote registers the tools routed to queues, from what each queue's
// workers serve, replacing a builtin tool of the same name (a routed
// read_file reads the worker's files). A queue that cannot be reached is
// reported and its tools left out: the rest of the workspace still works.
// The names of routed tools are marked known for cfg.Unused either way.
func (w *Workspace) loadRemote(ctx context.Context, opts *Options, cfg *config.Config, routes []config.Route, known map[string]bool) error {
	for _, r := range routes {
		if r.Kind == "tool" {
			known[r.Name] = true
		}
	}
	if len(routes) == 0 {
		return nil
	}
	if opts.Dispatch == nil {
		var errs []error
		for _, r := range routes {
			errs = append(errs, &config.Error{Pos: r.Pos, Msg: fmt.Sprintf(
				"[%s] queue = %q: this lathe has no way to reach a queue's workers", r.Table(), r.Queue)})
		}
		return &ConfigError{joinByPos(errs)}
	}
	for _, r := range routes {
		if r.Kind == "toolset" && cfg.Toolsets[r.Name].Prefix == "" {
			return &ConfigError{&config.Error{Pos: r.Pos, Msg: fmt.Sprintf(
				"[%s] queue = %q needs a prefix, by which lathe knows which of the queue's tools are the toolset's", r.Table(), r.Queue)}}
		}
	}
	byQueue := map[string][]config.Route{}
	for _, r := range routes {
		byQueue[r.Queue] = append(byQueue[r.Queue], r)
	}
	// lathe call of another tool asks no queue, and so holds up nothing
	// when no worker serves one, or the server is down.
	maps.DeleteFunc(byQueue, func(_ string, rs []config.Route) bool { return !needed(cfg, rs, opts.Need) })
	if len(byQueue) == 0 {
		return nil
	}
	d, err := opts.Dispatch(ctx, cfg)
	if err != nil {
		opts.warn(fmt.Errorf("%w; the tools routed to queues are left out", err))
		return nil
	}
	if c, ok := d.(io.Closer); ok {
		if err := w.Engine.Own(c); err != nil {
			return err
		}
	}
	w.remote = &remote{d: d, names: map[string][]string{}}
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		rs := byQueue[q]
		served, err := w.remote.d.Queue(ctx, q, opts.RefreshToolCache, func() { w.refreshQueue(opts, cfg, q, rs) })
		if err != nil {
			opts.warn(fmt.Errorf("queue %q: %w; the tools routed to it are left out", q, err))
			continue
		}
		if err := w.registerRemote(cfg, q, routed(cfg, rs, served), known); err != nil {
			return &ConfigError{err}
		}
	}
	return nil
}

// registerRemote puts the tools of queue q into the engine in place of
// those it registered from q before, and of other tools of their names.
func (w *Workspace) registerRemote(cfg *config.Config, q string, ts []tool.Tool, known map[string]bool) error {
	w.remote.mu.Lock()
	defer w.remote.mu.Unlock()
	remove := slices.Clone(w.remote.names[q])
	var add []tool.Tool
	var names []string
	for _, t := range ts {
		// Whoever may reach the server may serve the queue: what a worker
		// says of its tools' effects is a claim, taken only the cautious
		// way, as an untrusted MCP server's is (Apply does that for the
		// tools of a routed [mcp.NAME], whose trust_annotations decides).
		// The caller's [tools.NAME] table says otherwise where it knows.
		if !strings.HasPrefix(t.Definition.Source, "mcp.") {
			config.Distrust(&t.Definition.Annotations)
		}
		if !cfg.Apply(&t) {
			continue
		}
		// The route says the queue's tool is the one meant: it takes the
		// place of a builtin or JavaScript tool of its name.
		if _, ok := w.Engine.Lookup(t.Definition.Name); ok && !slices.Contains(remove, t.Definition.Name) {
			remove = append(remove, t.Definition.Name)
		}
		if known != nil {
			known[t.Definition.Name] = true
		}
		add = append(add, t)
		names = append(names, t.Definition.Name)
	}
	if err := w.Engine.Replace(remove, add...); err != nil {
		return err
	}
	w.remote.names[q] = names
	return nil
}

// refreshQueue asks queue q again for its tools, once it said they
// changed, and replaces those registered from it.
func (w *Workspace) refreshQueue(opts *Options, cfg *config.Config, q string, rs []config.Route) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	served, err := w.remote.d.Queue(ctx, q, true, func() { w.refreshQueue(opts, cfg, q, rs) })
	if err != nil {
		opts.warn(fmt.Errorf("queue %q: refreshing its tools: %w", q, err))
		return
	}
	if err := w.registerRemote(cfg, q, routed(cfg, rs, served), nil); err != nil {
		opts.warn(fmt.Errorf("queue %q: refreshing its tools: %w", q, err))
	}
}

// needed reports whether a tool of need may come from the routes rs: by
// its name, or by the prefix of a routed toolset or MCP server. A nil need
// needs everything.
func needed(cfg *config.Config, rs []config.Route, need []string) bool {
	if need == nil {
		return true
	}
	for _, r := range rs {
		for _, n := range need {
			switch r.Kind {
			case "tool":
				if n == r.Name {
					return true
				}
			case "toolset":
				if strings.HasPrefix(n, cfg.Toolsets[r.Name].Prefix) {
					return true
				}
			case "mcp":
				s := *cfg.MCP[r.Name]
				s.Name = r.Name
				if strings.HasPrefix(n, s.ToolPrefix()) {
					return true
				}
			}
		}
	}
	return false
}
