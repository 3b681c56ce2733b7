package tool

import (
	"encoding/json"
	"regexp"
	"time"
)

// Definition is what a model sees of a tool.
type Definition struct {
	// Name is unique in an engine and matches [NamePattern].
	Name string `json:"name"`
	// Summary is one short line, what is sent to a model by default.
	Summary string `json:"summary,omitempty"`
	// Description is the full text: when to use the tool, what it returns.
	Description string `json:"description,omitempty"`
	// InputSchema is a JSON Schema object describing the arguments.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema, if set, describes the structured part of a result.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are hints about the tool's effects, named as in MCP.
	Annotations Annotations `json:"annotations,omitzero"`
	// Source says where the definition came from: "builtin", "local", "mcp.NAME".
	Source string `json:"source,omitempty"`
	// Runtime names the runtime that executes the tool: "builtin", "process", "mcp" …
	Runtime string `json:"runtime,omitempty"`
	// Resources names the arguments that say which resources a call touches
	// (a file path, say), so that a batch runs calls on different resources at
	// once and keeps the order of calls on the same one. A tool that declares
	// resources promises that its calls touch nothing else; one that declares
	// none is taken to touch everything (see docs/design/batch.md).
	Resources []ResourceArg `json:"resources,omitempty"`
}

// ResourceArg declares one argument whose value names a resource a call
// touches. The value is a string, or an array of strings for several
// resources; a call that leaves the argument out touches every resource of
// the kind.
type ResourceArg struct {
	// Arg is the argument: the name of a top-level property ("path"), or a
	// JSON pointer to a nested one ("/options/dest").
	Arg string `json:"arg"`
	// Kind is the kind of resource the value names. [ResourcePath] values are
	// file paths in the workspace, compared after normalisation and
	// overlapping when one lies beneath the other; values of any other kind
	// are compared exactly.
	Kind string `json:"kind"`
	// Access is [AccessRead] or [AccessWrite]; empty means read for a
	// read-only tool ([Annotations].ReadOnlyHint) and write otherwise.
	Access string `json:"access,omitempty"`
}

// Kinds and accesses of [ResourceArg].
const (
	ResourcePath = "path"
	AccessRead   = "read"
	AccessWrite  = "write"
)

// Annotations are hints about a tool's behaviour, with the names and meanings
// MCP gives them. A nil pointer means the tool did not say; MCP's defaults for
// an unsaid hint are the cautious ones (destructive, open world).
type Annotations struct {
	// Title is a human-readable name.
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool does not change its environment.
	ReadOnlyHint bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: the tool may destroy or overwrite (meaningful only when not read-only).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: calling again with the same arguments has no further effect.
	IdempotentHint bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool reaches beyond a closed domain (the network, say).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// Bool returns a pointer to b, for the optional hints of [Annotations].
func Bool(b bool) *bool { return &b }

// NamePattern is the form of a tool name that every major model provider
// accepts, as a regular expression. It is a constant, not a compiled
// variable, so that no package a program imports can widen the names an
// engine accepts; [ValidName] checks a name against it.
const NamePattern = `^[A-Za-z][A-Za-z0-9_-]{0,63}$`

var namePattern = regexp.MustCompile(NamePattern)

// ValidName reports whether name matches [NamePattern].
func ValidName(name string) bool { return namePattern.MatchString(name) }

// Tool pairs a definition with the runtime that executes it and the settings
// that govern its calls.
type Tool struct {
	Definition Definition
	Runtime    Runtime
	// Timeout bounds one call; zero means the engine's default.
	Timeout time.Duration
	// Concurrency overrides what a batch infers from the definition's
	// annotations and resources about running this tool's calls beside others.
	Concurrency Concurrency
	// MaxConcurrency caps how many calls of this tool one batch runs at once;
	// zero means no cap of the tool's own.
	MaxConcurrency int
}

// Concurrency says how a batch may run a tool's calls beside other calls.
type Concurrency string

const (
	// ConcurrencyAuto infers it from the definition: a read-only tool reads
	// the resources it declares (everything, if it declares none); any other
	// tool writes the resources it declares and, declaring none, runs alone.
	ConcurrencyAuto Concurrency = ""
	// ConcurrencyShared says that the tool's calls touch nothing other calls
	// see (a web search, a computation), so they run beside any call that is
	// not itself exclusive.
	ConcurrencyShared Concurrency = "shared"
	// ConcurrencyExclusive says that each call of the tool runs alone: after
	// every earlier call of the batch has ended, before any later one starts.
	ConcurrencyExclusive Concurrency = "exclusive"
)
