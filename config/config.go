package config

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/tool"
)

// Config is what the config files say, merged. Its zero value, and a nil
// *Config, configure nothing: every setting is the engine's default.
//
// Each field tagged `toml:"…"` is a key (or a table) of the file; see the
// decoder's rules in decode.go for what each Go type accepts.
type Config struct {
	// Defaults holds the [defaults] table: settings for every tool.
	Defaults Defaults `toml:"defaults"`
	// Batch holds the [batch] table: caps on how many calls of one batch run at once.
	Batch Batch `toml:"batch"`
	// Tools holds the [tools.NAME] tables, keyed by NAME: overrides for one tool.
	Tools map[string]*Tool `toml:"tools"`
	// MCP holds the [mcp.NAME] tables, keyed by NAME: upstream MCP servers
	// (see mcp.go).
	MCP map[string]*MCPServer `toml:"mcp"`
	// Toolsets holds the [toolsets.NAME] tables: binaries each of which
	// describes several tools (see local.go).
	Toolsets map[string]*Toolset `toml:"toolsets"`
	// Policy holds the [policy] table: approval rules (see policy.go).
	Policy Policy `toml:"policy"`
	// Audit holds the [audit] table: the audit log and grants database.
	Audit Audit `toml:"audit"`
	// Serve holds the [serve] table: settings of lathe serve.
	Serve Serve `toml:"serve"`
	// Sandbox holds the [sandbox] table: profile, limits and permissions of
	// process tools (see sandbox.go).
	Sandbox Sandbox `toml:"sandbox"`
	// Telemetry holds the [telemetry] table: what OpenTelemetry spans may
	// carry of a call (see telemetry.go).
	Telemetry Telemetry `toml:"telemetry"`
	// ToolsDirs are more directories of JavaScript and TypeScript tools
	// (tools_dirs, absolute paths or ~/…), beside the workspace's
	// .lathe/tools and the user's own tools directory.
	ToolsDirs []string `toml:"tools_dirs"`
	// Temporal holds the [temporal] table: the server that carries the
	// calls of tools routed to a queue (see temporal.go).
	Temporal Temporal `toml:"temporal"`
	// Files names the files that were read, lowest precedence first.
	Files []string `toml:"-"`

	// origins says where each value was set (see origin.go).
	origins origins `toml:"-"`
}

// Defaults is the [defaults] table.
type Defaults struct {
	// Timeout bounds one call of any tool that sets none itself, as in
	// timeout = "60s". Zero means the engine's default.
	Timeout time.Duration `toml:"timeout"`
	// MaxOutputBytes caps the output a call may return, in bytes. Zero means
	// the engine's default.
	MaxOutputBytes int `toml:"max_output_bytes"`
}

// Serve is the [serve] table: settings of lathe serve.
type Serve struct {
	// ApprovalWait bounds how long a call whose client cannot answer an
	// approval (no elicitation) waits for an answer from the HTTP API or
	// its page, as in approval_wait = "2m". Zero means the default of
	// package approvals; the call's own timeout bounds the wait too.
	ApprovalWait time.Duration `toml:"approval_wait"`
	// RoundWait bounds how long a call of an MCP 2026-07-28 client that
	// asked its client a question waits for the client's next round, as in
	// round_wait = "5m"; zero means two minutes. The call's own timeout
	// ends the wait sooner.
	RoundWait time.Duration `toml:"round_wait"`
	// MaxWaitingPerClient and MaxWaiting cap the calls that wait so at
	// once, of one client and of all clients; zero means 64 and 1,024.
	MaxWaitingPerClient int `toml:"max_waiting_per_client"`
	MaxWaiting          int `toml:"max_waiting"`
}

