package lathe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-tools/lathe/plan"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// Defaults of [BatchConfig].
const (
	DefaultBatchConcurrency  = 16
	DefaultServerConcurrency = 4
)

// BatchConfig sets how an engine runs batches ([Engine.CallBatch]). The zero
// value is ready to use.
type BatchConfig struct {
	// MaxConcurrency caps the calls of one batch that run at once. Zero
	// means [DefaultBatchConcurrency]; a negative value means no cap.
	MaxConcurrency int
	// MaxPerTool caps the calls of one tool that run at once in a batch,
	// for tools that set no [tool.Tool].MaxConcurrency. Zero means no cap.
	MaxPerTool int
	// MaxPerServer caps the calls that run at once in a batch to the tools
	// of one upstream MCP server (the tools whose Source is "mcp.NAME").
	// Zero means [DefaultServerConcurrency]; a negative value means no cap.
	MaxPerServer int
	// Servers sets the cap of single servers, keyed by NAME, in place of
	// MaxPerServer; a negative value means no cap.
	Servers map[string]int
	// ResolvePath turns a path argument of a tool that declares path
	// resources into a path relative to the workspace root, with symbolic
	// links resolved (a workspace's Resolve method), so that two names of one
	// file are seen to conflict. Nil means the lexical [plan.PathKey] alone.
	// A path it refuses counts as touching every path.
	ResolvePath func(path string) (string, error)
}

// BatchOptions adjust one batch. A nil *BatchOptions means the zero value.
type BatchOptions struct {
	// Previous holds the outcomes of an earlier run of the same batch: the
	// same calls in the same order, with answers added to the calls that
	// asked. A call whose previous outcome is a result is not run again and
	// keeps that result; the others (the questions, the calls that waited
	// for them, and calls past the end of Previous) run.
	Previous []BatchOutcome
	// StopOnError makes the first call that ends in an error result stop the
	// batch: the calls still running are cancelled and the calls not started
	// end as cancelled. Without it, a failing call stops nothing.
	StopOnError bool
	// MaxConcurrency, when not zero, replaces [BatchConfig].MaxConcurrency
	// for this batch.
	MaxConcurrency int
}

// BatchOutcome is what became of one call of a batch: its outcome (a result
// or a question) or, for a call that has not run yet, neither, and the calls
// it waits for.
type BatchOutcome struct {
	tool.Outcome
	// WaitsFor lists, for a call that did not run because it must follow
	// calls that asked questions, those calls, by their index in the batch.
	// Calling the batch again with the answers runs it.
	WaitsFor []int `json:"waitsFor,omitempty"`
}

// Pending reports that the call is not finished: it asked a question, or it
// waits for one. Calling the batch again with the answers and these outcomes
// as [BatchOptions].Previous runs exactly the pending calls.
func (o *BatchOutcome) Pending() bool { return o.Result == nil }

// Waiting reports that the call has not run because it must follow a call
// that asked a question.
func (o *BatchOutcome) Waiting() bool { return o.Result == nil && o.Question == nil }

// CallBatch runs several calls, those that do not conflict at once, and
// returns one outcome per call, in the order of calls.
//
// Two calls conflict when one may change what the other reads or writes (see
// [tool.Definition].Resources and docs/design/batch.md); conflicting calls
// never overlap in time and run in the order given, the model's order, and
// every other call runs as soon as the caps of [BatchConfig] allow.
//
// A call that asks a question does not stop the others, but the calls that
// conflict with it wait, since they must see its effect: their outcomes are
// empty and name it in WaitsFor. To go on, add the answers to the calls that
// asked and call CallBatch again with the calls and these outcomes as
// opts.Previous; only the pending calls run. Nothing is kept in the engine
// between the two: the outcomes are the whole state.
//
// Cancelling ctx cancels every running call; the calls not started end as
// cancelled too. A failing call stops the others only with
// [BatchOptions].StopOnError.
func (e *Engine) CallBatch(ctx context.Context, calls []*tool.Call, opts *BatchOptions) []BatchOutcome {
	if opts == nil {
		opts = &BatchOptions{}
	}
	outs := make([]BatchOutcome, len(calls))
	var pending []int // indexes in calls of the calls to run
	for i := range calls {
		if i < len(opts.Previous) && opts.Previous[i].Result != nil {
			outs[i] = BatchOutcome{Outcome: opts.Previous[i].Outcome}
			continue
		}
		pending = append(pending, i)
	}
	b := e.planBatch(calls, pending)
	cfg := e.batchConfig()
	if opts.MaxConcurrency != 0 {
		cfg.MaxConcurrency = opts.MaxConcurrency
	}
	rep := b.plan.Run(ctx, plan.RunOptions{Max: cfg.MaxConcurrency, Caps: b.caps, StopOnError: opts.StopOnError},
		func(ctx context.Context, k int) plan.Status {
			i := pending[k]
			var out *tool.Outcome
			if b.entries[k] == nil {
				// A tool not registered when the batch was planned never
				// runs: if it appeared since, the plan would not account
				// for its effects.
				out = e.traceUnrun(ctx, calls[i], &tool.Outcome{Result: tool.ErrorResult(unknownToolError(calls[i].Name, e.tools.Load()))})
			} else {
				out = e.Call(ctx, calls[i])
			}
			outs[i].Outcome = *out
			switch {
			case out.Question != nil:
				return plan.Asked
			case out.Result.IsError:
				return plan.Failed
			}
			return plan.Done
		})

	var stop string // why the batch stopped early, if it did
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		stop = "the batch ran out of time"
	case ctx.Err() != nil:
		stop = "the batch was cancelled"
	case rep.StoppedBy >= 0:
		i := pending[rep.StoppedBy]
		stop = "the batch stopped when " + callRef(i, calls[i]) + " failed"
	}
	for k, s := range rep.Status {
		i := pending[k]
		switch s {
		case plan.Waiting:
			var waits []int
			for _, j := range b.plan.After[k] {
				switch rep.Status[j] {
				case plan.Asked:
					waits = append(waits, pending[j])
				case plan.Waiting:
					waits = append(waits, outs[pending[j]].WaitsFor...)
				}
			}
			slices.Sort(waits)
			outs[i].WaitsFor = slices.Compact(waits)
		case plan.NotRun:
			outs[i].Outcome = tool.Outcome{Result: tool.ErrorResult(&tool.Error{Kind: stopKind(ctx),
				Tool: calls[i].Name, Stage: "batch", Message: "not run: " + stop})}
		default:
			// A call cancelled because another failed says so, rather than
			// that somebody cancelled it.
			if r := outs[i].Result; rep.StoppedBy >= 0 && k != rep.StoppedBy && ctx.Err() == nil &&
				r != nil && r.ErrorKind == tool.KindCancelled {
				outs[i].Result = tool.ErrorResult(&tool.Error{Kind: tool.KindCancelled, Tool: calls[i].Name,
					Stage: "batch", Message: "cancelled: " + stop})
			}
		}
	}
	return outs
}

