package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/lathe-tools/lathe/host/scope"
)

// Local tools run as processes. A [tools.NAME] table with a command defines
// one tool; a [toolsets.NAME] table registers every tool its binary
// describes. The keys are fields of [Tool] and of [Toolset]; this file holds
// their types and checks.

// Toolset is a [toolsets.NAME] table: a binary that describes several tools,
// each registered under its own name with Prefix before it.
type Toolset struct {
	// Name is NAME.
	Name string `toml:"-"`
	// Enable = false leaves the toolset out; nil means it was not said.
	Enable *bool `toml:"enable"`
	// Command is the binary's argv.
	Command []string `toml:"command"`
	// Prefix is put before the name of each tool the binary describes.
	Prefix string `toml:"prefix"`
	// Runtime names the runtime; empty means inferred from the command.
	Runtime string `toml:"runtime"`
	// Queue, if set, runs the toolset's tools on the workers of that queue
	// rather than here; the binary is not started here.
	Queue Queue `toml:"queue"`
	// Timeout bounds one call of each of the toolset's tools.
	Timeout time.Duration `toml:"timeout"`
	// Profile is the sandbox profile of the binary while it describes
	// itself, and of its tools' calls unless a [tools.NAME] table of one of
	// them names its own; empty means [sandbox] profile.
	Profile SandboxProfile `toml:"profile"`
	// Options are passed to the binary with every request.
	Options map[string]any `toml:"options"`
	// Env names variables of lathe's environment the binary's process gets.
	Env []string `toml:"env"`
	// Read, Write, Net and Run say what the toolset's tools may reach
	// through lathe's host API when they run as "vfs" or "wasm" (see
	// [HostPermissions]).
	Read  []string `toml:"read"`
	Write []string `toml:"write"`
	Net   []string `toml:"net"`
	Run   []string `toml:"run"`
	// Pos is where the table was defined, in the file that won.
	Pos Pos `toml:"-"`
}

// HostPermissions are the keys of a [tools.NAME] or [toolsets.NAME] table
// that say what a confined tool may ask lathe's host to do for it, scoped
// as Deno's permissions are. Paths are relative to the workspace.
// [Tool.Permissions] and [Toolset.Permissions] gather them.
type HostPermissions struct {
	// Read lists paths (patterns) the tool may read, list and stat.
	Read []string `toml:"read"`
	// Write lists paths (patterns) the tool may also write and remove.
	Write []string `toml:"write"`
	// Net lists the hosts it may fetch from: "host:port", or "host" for
	// any port.
	Net []string `toml:"net"`
	// Env lists the variables it may read (the table's env key).
	Env []string `toml:"env"`
	// Run lists the programs it may run, by name or path.
	Run []string `toml:"run"`
}

// Permissions returns the host permissions of the table.
func (t *Tool) Permissions() HostPermissions {
	return HostPermissions{Read: t.Read, Write: t.Write, Net: t.Net, Env: t.Env, Run: t.Run}
}

// Permissions returns the host permissions of the table.
func (s *Toolset) Permissions() HostPermissions {
	return HostPermissions{Read: s.Read, Write: s.Write, Net: s.Net, Env: s.Env, Run: s.Run}
}

// Param is a [tools.NAME.parameters.P] table: one parameter of a local
// tool, or, for a tool that describes itself, changes to one.
type Param struct {
	// Type is the JSON type: string, integer, number, boolean, array or object.
	Type ParamType `toml:"type"`
	// Required says whether a call must give the parameter; nil means no.
	Required *bool `toml:"required"`
	// Default is the value an absent parameter takes.
	Default any `toml:"default"`
	// Enum lists the values allowed.
	Enum []any `toml:"enum"`
	// Description tells a model what the parameter is for.
	Description string `toml:"description"`
	// Items describes the elements of an array.
	Items *Param `toml:"items"`
	// Properties describes the properties of an object.
	Properties map[string]*Param `toml:"properties"`
	// Pos is where the table was defined.
	Pos Pos `toml:"-"`
}

// ParamType is the value of a parameter's type key.
type ParamType string

// validate accepts JSON Schema's types, less null; the decoder calls it.
func (t ParamType) validate() error {
	switch t {
	case "", "string", "integer", "number", "boolean", "array", "object":
		return nil
	}
	return fmt.Errorf("must be one of string, integer, number, boolean, array, object; got %q", string(t))
}

