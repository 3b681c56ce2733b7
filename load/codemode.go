package load

import (
	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/codemode"
	"github.com/lathe-tools/lathe/config"
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
	var opts codemode.Options
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

// declaration renders a tool for describe_tools as a run_code script calls
// it, while run_code is registered in e.
func declaration(e *lathe.Engine) func(tool.Definition) string {
	return func(def tool.Definition) string {
		if def.Name == codemode.Name {
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
