package process

import (
	"context"
	"fmt"

	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/schema"
	"github.com/lathe-tools/lathe/tool"
)

// NewTool returns a tool that runs cmd with the definition def: the way to
// make a tool of a program whose parameters one declares oneself. An empty
// def.Runtime becomes [RuntimeName] and an empty def.Source "local". The
// tool's calls send opts.Tool, or def.Name when it is empty, as the name of
// the tool the binary runs.
func NewTool(def tool.Definition, cmd Command, opts Options) (tool.Tool, error) {
	if def.Runtime == "" {
		def.Runtime = RuntimeName
	}
	if def.Source == "" {
		def.Source = "local"
	}
	rt, err := New(cmd, opts)
	if err != nil {
		return tool.Tool{}, err
	}
	return tool.Tool{Definition: def, Runtime: rt}, nil
}

// Definition returns the definition of the tool a binary described as s,
// named name (s.Name with a prefix, say), and checks it as registering it
// will: the name must be valid and the schemas must compile. The error says
// what is wrong. A binary's answer is its own, hostile or mistaken, so the
// caller leaves out that one tool and keeps the others.
func Definition(s protocol.ToolSchema, name string) (tool.Definition, error) {
	if !tool.ValidName(name) {
		return tool.Definition{}, fmt.Errorf("%q is not a valid tool name", name)
	}
	def := tool.Definition{
		Name: name, Source: "local", Runtime: RuntimeName,
		Summary: s.Summary, Description: s.Description,
		InputSchema: s.Parameters, OutputSchema: s.OutputSchema, Annotations: s.Annotations,
	}
	if _, err := schema.Prepare(def.InputSchema); err != nil {
		return tool.Definition{}, fmt.Errorf("its input schema is refused: %w", err)
	}
	if len(def.OutputSchema) > 0 {
		if _, err := schema.Prepare(def.OutputSchema); err != nil {
			return tool.Definition{}, fmt.Errorf("its output schema is refused: %w", err)
		}
	}
	return def, nil
}

// Toolset is a self-describing binary: one that answers the schema action
// with the definitions of the tools it holds.
type Toolset struct {
	// Command starts the binary, for its description and for every call.
	Command Command
	// Options apply to every call and to the run that describes the tools,
	// sandbox included, so that the binary is never less confined while it
	// describes itself. Options.Tool is set per tool.
	Options Options
	// Prefix is put before the name of each tool.
	Prefix string
	// Cache, when set, remembers the description (see [Cache]); nil asks the
	// binary each time.
	Cache *Cache
}

// LeftOutError reports a tool of a [Toolset] that was left out because what
// its binary said of it is unusable: a bad name or a schema that does not
// compile.
type LeftOutError struct {
	Name string // the tool's name, prefix included
	Err  error
}

func (e *LeftOutError) Error() string {
	return fmt.Sprintf("the tool %s is left out: %v", e.Name, e.Err)
}

func (e *LeftOutError) Unwrap() error { return e.Err }

// Tools asks the binary for its tools and returns one tool for each. A tool
// whose name or schema is bad costs that tool alone: it is left out, and
// leftOut (each a [*LeftOutError]) says why. err reports a binary that
// could not be asked or did not describe itself (matching [ErrNoSchema]).
// ctx bounds the description, not the calls.
func (s Toolset) Tools(ctx context.Context) (tools []tool.Tool, leftOut []error, err error) {
	var schemas []protocol.ToolSchema
	if s.Cache != nil {
		schemas, err = s.Cache.Describe(ctx, s.Command, &s.Options)
	} else {
		schemas, err = Describe(ctx, s.Command, &s.Options)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, d := range schemas {
		name := s.Prefix + d.Name
		def, err := Definition(d, name)
		if err != nil {
			leftOut = append(leftOut, &LeftOutError{Name: name, Err: err})
			continue
		}
		opts := s.Options
		opts.Tool = d.Name
		t, err := NewTool(def, s.Command, opts)
		if err != nil {
			closeTools(tools)
			return nil, nil, err
		}
		tools = append(tools, t)
	}
	return tools, leftOut, nil
}

func closeTools(ts []tool.Tool) {
	for _, t := range ts {
		if c, ok := t.Runtime.(tool.Closer); ok {
			c.Close()
		}
	}
}