// IsLocal reports whether the table defines a local tool: it has a command.
func (t *Tool) IsLocal() bool { return t != nil && len(t.Command) > 0 }

var (
	envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	prefixPattern  = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*)?$`)
)

// CheckLocal checks the local-tool keys of the merged configuration: the
// parts each key needs (shell and runtime need a command), each command and
// environment name, each parameter, each toolset. Every problem is reported
// with the file and line of its table.
func (c *Config) CheckLocal() error {
	if c == nil {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
		t := c.Tools[name]
		at := func(format string, args ...any) {
			errs = append(errs, &Error{Pos: t.Pos, Msg: "[" + keyString([]string{"tools", name}) + "] " + fmt.Sprintf(format, args...)})
		}
		if !t.IsLocal() {
			switch {
			case t.Command != nil:
				at("command is empty: it needs at least the program")
			case t.Shell:
				at("shell = true needs a command")
			case t.Runtime != "":
				at("runtime needs a command")
			}
		}
		checkCommand(t.Command, at)
		checkEnv(t.Env, at)
		checkHost(t.Permissions(), at)
		for _, p := range slices.Sorted(maps.Keys(t.Parameters)) {
			errs = append(errs, checkParam([]string{"tools", name, "parameters", p}, t.Parameters[p])...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Toolsets)) {
		s := c.Toolsets[name]
		at := func(format string, args ...any) {
			errs = append(errs, &Error{Pos: s.Pos, Msg: "[" + keyString([]string{"toolsets", name}) + "] " + fmt.Sprintf(format, args...)})
		}
		if !envNamePattern.MatchString(name) {
			at("invalid toolset name: it must be a letter or _, then letters, digits or _")
		}
		if len(s.Command) == 0 {
			at("command is missing: the toolset's binary, as in command = [\"./bin/tools\"]")
		}
		checkCommand(s.Command, at)
		checkEnv(s.Env, at)
		checkHost(s.Permissions(), at)
		if !prefixPattern.MatchString(s.Prefix) {
			at("invalid prefix %s: it must be empty, or a letter then letters, digits, _ or -", quote(s.Prefix))
		}
	}
	return joinSorted(errs)
}

func checkCommand(argv []string, at func(string, ...any)) {
	for i, a := range argv {
		if a == "" && i == 0 {
			at("command: the program is an empty string")
		}
	}
}

func checkEnv(names []string, at func(string, ...any)) {
	for _, n := range names {
		if !envNamePattern.MatchString(n) {
			at("env: %s is not a variable name; env lists names, whose values come from lathe's environment", quote(n))
		}
	}
}

// checkHost checks the entries of the read, write, net and run keys, as
// lathe's host will read them (package host/scope): a path that climbs out
// of the workspace, a URL where a host belongs, a command line where a
// program belongs are errors here, at load, rather than denials later.
// (env is checked by checkEnv.) Whether an absolute path lies inside the
// workspace is checked where the host is built, which knows the workspace.
func checkHost(p HostPermissions, at func(string, ...any)) {
	for _, k := range []struct {
		key     string
		entries []string
		check   func(string) error
	}{
		{"read", p.Read, scope.CheckPath},
		{"write", p.Write, scope.CheckPath},
		{"net", p.Net, func(s string) error { _, err := scope.CompileNet(s); return err }},
		{"run", p.Run, scope.CheckRun},
	} {
		for _, e := range k.entries {
			if err := k.check(e); err != nil {
				at("%s: %v", k.key, err)
			}
		}
	}
}

func checkParam(path []string, p *Param) []error {
	var errs []error
	at := func(format string, args ...any) {
		errs = append(errs, &Error{Pos: p.Pos, Msg: "[" + keyString(path) + "] " + fmt.Sprintf(format, args...)})
	}
	if p.Items != nil && p.Type != "" && p.Type != "array" {
		at("items describes the elements of an array, but type is %q", string(p.Type))
	}
	if p.Properties != nil && p.Type != "" && p.Type != "object" {
		at("properties describe an object, but type is %q", string(p.Type))
	}
	if p.Enum != nil && len(p.Enum) == 0 {
		at("enum is empty: no value would be allowed")
	}
	if p.Items != nil {
		errs = append(errs, checkParam(append(slices.Clip(path), "items"), p.Items)...)
	}
	for _, k := range slices.Sorted(maps.Keys(p.Properties)) {
		errs = append(errs, checkParam(append(slices.Clip(path), "properties", k), p.Properties[k])...)
	}
	return errs
}

// ParamsSchema returns the JSON Schema of a local tool whose parameters are
// params: an object schema with a property per parameter, the required ones
// listed, and no other property allowed.
func ParamsSchema(params map[string]*Param) json.RawMessage {
	b, _ := json.Marshal(objectSchema(params))
	return b
}

func objectSchema(props map[string]*Param) map[string]any {
	s := map[string]any{"type": "object", "additionalProperties": false}
	p := map[string]any{}
	var required []string
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p[name] = props[name].Schema()
		if r := props[name].Required; r != nil && *r {
			required = append(required, name)
		}
	}
	s["properties"] = p
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// Schema returns the parameter's JSON Schema.
func (p *Param) Schema() map[string]any {
	var s map[string]any
	if p.Type == "object" || p.Properties != nil {
		s = objectSchema(p.Properties)
		if p.Properties == nil {
			// An object whose properties are not described takes any.
			delete(s, "additionalProperties")
		}
	} else {
		s = map[string]any{}
	}
	p.apply(s)
	return s
}

// apply sets in s the keywords that p sets, leaving the others alone.
func (p *Param) apply(s map[string]any) {
	if p.Type != "" {
		s["type"] = string(p.Type)
	}
	if p.Description != "" {
		s["description"] = p.Description
	}
	if p.Enum != nil {
		s["enum"] = p.Enum
	}
	if p.Default != nil {
		s["default"] = p.Default
	}
	if p.Items != nil {
		s["items"] = p.Items.Schema()
	}
	if p.Properties != nil {
		o := objectSchema(p.Properties)
		s["properties"] = o["properties"]
		if r, ok := o["required"]; ok {
			s["required"] = r
		} else {
			delete(s, "required")
		}
		s["additionalProperties"] = false
	}
}

// Override applies the [tools.NAME.parameters] tables of a tool that
// describes itself to the schema it gave, raw: type, enum, default, items,
// properties and description replace the tool's own, and required = true
// makes a parameter required. A parameter the tool does not have, or
// required = false for one it requires, is an error: the first would send
// the tool an argument it does not know, the second would let a call leave
// out what the tool needs.
func Override(raw json.RawMessage, params map[string]*Param, toolName string) (json.RawMessage, error) {
	if len(params) == 0 {
		return raw, nil
	}
	s := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("the schema of %s does not decode: %w", toolName, err)
		}
	}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	var order []string
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if n, ok := r.(string); ok {
				required[n] = true
				order = append(order, n)
			}
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(params)) {
		p := params[name]
		at := func(format string, args ...any) {
			errs = append(errs, &Error{Pos: p.Pos, Msg: "[" + keyString([]string{"tools", toolName, "parameters", name}) + "] " +
				fmt.Sprintf(format, args...)})
		}
		prop, ok := props[name].(map[string]any)
		if !ok {
			names := slices.Sorted(maps.Keys(props))
			at("the tool has no parameter %s; it has: %v", quote(name), names)
			continue
		}
		p.apply(prop)
		switch {
		case p.Required == nil:
		case *p.Required && !required[name]:
			required[name] = true
			order = append(order, name)
		case !*p.Required && required[name]:
			at("required = false: the tool requires %s, and a setting can only make a parameter required, not optional", quote(name))
		}
	}
	if err := joinSorted(errs); err != nil {
		return nil, err
	}
	if len(order) > 0 {
		s["required"] = order
	}
	return json.Marshal(s)
}

// EnabledToolsets returns the enabled toolsets, sorted by name, with their
// names set.
func (c *Config) EnabledToolsets() []*Toolset {
	if c == nil {
		return nil
	}
	var out []*Toolset
	for _, name := range slices.Sorted(maps.Keys(c.Toolsets)) {
		s := c.Toolsets[name]
		s.Name = name
		if s.Enable == nil || *s.Enable {
			out = append(out, s)
		}
	}
	return out
}