// stopKind is the error kind of calls that a batch did not start.
func stopKind(ctx context.Context) tool.ErrorKind {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return tool.KindTimeout
	}
	return tool.KindCancelled
}

// callRef names call i of a batch in messages, counting from 1 as people do.
func callRef(i int, c *tool.Call) string {
	if c.ID != "" {
		return fmt.Sprintf("call #%d (%s, id %q)", i+1, c.Name, c.ID)
	}
	return fmt.Sprintf("call #%d (%s)", i+1, c.Name)
}

// PlanBatch returns the plan [Engine.CallBatch] would follow for calls,
// without running anything: each call's effects, the caps it counts against,
// and the earlier calls it must follow. A call of an unknown tool has no
// effects; it will fail without running.
func (e *Engine) PlanBatch(calls []*tool.Call) *plan.Plan {
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	return e.planBatch(calls, all).plan
}

// batchPlan is a plan with what running it needs.
type batchPlan struct {
	plan    *plan.Plan
	entries []*entry       // per planned call; nil for an unknown tool
	caps    map[string]int // the size of every cap the calls name
}

// planBatch plans the calls of calls at the indexes which. The registry is
// read once, so a batch is planned against one set of tools.
func (e *Engine) planBatch(calls []*tool.Call, which []int) batchPlan {
	cfg := e.batchConfig()
	reg := e.tools.Load()
	b := batchPlan{entries: make([]*entry, len(which)), caps: map[string]int{}}
	pcs := make([]plan.Call, len(which))
	for k, i := range which {
		c := calls[i]
		pcs[k].Name = c.Name
		en, _ := reg.get(c.Name)
		if en == nil {
			continue
		}
		b.entries[k] = en
		pcs[k].Effects = cfg.effects(en, c)
		pcs[k].Caps = b.capsOf(&cfg, &en.tool)
	}
	b.plan = plan.New(pcs)
	return b
}

// batchConfig returns the engine's batch configuration with its defaults
// filled in.
func (e *Engine) batchConfig() BatchConfig {
	cfg := e.opts.Batch
	if cfg.MaxConcurrency == 0 {
		cfg.MaxConcurrency = DefaultBatchConcurrency
	}
	if cfg.MaxPerServer == 0 {
		cfg.MaxPerServer = DefaultServerConcurrency
	}
	return cfg
}

// capsOf names the caps a call of t counts against and records their sizes:
// "tool:NAME" for the tool, and the tool's Source for a tool of an upstream
// MCP server.
func (b *batchPlan) capsOf(cfg *BatchConfig, t *tool.Tool) []string {
	var names []string
	size := t.MaxConcurrency
	if size == 0 {
		size = cfg.MaxPerTool
	}
	if size > 0 {
		name := "tool:" + t.Definition.Name
		b.caps[name] = size
		names = append(names, name)
	}
	if server, ok := strings.CutPrefix(t.Definition.Source, "mcp."); ok {
		size, ok := cfg.Servers[server]
		if !ok {
			size = cfg.MaxPerServer
		}
		if size > 0 {
			b.caps[t.Definition.Source] = size
			names = append(names, t.Definition.Source)
		}
	}
	return names
}

