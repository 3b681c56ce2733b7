package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
)

// Temporal is the [temporal] table: where the Temporal server is that
// carries the calls of tools routed to a queue (see docs/temporal.md), for
// the lathe that sends them and for lathe worker, which serves them.
type Temporal struct {
	// Address is the server's frontend, host:port. Empty means
	// "localhost:7233", the address of a development server.
	Address string `toml:"address"`
	// Namespace is the Temporal namespace. Empty means "default".
	Namespace string `toml:"namespace"`
}

// Queue names a task queue of workers (lathe worker --queue NAME). A tool,
// a toolset or an MCP server whose table sets queue = "NAME" runs on those
// workers rather than here.
type Queue string

// queuePattern keeps queue names to what reads well in a command line and
// a log, far below Temporal's own limit.
var queuePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidQueue reports whether name is a queue name a configuration accepts.
func ValidQueue(name string) bool { return queuePattern.MatchString(name) }

// validate accepts the queue names of [ValidQueue]; the decoder calls it.
func (q Queue) validate() error {
	if q == "" || ValidQueue(string(q)) {
		return nil
	}
	return fmt.Errorf("must be a queue name (letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100), got %q", string(q))
}

// Route is one table of the configuration whose tools run on a queue's
// workers: a [tools.NAME], [toolsets.NAME] or [mcp.NAME] table with a
// queue key.
type Route struct {
	// Queue is the queue's name.
	Queue string
	// Kind is "tool", "toolset" or "mcp", and Name the table's NAME.
	Kind, Name string
	// Pos is where the table is.
	Pos Pos
}

// Routes returns the tables of c whose tools run on a queue's workers,
// less those of the queue serving names (the queue of the lathe worker
// reading c, whose tools run here, so that one configuration serves the
// caller and its workers alike). Disabled tables are left out.
func (c *Config) Routes(serving string) []Route {
	if c == nil {
		return nil
	}
	var out []Route
	keep := func(q Queue, enable *bool) bool {
		return q != "" && string(q) != serving && (enable == nil || *enable)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
		if t := c.Tools[name]; t != nil && keep(t.Queue, t.Enable) {
			out = append(out, Route{Queue: string(t.Queue), Kind: "tool", Name: name, Pos: t.Pos})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Toolsets)) {
		if s := c.Toolsets[name]; s != nil && keep(s.Queue, s.Enable) {
			out = append(out, Route{Queue: string(s.Queue), Kind: "toolset", Name: name, Pos: s.Pos})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.MCP)) {
		if s := c.MCP[name]; s != nil && keep(s.Queue, s.Enable) {
			out = append(out, Route{Queue: string(s.Queue), Kind: "mcp", Name: name, Pos: s.Pos})
		}
	}
	return out
}

// Table returns the table of r, as in "tools.NAME".
func (r Route) Table() string {
	switch r.Kind {
	case "tool":
		return "tools." + r.Name
	case "toolset":
		return "toolsets." + r.Name
	}
	return r.Kind + "." + r.Name
}