// Tool is a [tools.NAME] table: overrides for the tool named NAME.
type Tool struct {
	// Name is NAME; it matches [tool.NamePattern].
	Name string `toml:"-"`
	// Enable = false hides the tool; nil means it was not said.
	Enable *bool `toml:"enable"`
	// Timeout bounds one call of this tool, as in timeout = "30s". Zero means
	// the tool's own timeout, or the default.
	Timeout time.Duration `toml:"timeout"`
	// Profile is the sandbox profile of this tool's process, overriding
	// [sandbox] profile and, for a toolset's tool, [toolsets.NAME] profile.
	Profile SandboxProfile `toml:"profile"`
	// Summary replaces the one-line summary a model sees.
	Summary string `toml:"summary"`
	// Description replaces the full description.
	Description string `toml:"description"`
	// Concurrency says how a batch may run the tool's calls beside others:
	// "shared" (they touch nothing other calls touch), "exclusive" (each runs
	// alone), or unset to infer it from the tool's annotations and resources.
	Concurrency Concurrency `toml:"concurrency"`
	// MaxConcurrency caps how many calls of the tool one batch runs at once.
	// Zero means no cap of its own.
	MaxConcurrency int `toml:"max_concurrency"`
	// Queue, if set, runs the tool on the workers of that queue (lathe
	// worker --queue NAME) rather than here; see [Queue].
	Queue Queue `toml:"queue"`

	// The keys below replace what the tool says of its effects (its
	// annotations), for the policy and for batch planning alike; nil means
	// not said. They apply to any tool: builtin, local or an MCP server's.

	// ReadOnly = true says the tool changes nothing: with no rule, its
	// calls run unasked, and a batch runs them beside other reads.
	ReadOnly *bool `toml:"read_only"`
	// Destructive says whether the tool may destroy or overwrite data.
	Destructive *bool `toml:"destructive"`
	// Idempotent says whether calling again with the same arguments has no
	// further effect.
	Idempotent *bool `toml:"idempotent"`
	// OpenWorld says whether the tool reaches beyond a closed domain (the
	// network, say).
	OpenWorld *bool `toml:"open_world"`

	// The keys below make a local tool, one that runs as a process (see
	// local.go). Command is what makes the table define a tool rather than
	// adjust one; Parameters also adjust the tools of a toolset.

	// Command is the tool's argv, as in command = ["git", "log", "-n", "{count}"].
	Command []string `toml:"command"`
	// Shell = true runs the command, then one string, with /bin/sh.
	Shell bool `toml:"shell"`
	// Runtime names the runtime; empty means inferred from the command.
	Runtime string `toml:"runtime"`
	// Parameters holds the [tools.NAME.parameters.P] tables.
	Parameters map[string]*Param `toml:"parameters"`
	// Options are passed to the tool with every call.
	Options map[string]any `toml:"options"`
	// Env names variables of lathe's environment the tool's process gets.
	Env []string `toml:"env"`

	// Read, Write, Net and Run say what a tool of runtime "vfs" or "wasm"
	// may reach through lathe's host API (package host, the project's
	// docs/host.md), as in read = ["src/**"], write = ["out/"],
	// net = ["api.example.com:443"], run = ["git"]; Env, above, names the
	// variables it may read. [HostPermissions] documents each.
	Read  []string `toml:"read"`
	Write []string `toml:"write"`
	Net   []string `toml:"net"`
	Run   []string `toml:"run"`

	// Pos is where the table was defined, in the file that won.
	Pos Pos `toml:"-"`
}

// Pos is a place in a config file.
type Pos struct {
	File string
	Line int
}

