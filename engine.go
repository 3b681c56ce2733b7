package lathe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// Default limits, used where [Options] leaves a field zero.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxOutputBytes = 256 << 10
)

// Options configure an [Engine]. The zero value is ready to use.
type Options struct {
	// Timeout bounds a call whose tool sets no timeout of its own.
	// Zero means [DefaultTimeout].
	Timeout time.Duration
	// MaxOutputBytes caps the content of one result; past it, content is cut
	// and a note says so. Zero means [DefaultMaxOutputBytes]; negative means no cap.
	MaxOutputBytes int
	// Middleware runs, in order, after the arguments are validated and before
	// the tool executes: the place for policy, approval and audit stages.
	Middleware []Middleware
	// Outer runs, in order, before the tool is even resolved, inside the
	// engine's own logging: it sees every call, those for unknown tools and
	// with invalid arguments included, so it is the place for an audit log.
	// Inv.Tool is nil there until next returns.
	Outer []Middleware
	// Logger receives call records at debug level and output-schema
	// warnings. Nil discards them, and then the output is not checked at all:
	// a check whose only effect is a warning nobody reads is not worth its
	// cost on every call.
	Logger *slog.Logger
	// Batch configures [Engine.CallBatch]: its caps on concurrency and how
	// it compares paths.
	Batch BatchConfig
}

// Engine is a registry of tools and the pipeline that runs their calls. Its
// methods are safe for concurrent use.
type Engine struct {
	opts    Options
	tools   atomic.Pointer[registry]
	mu      sync.Mutex // serialises writers of tools
	handler Handler
	closed  atomic.Bool
	ownMu   sync.Mutex
	owned   []io.Closer // resources the engine closes last (Own)
	alarms  alarms      // the deadlines of calls that run on goroutines of their own
	workers workers     // the goroutines they run on
	events  hub         // the subscribers to the engine's events
}

// entry is a registered tool with its compiled schemas.
type entry struct {
	tool   tool.Tool
	input  *schema.Schema
	output *schema.Schema // nil when the tool declares no output schema
	// cooperative says the runtime returns promptly when its context ends,
	// so it may run on the caller's goroutine.
	cooperative bool
}

// New returns an engine with no tools.
func New(opts Options) *Engine {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxOutputBytes == 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{opts: opts}
	e.tools.Store(&registry{})
	e.handler = e.pipeline()
	return e
}

// Register adds tools to the engine. Each tool's schemas are checked here,
// and compiled once: here, or at the tool's first call when the check is
// sure they compile (see [schema.Prepare]); no later call compiles one.
// Registration is all or nothing: an invalid name, a bad schema or a name
// already taken adds none of the tools.
func (e *Engine) Register(tools ...tool.Tool) error { return e.Replace(nil, tools...) }

func sourceOf(d tool.Definition) string {
	if d.Source == "" {
		return "an unnamed source"
	}
	return d.Source
}

func compile(t tool.Tool) (*entry, error) {
	d := &t.Definition
	if !tool.ValidName(d.Name) {
		return nil, fmt.Errorf("lathe: invalid tool name %q: must match %s", d.Name, tool.NamePattern)
	}
	if t.Runtime == nil {
		return nil, fmt.Errorf("lathe: tool %q has no runtime", d.Name)
	}
	if err := checkBatchFields(&t); err != nil {
		return nil, err
	}
	in, err := schema.Prepare(d.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("lathe: tool %q: input schema: %w", d.Name, err)
	}
	if len(d.InputSchema) == 0 {
		d.InputSchema = in.Raw()
	}
	en := &entry{tool: t, input: in}
	if c, ok := t.Runtime.(tool.Cooperative); ok {
		en.cooperative = c.Cooperative()
	}
	if len(d.OutputSchema) > 0 {
		if en.output, err = schema.Prepare(d.OutputSchema); err != nil {
			return nil, fmt.Errorf("lathe: tool %q: output schema: %w", d.Name, err)
		}
	}
	return en, nil
}

// Unregister removes the named tools; names not registered are ignored.
func (e *Engine) Unregister(names ...string) {
	// Replace with nothing to add cannot fail but on a closed engine, where
	// there is nothing left to remove from.
	_ = e.Replace(names)
}