// effects derives what call c of the tool of en may touch.
//
// A tool's Concurrency setting wins. Otherwise a read-only tool reads and
// any other tool writes: the resources its arguments name, if it declares
// resource arguments, and everything if it does not. A tool that writes
// everything runs alone. The arguments are read as the pipeline will read
// them, string-encoded JSON repaired and defaults filled in, so that the
// plan sees the paths the tool will see.
func (cfg *BatchConfig) effects(en *entry, c *tool.Call) plan.Effects {
	t := &en.tool
	switch t.Concurrency {
	case tool.ConcurrencyExclusive:
		return plan.Effects{Exclusive: true}
	case tool.ConcurrencyShared:
		return plan.Effects{}
	}
	d := &t.Definition
	access := plan.Write
	if d.Annotations.ReadOnlyHint {
		access = plan.Read
	}
	if len(d.Resources) == 0 {
		if access == plan.Read {
			return plan.Effects{Uses: []plan.Use{{Access: plan.Read}}}
		}
		return plan.Effects{Exclusive: true}
	}
	args, err := schema.Decode(c.Arguments)
	if err == nil {
		args, _ = en.input.Coerce(args)
		args, _ = en.input.ApplyDefaults(args)
	}
	uses := make([]plan.Use, 0, len(d.Resources))
	for _, r := range d.Resources {
		a := access
		switch r.Access {
		case tool.AccessRead:
			a = plan.Read
		case tool.AccessWrite:
			a = plan.Write
		}
		var v any // nil, and so every resource of the kind, unless found
		if err == nil {
			v, _ = lookupArg(args, r.Arg)
		}
		uses = cfg.appendUses(uses, r.Kind, a, v)
	}
	return plan.Effects{Uses: uses}
}

// appendUses appends the uses that the value v of a resource argument names:
// one for a string, one per element for an array of strings, and every
// resource of the kind when the argument is absent (v is nil) or of another
// type.
func (cfg *BatchConfig) appendUses(uses []plan.Use, kind string, a plan.Access, v any) []plan.Use {
	everyOfKind := plan.Use{Resource: plan.Resource{Kind: kind}, Access: a}
	switch v := v.(type) {
	case string:
		return append(uses, plan.Use{Resource: plan.Resource{Kind: kind, Key: cfg.key(kind, v)}, Access: a})
	case []any:
		for _, el := range v {
			s, ok := el.(string)
			if !ok {
				return append(uses, everyOfKind)
			}
			uses = append(uses, plan.Use{Resource: plan.Resource{Kind: kind, Key: cfg.key(kind, s)}, Access: a})
		}
		return uses
	}
	return append(uses, everyOfKind)
}

// key turns the value of a resource argument into the planner's key.
func (cfg *BatchConfig) key(kind, v string) string {
	if kind != tool.ResourcePath {
		return v
	}
	if cfg.ResolvePath != nil {
		rel, err := cfg.ResolvePath(v)
		if err != nil {
			return ""
		}
		v = rel
	}
	return plan.PathKey(v)
}

// lookupArg finds an argument: a top-level property by name, or a nested
// value by JSON pointer.
func lookupArg(args any, arg string) (any, bool) {
	if !strings.HasPrefix(arg, "/") {
		m, ok := args.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[arg]
		return v, ok
	}
	v := args
	for _, tok := range strings.Split(arg[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[tok]; !ok {
				return nil, false
			}
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(x) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			v = x[n]
		default:
			return nil, false
		}
	}
	return v, true
}

// checkBatchFields checks at registration the fields of t that batches read.
func checkBatchFields(t *tool.Tool) error {
	name := t.Definition.Name
	switch t.Concurrency {
	case tool.ConcurrencyAuto, tool.ConcurrencyShared, tool.ConcurrencyExclusive:
	default:
		return fmt.Errorf("lathe: tool %q: concurrency %q: want %q, %q or empty", name, t.Concurrency,
			tool.ConcurrencyShared, tool.ConcurrencyExclusive)
	}
	if t.MaxConcurrency < 0 {
		return fmt.Errorf("lathe: tool %q: negative max concurrency %d", name, t.MaxConcurrency)
	}
	for i, r := range t.Definition.Resources {
		switch {
		case r.Arg == "" || r.Arg == "/":
			return fmt.Errorf("lathe: tool %q: resources[%d]: no argument named", name, i)
		case r.Kind == "":
			return fmt.Errorf("lathe: tool %q: resources[%d]: no kind", name, i)
		case r.Access != "" && r.Access != tool.AccessRead && r.Access != tool.AccessWrite:
			return fmt.Errorf("lathe: tool %q: resources[%d]: access %q: want %q, %q or empty", name, i, r.Access,
				tool.AccessRead, tool.AccessWrite)
		case strings.HasPrefix(r.Arg, "/") && badPointer(r.Arg):
			return fmt.Errorf("lathe: tool %q: resources[%d]: %q is not a JSON pointer: ~ must be followed by 0 or 1",
				name, i, r.Arg)
		}
	}
	return nil
}

func badPointer(p string) bool {
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return true
		}
	}
	return false
}
