package config

import (
	"cmp"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// A workspace's configuration is code: a [tools.NAME] command, a toolset or
// an MCP server starts programs; an allow rule lets calls run unasked; a
// profile, a permission or a limit loosens the sandbox; the [audit] table
// decides where calls are recorded, and what of them. Such settings apply
// only once a person has trusted the exact file (package trust). Until then
// lathe applies the part of the file that can only narrow what is allowed:
// see [Config.Split].

// Widening is one setting of a file that needs a person's trust.
type Widening struct {
	// Pos is where the setting's table is.
	Pos Pos
	// Key is the table or key, as in "tools.lint.command".
	Key string
	// What says what the setting would do, as in
	// `starts the program ["sh" "lint.sh"]`.
	What string
}

func (w Widening) String() string { return w.Pos.String() + ": " + w.Key + ": " + w.What }

// Split divides c, the configuration of one file, into the part that
// applies without trust and the settings that need it. The part that
// applies can only narrow what the engine allows:
//
//   - enable = false of a tool, a toolset or an MCP server;
//   - deny and ask rules (deny always wins, and an ask rule can only turn
//     an allow into a question);
//   - profile = "hardened", the strictest;
//   - what a model reads and how long a call may take: a tool's summary,
//     description, timeout and concurrency, [defaults] and [batch];
//   - a tool's effects said to be the more dangerous way (read_only =
//     false, destructive = true, idempotent = false, open_world = true);
//   - an MCP server's approval = "ask" or "deny" (a default below the
//     rules, so it can only turn the annotations' allow into a question or
//     a denial) and trust_annotations = false.
//
// Everything else, including keys lathe learns later, is left out and
// listed: what is not known to narrow is taken to widen.
func (c *Config) Split() (*Config, []Widening) {
	if c == nil {
		return &Config{}, nil
	}
	n := &Config{Files: slices.Clone(c.Files)}
	file := ""
	if len(c.Files) > 0 {
		file = c.Files[len(c.Files)-1]
	}
	var ws []Widening
	add := func(pos Pos, key, format string, args ...any) {
		ws = append(ws, Widening{Pos: pos, Key: key, What: fmt.Sprintf(format, args...)})
	}
	// off reports whether enable is false, which applies without trust;
	// enable = true is listed, as doing what.
	off := func(enable *bool, pos Pos, key, what string) bool {
		if enable != nil && *enable {
			ws = append(ws, Widening{Pos: pos, Key: key + ".enable", What: what})
		}
		return enable != nil && !*enable
	}
	// How long a call waits for a person widens nothing: it applies untrusted.
	n.Defaults, n.Batch, n.Serve = c.Defaults, c.Batch, c.Serve

	for _, name := range slices.Sorted(maps.Keys(c.Tools)) {
		t := c.Tools[name]
		key := "tools." + name
		nt := &Tool{Name: t.Name, Timeout: t.Timeout, Summary: t.Summary, Description: t.Description,
			Concurrency: t.Concurrency, MaxConcurrency: t.MaxConcurrency, Pos: t.Pos}
		// An effect said the cautious way applies; the other way, it
		// would let calls run unasked or beside others, and needs trust.
		effect := func(v *bool, cautious bool, k, what string) *bool {
			if v == nil || *v == cautious {
				return v
			}
			add(t.Pos, key+"."+k, "%s", what)
			return nil
		}
		nt.ReadOnly = effect(t.ReadOnly, false, "read_only", "says the tool changes nothing, so its calls run unasked and beside other reads")
		nt.Destructive = effect(t.Destructive, true, "destructive", "says the tool destroys nothing")
		nt.Idempotent = effect(t.Idempotent, false, "idempotent", "says calling the tool again has no further effect")
		nt.OpenWorld = effect(t.OpenWorld, true, "open_world", "says the tool reaches nothing beyond its own domain")
		if off(t.Enable, t.Pos, key, "turns the tool on") {
			nt.Enable = t.Enable
		}
		switch t.Profile {
		case "", "hardened":
			nt.Profile = t.Profile
		default:
			add(t.Pos, key+".profile", "runs the tool under the %s sandbox profile", t.Profile)
		}
		if t.Queue != "" {
			add(t.Pos, key+".queue", "sends the tool's calls, with their arguments, to the workers of queue %q", string(t.Queue))
		}
		local := setKeys(t, "enable", "profile", "timeout", "summary", "description", "concurrency", "max_concurrency",
			"read_only", "destructive", "idempotent", "open_world", "queue")
		if len(t.Command) > 0 {
			how := ""
			if t.Shell {
				how = " with /bin/sh"
			}
			add(t.Pos, key+".command", "starts the program %s%s, a local tool", argv(t.Command), how)
			addHost(add, t.Pos, key, t.Permissions())
		} else {
			for _, k := range local {
				add(t.Pos, key+"."+k, "changes how the local tool runs")
			}
		}
		if len(local) > 0 {
			// The table defines or changes a local tool, which is left
			// out whole.
			continue
		}
		if n.Tools == nil {
			n.Tools = map[string]*Tool{}
		}
		n.Tools[name] = nt
	}

	for _, name := range slices.Sorted(maps.Keys(c.Toolsets)) {
		s := c.Toolsets[name]
		key := "toolsets." + name
		if len(s.Command) > 0 {
			add(s.Pos, key+".command", "starts the program %s, which describes and runs tools", argv(s.Command))
		}
		if s.Queue != "" {
			add(s.Pos, key+".queue", "sends the calls of the toolset's tools, with their arguments, to the workers of queue %q", string(s.Queue))
		}
		for _, k := range setKeys(s, "enable", "command", "read", "write", "net", "run", "queue") {
			add(s.Pos, key+"."+k, "changes how the toolset runs")
		}
		addHost(add, s.Pos, key, s.Permissions())
		if off(s.Enable, s.Pos, key, "turns the toolset on") {
			if n.Toolsets == nil {
				n.Toolsets = map[string]*Toolset{}
			}
			n.Toolsets[name] = &Toolset{Name: s.Name, Enable: s.Enable, Pos: s.Pos}
		}
	}

	for _, name := range slices.Sorted(maps.Keys(c.MCP)) {
		s := c.MCP[name]
		key := "mcp." + name
		if s == nil {
			continue
		}
		if len(s.Command) > 0 {
			add(s.Pos, key+".command", "starts the program %s, an MCP server", argv(s.Command))
		}
		if s.URL != "" {
			add(s.Pos, key+".url", "connects to the MCP server at %q, with the headers and variables the table names", s.URL)
		}
		if s.Queue != "" {
			add(s.Pos, key+".queue", "sends the calls of the server's tools, with their arguments, to the workers of queue %q", string(s.Queue))
		}
		for _, k := range setKeys(s, "enable", "command", "url", "approval", "trust_annotations", "queue") {
			add(s.Pos, key+"."+k, "changes how lathe reaches the server")
		}
		ns := &MCPServer{Name: s.Name, Pos: s.Pos}
		if off(s.Enable, s.Pos, key, "turns the server on") {
			ns.Enable = s.Enable
		}
		switch s.Approval {
		case "":
		case "ask", "deny":
			ns.Approval = s.Approval
		default:
			add(s.Pos, key+".approval", "approval = %q lets calls of the server's tools run without asking", string(s.Approval))
		}
		switch {
		case s.TrustAnnotations == nil:
		case *s.TrustAnnotations:
			add(s.Pos, key+".trust_annotations", "takes the server's word for its tools' effects, so a tool it calls read-only runs unasked")
		default:
			ns.TrustAnnotations = s.TrustAnnotations
		}
		if ns.Enable != nil || ns.Approval != "" || ns.TrustAnnotations != nil {
			if n.MCP == nil {
				n.MCP = map[string]*MCPServer{}
			}
			n.MCP[name] = ns
		}
	}

	for _, r := range c.Policy.Rules {
		if r.Approval == "deny" || r.Approval == "ask" {
			n.Policy.Rules = append(n.Policy.Rules, r)
			continue
		}
		what, runs := "tool = "+quote(r.Tool), "calls"
		if r.Operation != "" {
			what += ", operation = " + quote(string(r.Operation))
			runs = "the tools' host operations"
		}
		if r.Args != "" {
			what += ", args = " + quote(r.Args)
		}
		add(r.Pos, "policy.rules", "approval = %q for %s lets %s run without asking", string(r.Approval), what, runs)
	}

	// The keys of these tables are placed at their own lines.
	at := func(path ...string) Pos {
		if p, ok := c.origins[pathKey(path)]; ok {
			return p
		}
		return Pos{File: file}
	}
	if len(c.ToolsDirs) > 0 {
		add(at("tools_dirs"), "tools_dirs", "loads JavaScript tools from %s", strings.Join(c.ToolsDirs, ", "))
	}
	// The server that carries routed calls sees their arguments and
	// results, and could answer with tools of its own choosing.
	for _, k := range setKeys(&c.Temporal) {
		add(at("temporal", k), "temporal."+k, "changes which Temporal server carries the calls of tools routed to a queue")
	}
	for _, k := range setKeys(&c.Audit) {
		add(at("audit", k), "audit."+k, "changes where calls are recorded, or what is")
	}
	for _, k := range setKeys(&c.Telemetry) {
		add(at("telemetry", k), "telemetry."+k, "sends more of the calls (arguments, results) to the telemetry collector")
	}
	switch c.Sandbox.Profile {
	case "", "hardened":
		n.Sandbox.Profile = c.Sandbox.Profile
	default:
		add(at("sandbox", "profile"), "sandbox.profile", "runs process tools and run_command under the %s sandbox profile", c.Sandbox.Profile)
	}
	for _, k := range setKeys(&c.Sandbox.Limits) {
		add(at("sandbox", "limits", k), "sandbox.limits."+k, "changes a limit of the sandbox")
	}
	for _, k := range setKeys(&c.Sandbox.Permissions) {
		add(at("sandbox", "permissions", k), "sandbox.permissions."+k, "lets sandboxed processes reach more")
	}
	slices.SortStableFunc(ws, func(a, b Widening) int { return cmp.Compare(a.Pos.Line, b.Pos.Line) })
	c.keepOrigins(n)
	return n, ws
}

// setKeys returns the TOML keys of the fields of the struct v points to that
// are set (not zero), less those named in except.
// addHost adds a widening for each host permission key a local tool's or
// a toolset's table sets, saying what it grants, so that the person who
// trusts the file sees what a confined tool may reach (env is shown with
// the command's other keys).
func addHost(add func(Pos, string, string, ...any), pos Pos, key string, p HostPermissions) {
	for _, k := range []struct {
		name, what string
		entries    []string
	}{
		{"read", "read", p.Read},
		{"write", "write and remove", p.Write},
		{"net", "fetch from", p.Net},
		{"run", "run", p.Run},
	} {
		if len(k.entries) > 0 {
			add(pos, key+"."+k.name, "lets a confined tool (vfs, wasm) %s %s through lathe's host API", k.what, strings.Join(k.entries, ", "))
		}
	}
}

func setKeys(v any, except ...string) []string {
	rv := reflect.ValueOf(v).Elem()
	var out []string
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if !f.IsExported() || key == "" || key == "-" || slices.Contains(except, key) {
			continue
		}
		if !rv.Field(i).IsZero() {
			out = append(out, key)
		}
	}
	return out
}