// String returns "file:line", or the file alone when the line is not known.
func (p Pos) String() string {
	if p.Line <= 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Error is one problem found in a config file. Parse, Load and Unused return
// one, or several joined with errors.Join; errors.As reaches each.
type Error struct {
	Pos Pos
	// Msg says what is wrong, naming the key, as in
	// `defaults.timeout: invalid duration "5 parsecs"`.
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Parse decodes one config file; name is used in positions and errors. It
// reports every problem it finds, each with its line: a TOML syntax error
// (only the first, as parsing stops there), an unknown key, a value of the
// wrong type, a bad value, a tool name that is not valid.
func Parse(name string, data []byte) (*Config, error) {
	cfg := &Config{}
	errs := parse(name, data, cfg)
	names := slices.Sorted(maps.Keys(cfg.Tools))
	for _, n := range names {
		t := cfg.Tools[n]
		t.Name = n
		if !tool.ValidName(n) {
			errs = append(errs, &Error{Pos: t.Pos, Msg: fmt.Sprintf(
				"[%s] invalid tool name: it must match %s",
				keyString([]string{"tools", n}), tool.NamePattern)})
		}
	}
	for n, s := range cfg.MCP {
		if s != nil {
			s.Name = n
		}
	}
	errs = append(errs, cfg.Policy.checkRules()...)
	errs = append(errs, cfg.checkToolsDirs(name)...)
	if err := joinSorted(errs); err != nil {
		return nil, err
	}
	cfg.Files = []string{name}
	return cfg, nil
}

// joinSorted joins errs in the order of their positions.
func joinSorted(errs []error) error {
	slices.SortStableFunc(errs, func(a, b error) int {
		var ea, eb *Error
		if !errors.As(a, &ea) || !errors.As(b, &eb) {
			return 0
		}
		return cmp.Or(cmp.Compare(ea.Pos.File, eb.Pos.File), cmp.Compare(ea.Pos.Line, eb.Pos.Line))
	})
	return join(errs)
}

// join returns nil, the one error, or all of them joined.
func join(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

// Merge lays over on top of c: over wins key by key, so a tool's timeout
// set in c survives when over sets only the tool's summary. A key that over
// leaves at its zero value (unset, "", 0) does not override; a table merges
// key by key; maps merge entry by entry; an array replaces the whole array.
// Files is appended. c keeps no reference into over.
func (c *Config) Merge(over *Config) {
	if over == nil {
		return
	}
	files := append(slices.Clip(c.Files), over.Files...)
	c.mergeOrigins(over)
	merge(reflect.ValueOf(c).Elem(), reflect.ValueOf(over).Elem())
	c.Files = files
}

func merge(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			if src.Type().Field(i).IsExported() {
				merge(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Pointer:
		switch {
		case src.IsNil():
		case dst.IsNil() || src.Elem().Kind() != reflect.Struct:
			// A pointer to a plain value is set when it is not nil, its
			// zero included: enable = false overrides enable = true.
			dst.Set(clone(src))
		default:
			merge(dst.Elem(), src.Elem())
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMapWithSize(src.Type(), src.Len()))
		}
		it := src.MapRange()
		for it.Next() {
			k, v := it.Key(), it.Value()
			old := dst.MapIndex(k)
			if !old.IsValid() || !mergeable(v) {
				dst.SetMapIndex(k, clone(v))
				continue
			}
			nv := clone(old)
			merge(nv, v)
			dst.SetMapIndex(k, nv)
		}
	default:
		if !src.IsZero() {
			dst.Set(clone(src))
		}
	}
}

// mergeable reports whether a map value merges with the one it replaces
// (a table) rather than replacing it (a plain value).
func mergeable(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Struct, reflect.Map:
		return true
	case reflect.Pointer:
		return v.Type().Elem().Kind() == reflect.Struct
	}
	return false
}

// clone returns a deep copy of v that is settable.
func clone(v reflect.Value) reflect.Value {
	c := reflect.New(v.Type()).Elem()
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			p := reflect.New(v.Type().Elem())
			p.Elem().Set(clone(v.Elem()))
			c.Set(p)
		}
	case reflect.Map:
		if !v.IsNil() {
			c.Set(reflect.MakeMapWithSize(v.Type(), v.Len()))
			it := v.MapRange()
			for it.Next() {
				c.SetMapIndex(it.Key(), clone(it.Value()))
			}
		}
	case reflect.Slice:
		if !v.IsNil() {
			c.Set(reflect.MakeSlice(v.Type(), v.Len(), v.Len()))
			for i := range v.Len() {
				c.Index(i).Set(clone(v.Index(i)))
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				c.Field(i).Set(clone(v.Field(i)))
			}
		}
	case reflect.Interface:
		if !v.IsNil() {
			c.Set(clone(v.Elem()))
		}
	default:
		c.Set(v)
	}
	return c
}