// Tools returns the definitions of every registered tool, sorted by name.
func (e *Engine) Tools() []tool.Definition {
	reg := e.tools.Load()
	defs := make([]tool.Definition, 0, reg.len())
	for _, en := range reg.all() {
		defs = append(defs, en.tool.Definition)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// Lookup returns the definition of the named tool.
func (e *Engine) Lookup(name string) (tool.Definition, bool) {
	en, ok := e.tools.Load().get(name)
	if !ok {
		return tool.Definition{}, false
	}
	return en.tool.Definition, true
}

// Call runs one call through the pipeline and returns its outcome, never nil.
// Every failure — an unknown tool, invalid arguments, a timeout, a panic — is
// an error result carrying its [tool.ErrorKind]; [tool.Outcome.Err] turns it
// into a Go error for callers who want one.
//
// The outcome may share memory with what the tool returned (a tool may
// return the same result to every call): treat it as read-only, and copy it
// before changing it. The engine itself never changes c or what the tool
// returned.
func (e *Engine) Call(ctx context.Context, c *tool.Call) *tool.Outcome {
	inv := &Invocation{Call: c}
	if e.events.wants(callKinds) {
		return e.callTraced(ctx, inv)
	}
	out, err := e.handler(ctx, inv)
	if err != nil {
		return &tool.Outcome{Result: tool.ErrorResult(err)}
	}
	return out
}

// Close releases the runtimes' resources (processes, connections). The
// engine accepts no calls afterwards.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.events.close()
	e.workers.close()
	seen := map[tool.Runtime]bool{}
	var errs []error
	for _, en := range e.tools.Load().all() {
		rt := en.tool.Runtime
		c, ok := rt.(tool.Closer)
		if !ok || seen[rt] {
			continue
		}
		seen[rt] = true
		if err := c.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing runtime of %s: %w", en.tool.Definition.Name, err))
		}
	}
	e.ownMu.Lock()
	owned := e.owned
	e.owned = nil
	e.ownMu.Unlock()
	for i := len(owned) - 1; i >= 0; i-- {
		if err := owned[i].Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Own hands c to the engine: [Engine.Close] closes it, after the runtimes of
// the tools, in the reverse order of Own. It is for what a source of tools
// opens once for many of them and must outlive every call, whether or not it
// holds a tool at the moment: an upstream MCP server's pool, whose servers
// may list their tools later. On a closed engine Own closes c at once and
// returns an error.
func (e *Engine) Own(c io.Closer) error {
	e.ownMu.Lock()
	if !e.closed.Load() {
		e.owned = append(e.owned, c)
		e.ownMu.Unlock()
		return nil
	}
	e.ownMu.Unlock()
	c.Close()
	return errors.New("lathe: own on a closed engine")
}

// Replace removes the named tools and registers add, in one step: a
// concurrent call sees the registry before or after, never a state in
// between. It is how a source whose tools change while the engine runs (an
// upstream MCP server that sends notifications/tools/list_changed) refreshes
// them. Like [Engine.Register] it is all or nothing: an invalid tool, or a
// name taken by a tool that is not removed, changes nothing.
func (e *Engine) Replace(remove []string, add ...tool.Tool) error {
	if e.closed.Load() {
		return errors.New("lathe: replace on a closed engine")
	}
	entries := make([]*entry, 0, len(add))
	for _, t := range add {
		en, err := compile(t)
		if err != nil {
			return err
		}
		entries = append(entries, en)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	old := e.tools.Load()
	next := old.edit()
	for _, n := range remove {
		next.remove(n)
	}
	for _, en := range entries {
		name := en.tool.Definition.Name
		if prev, ok := next.get(name); ok {
			return fmt.Errorf("lathe: tool %q from %s collides with the tool of that name from %s",
				name, sourceOf(en.tool.Definition), sourceOf(prev.tool.Definition))
		}
		next.put(en)
	}
	e.tools.Store(next.done())
	// Published under e.mu, so that subscribers see the changes in the
	// order they were made.
	if e.events.wants(EventToolsChanged.bit()) {
		e.events.toolsChanged(old, remove, entries)
	}
	return nil
}