func argv(a []string) string {
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// Pending is a file of the workspace that needs a person's trust and does
// not have it: lathe applied only the narrowing part of it.
type Pending struct {
	Source *Source
	// Widenings are the settings left out.
	Widenings []Widening
}

// Decide merges srcs, read by [ReadSources], as [Load] would, with trust:
// the user's file applies whole, and so does each other file that needs no
// trust ([Config.Split] leaves nothing out) or that trusted says yes to. Of
// any other file only the part Split keeps applies, its rules added to the
// rules before them instead of replacing them; it is returned in pending.
// A file that needs no trust keeps its rules the same way, so that a
// workspace's deny rule never drops the user's own.
//
// trusted is asked about the exact bytes that were parsed (Source.Data),
// so that a file changed after it was read cannot pass as the one trusted.
// An error from trusted (a corrupt trust record, say) is returned: lathe
// never takes a record it cannot read as trust.
func Decide(srcs []*Source, trusted func(*Source) (bool, error)) (cfg *Config, pending []Pending, err error) {
	cfg = &Config{}
	for _, s := range srcs {
		if s.User {
			cfg.Merge(s.Config)
			continue
		}
		n, ws := s.Config.Split()
		if len(ws) > 0 {
			ok, err := trusted(s)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				cfg.Merge(s.Config)
				continue
			}
		}
		// A server's narrowing keys (approval, trust_annotations) adjust
		// a server the files before define; with none to adjust (the file
		// defines the server itself, which is left out) they are moot,
		// and kept they would make a server with no command or url.
		for name, s := range n.MCP {
			if cfg.MCP[name] == nil && s.Enable == nil {
				delete(n.MCP, name)
			}
		}
		rules := append(slices.Clip(cfg.Policy.Rules), n.Policy.Rules...)
		cfg.Merge(n)
		cfg.Policy.Rules = rules
		if len(ws) > 0 {
			pending = append(pending, Pending{Source: s, Widenings: ws})
		}
	}
	return cfg, pending, nil
}
