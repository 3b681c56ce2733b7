// Package tools is lathe's standard builtin toolset: reading, writing and
// editing files, listing directories and searching them, all confined to one
// workspace directory, and describe_tools, which gives a model the full
// definition of a tool whose summary was all it saw.
//
// Register the set on an engine:
//
//	e := lathe.New(lathe.Options{})
//	ts, err := tools.Standard("/path/to/project", tools.Options{Describe: e.Lookup})
//	if err != nil {
//		return err
//	}
//	e.Register(ts...)
//
// Every path a tool receives is taken relative to the workspace root; an
// absolute path is accepted only if it leads inside. Symbolic links are
// resolved before that check (see [Workspace.Resolve]), and the files are then
// reached from a descriptor of the root one path element at a time without
// following any link, so neither "..", an absolute path, nor a symbolic link,
// not even one swapped in while a call runs, takes a tool outside or into
// lathe's state directory. The tools that change files also refuse lathe's
// own configuration (see package [protect]). Only regular files and
// directories are ever opened: a FIFO or a device never blocks a call. A
// refused path fails the call with the error kind [tool.KindDenied] and
// changes nothing on disk.
//
// Other failures (a missing file, an old_string that is not unique) are error
// results of kind [tool.KindToolError] whose text names the path, relative to
// the workspace, and what was wrong, so that a model can correct its call.
package tools

import (
	"errors"
	"fmt"

	"github.com/lathe-tools/lathe/tool"
)

// Defaults for the zero fields of [Options].
const (
	DefaultMaxReadBytes   = 256 << 10
	DefaultMaxGrepResults = 200
	DefaultMaxGlobResults = 1000
	DefaultMaxEditBytes   = 8 << 20
)

// Options configure the standard tools. The zero value is ready to use, but
// leaves out describe_tools, which needs Describe.
type Options struct {
	// Describe looks up a registered tool's definition, for describe_tools;
	// pass the engine's Lookup. When nil, describe_tools is not part of the set.
	Describe func(name string) (tool.Definition, bool)
	// Declaration, when set, renders a tool as a TypeScript declaration
	// (how a code-mode script calls it), which describe_tools shows after
	// the schemas.
	Declaration func(def tool.Definition) string
	// MaxReadBytes caps what one read_file call returns, its notes included.
	// Zero means [DefaultMaxReadBytes].
	MaxReadBytes int
	// MaxGrepResults caps the matching lines one grep call returns. Zero
	// means [DefaultMaxGrepResults].
	MaxGrepResults int
	// MaxGlobResults caps the paths one glob call returns. Zero means
	// [DefaultMaxGlobResults].
	MaxGlobResults int
	// MaxEditBytes is the largest file edit_file reads, and the largest it
	// writes back; a larger one is refused before any of it is read. Zero
	// means [DefaultMaxEditBytes].
	MaxEditBytes int
	// Workspace, when set, is the workspace the tools work in (its root
	// must be the root Standard is given), shared with the caller, who
	// closes it. When nil, Standard opens one of its own, which the tools
	// hold, with a descriptor of the root, for as long as the program runs.
	Workspace *Workspace
}

// Names of the standard tools.
const (
	ReadFile      = "read_file"
	WriteFile     = "write_file"
	EditFile      = "edit_file"
	ListDir       = "list_dir"
	Glob          = "glob"
	Grep          = "grep"
	DescribeTools = "describe_tools"
)

// set is the state the standard tools share.
type set struct {
	ws   *Workspace
	opts Options
}

// Standard returns the standard tools confined to root, an existing
// directory. root's own symbolic links are resolved once, here.
func Standard(root string, opts Options) ([]tool.Tool, error) {
	if opts.MaxReadBytes <= 0 {
		opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if opts.MaxGrepResults <= 0 {
		opts.MaxGrepResults = DefaultMaxGrepResults
	}
	if opts.MaxGlobResults <= 0 {
		opts.MaxGlobResults = DefaultMaxGlobResults
	}
	if opts.MaxEditBytes <= 0 {
		opts.MaxEditBytes = DefaultMaxEditBytes
	}
	ws := opts.Workspace
	if ws == nil {
		var err error
		if ws, err = NewWorkspace(root); err != nil {
			return nil, fmt.Errorf("tools: %w", err)
		}
	}
	s := &set{ws: ws, opts: opts}
	builders := []func() (tool.Tool, error){
		s.readTool, s.writeTool, s.editTool, s.listTool, s.globTool, s.grepTool,
	}
	if opts.Describe != nil {
		builders = append(builders, s.describeTool)
	}
	var ts []tool.Tool
	var errs []error
	for _, b := range builders {
		t, err := b()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ts = append(ts, t)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	return ts, nil
}

// readOnly and the other annotation helpers state each tool's effects
// truthfully: nothing here reaches beyond the workspace, so none is open-world.
func readOnly(title string) tool.Annotations {
	return tool.Annotations{Title: title, ReadOnlyHint: true, DestructiveHint: tool.Bool(false),
		IdempotentHint: true, OpenWorldHint: tool.Bool(false)}
}

func writes(title string, idempotent bool) tool.Annotations {
	return tool.Annotations{Title: title, DestructiveHint: tool.Bool(true), IdempotentHint: idempotent,
		OpenWorldHint: tool.Bool(false)}
}

// invalidArg is the error for an argument the schema allows but the tool
// cannot use (a regular expression that does not compile, say): the model
// must repair its call, as for a schema violation.
func invalidArg(format string, args ...any) error {
	return &tool.Error{Kind: tool.KindInvalidArguments, Message: fmt.Sprintf(format, args...)}
}
