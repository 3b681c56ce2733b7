package load

import (
	"fmt"
	"maps"
	"slices"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// registerRunCode registers code mode's run_code, unless [tools.run_code]
// enable = false. It is registered after the builtin tools and kept current
// as the others come and go (local tools, upstream servers, tool files).
// Its policy is the default of a tool that is not read-only: it asks. A
// script can do anything its nested calls can, but each nested call is
// weighed by the policy on its own as well, so allowing run_code does not
// allow what it calls.
func registerRunCode(e *lathe.Engine, cfg *config.Config, known map[string]bool) error {
	opts, err := runCodeConfig(cfg.Tools[codemode.Name])
	if err != nil {
		return &ConfigError{err}
	}
	opts.Hide = deniedOutright(Policy(cfg))
	t := codemode.New(e, opts)
	known[t.Definition.Name] = true
	if !cfg.Apply(&t) {
		return nil
	}
	if err := e.Register(t); err != nil {
		return err
	}
	return e.Own(closerFunc(codemode.Watch(e, t, opts)))
}

// deniedOutright reports the tools p denies whatever their arguments,
// which code mode does not offer to the model.
func deniedOutright(p *policy.Policy) func(tool.Definition) bool {
	return func(def tool.Definition) bool {
		_, denied := p.DeniesOutright(&def)
		return denied
	}
}

// declaration renders a tool for describe_tools as a run_code script calls
// it, while run_code is registered in e; a tool the policy denies outright
// has none, since a script cannot call it.
func declaration(e *lathe.Engine, cfg *config.Config) func(tool.Definition) string {
	denied := deniedOutright(Policy(cfg))
	return func(def tool.Definition) string {
		if def.Name == codemode.Name || denied(def) {
			return ""
		}
		if _, ok := e.Lookup(codemode.Name); !ok {
			return ""
		}
		return codemode.Declaration(def)
	}
}

type closerFunc func()

func (f closerFunc) Close() error {
	f()
	return nil
}

// runCodeOptions reports whether t is run_code's table with options and no
// other key of a local tool: [tools.run_code.options] sets its limits.
func runCodeOptions(name string, t *config.Tool) bool {
	return name == codemode.Name && t.Options != nil && !t.IsLocal() && t.Parameters == nil && t.Env == nil &&
		!t.Shell && t.Runtime == ""
}

// runCodeConfig reads [tools.run_code.options]: max_calls,
// max_concurrent_calls, max_output_bytes and memory_bytes, each a positive
// integer. Errors name the table's file
// and line.
func runCodeConfig(t *config.Tool) (codemode.Options, error) {
	var opts codemode.Options
	if t == nil || t.Options == nil {
		return opts, nil
	}
	for _, k := range slices.Sorted(maps.Keys(t.Options)) {
		n, ok := t.Options[k].(int64)
		if !ok || n <= 0 {
			return opts, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
				"tools.run_code.options.%s: expected a positive integer, got %v", k, t.Options[k])}
		}
		switch k {
		case "max_calls":
			opts.MaxCalls = int(n)
		case "max_output_bytes":
			opts.MaxOutput = int(n)
		case "memory_bytes":
			opts.MemoryLimit = n
		case "max_concurrent_calls":
			opts.MaxConcurrent = int(n)
		default:
			return opts, &config.Error{Pos: t.Pos, Msg: fmt.Sprintf(
				"tools.run_code.options: unknown key %q (max_calls, max_concurrent_calls, max_output_bytes, memory_bytes)", k)}
		}
	}
	return opts, nil
}