// Apply applies the [tools.NAME] table for t's name, if there is one: its
// summary, description and timeout replace t's ({description} in the
// description stands for t's own), and its read_only, destructive,
// idempotent and open_world replace the tool's annotations. It reports
// whether the tool is enabled; a tool is enabled unless its table says
// enable = false.
//
// Before that, the annotations of a tool of an [mcp.NAME] server (Source
// "mcp.NAME") are taken for what they are, the server's claims: unless the
// server's table says trust_annotations = true, only the claims that make
// the tool look more dangerous are kept (see [Distrust]). So a server that
// calls a tool read-only gets it no call run unasked and no place beside
// other calls in a batch, unless the configuration says so.
func (c *Config) Apply(t *tool.Tool) (enabled bool) {
	if c == nil {
		return true
	}
	if server, ok := strings.CutPrefix(t.Definition.Source, "mcp."); ok {
		if s := c.MCP[server]; s == nil || s.TrustAnnotations == nil || !*s.TrustAnnotations {
			Distrust(&t.Definition.Annotations)
		}
	}
	o := c.Tools[t.Definition.Name]
	if o == nil {
		return true
	}
	if o.Summary != "" {
		t.Definition.Summary = o.Summary
	}
	if o.Description != "" {
		// {description} stands for the tool's own text, so that a setting
		// can add to it rather than replace it.
		t.Definition.Description = strings.ReplaceAll(o.Description, "{description}", t.Definition.Description)
	}
	if o.Timeout != 0 {
		t.Timeout = o.Timeout
	}
	if o.Concurrency != "" {
		t.Concurrency = tool.Concurrency(o.Concurrency)
	}
	if o.MaxConcurrency != 0 {
		t.MaxConcurrency = o.MaxConcurrency
	}
	a := &t.Definition.Annotations
	if o.ReadOnly != nil {
		a.ReadOnlyHint = *o.ReadOnly
	}
	if o.Destructive != nil {
		a.DestructiveHint = tool.Bool(*o.Destructive)
	}
	if o.Idempotent != nil {
		a.IdempotentHint = *o.Idempotent
	}
	if o.OpenWorld != nil {
		a.OpenWorldHint = tool.Bool(*o.OpenWorld)
	}
	return o.Enable == nil || *o.Enable
}

// Distrust keeps of a's hints only those that make the tool look more
// dangerous than a tool that says nothing: destructiveHint = true and
// openWorldHint = true stay; readOnlyHint, idempotentHint = true and
// destructiveHint or openWorldHint = false are dropped, leaving MCP's
// cautious defaults. The title stays. It is what [Config.Apply] does to
// the annotations of an MCP server that is not trusted for them: a claim
// that narrows what lathe does costs nothing if it is false, a claim that
// widens it would let a lying server run a tool unasked.
func Distrust(a *tool.Annotations) {
	a.ReadOnlyHint = false
	a.IdempotentHint = false
	if a.DestructiveHint != nil && !*a.DestructiveHint {
		a.DestructiveHint = nil
	}
	if a.OpenWorldHint != nil && !*a.OpenWorldHint {
		a.OpenWorldHint = nil
	}
}

// Unused returns an error naming the file and line of every [tools.NAME]
// table whose NAME known does not accept, so that a typo such as
// [tools.raed_file] does not pass silently. It returns nil when all are known.
func (c *Config) Unused(known func(name string) bool) error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
		if known(name) {
			continue
		}
		t := c.Tools[name]
		errs = append(errs, &Error{Pos: t.Pos, Msg: fmt.Sprintf(
			"[%s] no tool is named %s", keyString([]string{"tools", name}), quote(name))})
	}
	// Sort by file in the order of precedence, then by line.
	rank := func(file string) int { return slices.Index(c.Files, file) }
	slices.SortStableFunc(errs, func(a, b error) int {
		pa, pb := a.(*Error).Pos, b.(*Error).Pos
		return cmp.Or(cmp.Compare(rank(pa.File), rank(pb.File)), cmp.Compare(pa.Line, pb.Line))
	})
	return join(errs)
}

// checkToolsDirs makes each of tools_dirs absolute: a path starting ~/ is
// taken from $HOME; a relative one is an error, since what it is relative
// to would change with the file that merges it.
func (c *Config) checkToolsDirs(file string) []error {
	var errs []error
	pos, ok := c.origins[pathKey([]string{"tools_dirs"})]
	if !ok {
		pos = Pos{File: file}
	}
	for i, d := range c.ToolsDirs {
		if rest, ok := strings.CutPrefix(d, "~/"); ok {
			if home := os.Getenv("HOME"); filepath.IsAbs(home) {
				d = filepath.Join(home, rest)
			}
		}
		if !filepath.IsAbs(d) {
			errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf("tools_dirs: %q is not an absolute path (or ~/…)", c.ToolsDirs[i])})
			continue
		}
		c.ToolsDirs[i] = filepath.Clean(d)
	}
	return errs
}
