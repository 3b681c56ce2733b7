package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// What lathe makes of one tool, each value with where it came from: what
// `lathe describe` adds to a tool's definition, and what `lathe policy
// check` reports. It is worked out from the same configuration the engine
// was built from, by the same rules (engine.go, local.go, mcp.go,
// sandbox.go, policy.go); defaultOrigin names a value no file set.

const defaultOrigin = "default"

// quietConfig loads the configuration as openEngine does, without saying
// again on standard error what trust left out: the command that calls it
// has said so, or shows it itself.
func (g *globals) quietConfig(ws string) (*config.Config, []load.Untrusted, error) {
	errw := g.streams.Err
	g.streams.Err = io.Discard
	defer func() { g.streams.Err = errw }()
	return g.loadConfig(ws, trustWarn)
}

// grantsOf returns the stored grants the engine would consult, or nil when
// the configuration keeps none (audit off) or they cannot be opened, with
// the reason.
func grantsOf(cfg *config.Config, ws string) (policy.GrantStore, string) {
	if cfg.Audit.Enable != nil && !*cfg.Audit.Enable {
		return nil, "[audit] enable = false keeps no grants"
	}
	g, err := openGrants(ws)
	if err != nil {
		return nil, "grants are not kept: " + err.Error()
	}
	return g, ""
}

// origin says where the value at path was set, or "default".
func origin(cfg *config.Config, path ...string) string {
	if p, ok := cfg.Origin(path...); ok {
		return p.String()
	}
	return defaultOrigin
}

// effective is what lathe makes of one tool.
type effective struct {
	// Timeout bounds one call; TimeoutFrom says where it was set
	// ("file:line key", or "default").
	Timeout     string `json:"timeout"`
	TimeoutFrom string `json:"timeout_from"`
	// WallTime, for a tool run under a sandbox profile, is the sandbox's
	// bound on one run, which cuts a longer timeout short.
	WallTime     string `json:"wall_time,omitempty"`
	WallTimeFrom string `json:"wall_time_from,omitempty"`
	// Profile is the sandbox profile of the tool's process; "" for none,
	// and then Isolation says how it runs.
	Profile     string `json:"profile"`
	ProfileFrom string `json:"profile_from"`
	Isolation   string `json:"isolation"`
	// Effects are the tool's annotations, as the policy and the batch
	// planner take them.
	Effects effects `json:"effects"`
	// Approval is the policy's decision for a call whose arguments match
	// no rule that looks at arguments.
	Approval check `json:"approval"`
	// ArgumentRules are the rules whose decision depends on the arguments
	// (lathe policy check TOOL ARGS says which one a call meets).
	ArgumentRules []ruleJSON `json:"argument_rules,omitempty"`
	// OperationRules are the rules about the tool's host operations
	// (lathe policy check NAME --operation KIND SUBJECT says which one an
	// operation meets).
	OperationRules []ruleJSON `json:"operation_rules,omitempty"`
}

type effects struct {
	Word        string `json:"summary"`
	ReadOnly    bool   `json:"read_only"`
	Destructive *bool  `json:"destructive,omitempty"`
	Idempotent  bool   `json:"idempotent"`
	OpenWorld   *bool  `json:"open_world,omitempty"`
	// From says whose word the effects are: the tool's own, an MCP
	// server's (trusted, or counted only where it narrows), and the
	// [tools.NAME] keys that replace them, each with its place.
	From []string `json:"from"`
}

type ruleJSON struct {
	Tool      string `json:"tool"`
	Operation string `json:"operation,omitempty"`
	Args      string `json:"args,omitempty"`
	Arg       string `json:"arg,omitempty"`
	Approval  string `json:"approval"`
	Source    string `json:"source"`
}

func ruleOf(r *policy.Rule) *ruleJSON {
	if r == nil {
		return nil
	}
	return &ruleJSON{Tool: r.Tool, Operation: r.Operation, Args: r.Args, Arg: r.Arg, Approval: string(r.Approval), Source: r.Source}
}

// check is what `lathe policy check` reports: the decision, who made it
// (a rule, the default, a stored grant) and why.
type check struct {
	// Decision is "allow", "ask" or "deny": what happens to a call that
	// nobody answers, a grant counted.
	Decision string `json:"decision"`
	// By is "rule", "default" or "grant".
	By     string    `json:"by"`
	Rule   *ruleJSON `json:"rule,omitempty"`
	Reason string    `json:"reason"`
	// Grant says that a stored grant settles the ask the rules or the
	// default made, and for what.
	Grant string `json:"grant,omitempty"`
	// Grants says why no grant was consulted, when none was.
	Grants string `json:"grants,omitempty"`
	// Default is where the server's default approval that decided was
	// set ("file:line"), when one did (By "source").
	Default string `json:"default,omitempty"`
	// Remedy, for a deny or an ask nobody answers, says which line and
	// key would let the call run: what a client that gets the denial is
	// told.
	Remedy string `json:"remedy,omitempty"`
}

func checkOf(cfg *config.Config, def *tool.Definition, r policy.DryRun, grantsNote string) check {
	c := check{Decision: string(r.Approval()), By: r.Decision.By, Rule: ruleOf(r.Decision.Rule), Reason: r.Decision.Reason,
		Grants: grantsNote}
	if d := r.Decision.Default; d != nil {
		c.Default = d.Origin
	}
	if r.Approval() != policy.Allow && (r.Grant == nil || r.Grant.Approval != policy.Deny) {
		c.Remedy = load.Remedy(cfg)(def, r.Decision)
	}
	if r.Grant != nil {
		c.By, c.Reason = r.Grant.By, r.Grant.Reason+" (the "+r.Decision.By+" asks: "+r.Decision.Reason+")"
		c.Grant = "the tool"
		if r.Command != "" {
			c.Grant = "the command line " + fmt.Sprintf("%q", r.Command)
		}
	}
	return c
}

// effectiveOf works out what lathe makes of the tool def.
func effectiveOf(ctx context.Context, cfg *config.Config, ws string, def tool.Definition) effective {
	var e effective
	timeout, from := timeoutOf(cfg, def)
	e.Timeout, e.TimeoutFrom = timeout.String(), from
	e.Profile, e.ProfileFrom, e.Isolation = profileOf(cfg, def)
	if e.Profile != "" && !strings.HasPrefix(def.Source, "mcp.") {
		// A sandboxed run is also bounded by the sandbox's wall time
		// (an MCP server's command is not: it lives as long as lathe).
		wall := sandbox.Limits{Wall: cfg.Sandbox.Limits.WallTime}.WithDefaults().Wall
		e.WallTime, e.WallTimeFrom = wall.String(), origin(cfg, "sandbox", "limits", "wall_time")
		if e.WallTimeFrom != defaultOrigin {
			e.WallTimeFrom += " sandbox.limits.wall_time"
		}
	}
	a := def.Annotations
	e.Effects = effects{Word: effect(a), ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint,
		Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint, From: effectsFrom(cfg, def)}
	// The approval shown is that of a call no argument rule matches: the
	// rules that look at arguments are listed apart, since which of them
	// a call meets depends on the call.
	p, byName := load.Policy(cfg), &policy.Policy{}
	for i := range p.Rules {
		r := &p.Rules[i]
		switch {
		case r.Operation != "":
			if policy.Match(r.Tool, def.Name) {
				e.OperationRules = append(e.OperationRules, *ruleOf(r))
			}
		case r.Args == "":
			byName.Rules = append(byName.Rules, *r)
		case policy.Match(r.Tool, def.Name):
			e.ArgumentRules = append(e.ArgumentRules, *ruleOf(r))
		}
	}
	byName.Defaults = p.Defaults
	grants, note := grantsOf(cfg, ws)
	e.Approval = checkOf(cfg, &def, byName.DryRun(ctx, grants, &def, map[string]any{}), note)
	return e
}

// effectsFrom says whose word def's effects are, as [config.Config.Apply]
// took them: the tool's own, or its MCP server's (trusted, or counted only
// where they narrow), and the [tools.NAME] keys that replace them.
func effectsFrom(cfg *config.Config, def tool.Definition) []string {
	var from []string
	if server, ok := strings.CutPrefix(def.Source, "mcp."); ok {
		if s := cfg.MCP[server]; s != nil && s.TrustAnnotations != nil && *s.TrustAnnotations {
			from = append(from, fmt.Sprintf("the server's annotations, trusted (%s mcp.%s.trust_annotations)",
				origin(cfg, "mcp", server, "trust_annotations"), server))
		} else {
			from = append(from, fmt.Sprintf("the server's annotations, counted only where they make the tool look more dangerous "+
				"([mcp.%s] trust_annotations = true takes its word)", server))
		}
	} else {
		from = append(from, "the tool's own annotations")
	}
	if t := cfg.Tools[def.Name]; t != nil {
		for _, k := range []struct {
			key string
			set bool
		}{{"read_only", t.ReadOnly != nil}, {"destructive", t.Destructive != nil},
			{"idempotent", t.Idempotent != nil}, {"open_world", t.OpenWorld != nil}} {
			if k.set {
				from = append(from, fmt.Sprintf("%s tools.%s.%s", origin(cfg, "tools", def.Name, k.key), def.Name, k.key))
			}
		}
	}
	return from
}

// timeoutOf is the timeout of a call of def, as the engine takes it: the
// [tools.NAME] timeout, else that of the toolset or MCP server the tool
// comes from, else [defaults] timeout, else lathe's.
func timeoutOf(cfg *config.Config, def tool.Definition) (time.Duration, string) {
	name := def.Name
	if t := cfg.Tools[name]; t != nil && t.Timeout > 0 {
		return t.Timeout, origin(cfg, "tools", name, "timeout") + " tools." + name + ".timeout"
	}
	if server, ok := strings.CutPrefix(def.Source, "mcp."); ok {
		if s := cfg.MCP[server]; s != nil && s.Timeout > 0 {
			return s.Timeout, origin(cfg, "mcp", server, "timeout") + " mcp." + server + ".timeout"
		}
	}
	if s := toolsetOf(cfg, def); s != nil && s.Timeout > 0 {
		return s.Timeout, origin(cfg, "toolsets", s.Name, "timeout") + " toolsets." + s.Name + ".timeout"
	}
	if cfg.Defaults.Timeout > 0 {
		return cfg.Defaults.Timeout, origin(cfg, "defaults", "timeout") + " defaults.timeout"
	}
	return lathe.DefaultTimeout, defaultOrigin
}

// toolsetOf returns the toolset a local tool comes from, or nil when it
// comes from none (a [tools.NAME] command) or more than one could have
// described it.
func toolsetOf(cfg *config.Config, def tool.Definition) *config.Toolset {
	if def.Source != "local" || cfg.Tools[def.Name].IsLocal() {
		return nil
	}
	var best *config.Toolset
	tie := false
	for _, s := range cfg.EnabledToolsets() {
		if !strings.HasPrefix(def.Name, s.Prefix) {
			continue
		}
		switch {
		case best == nil || len(s.Prefix) > len(best.Prefix):
			best, tie = s, false
		case len(s.Prefix) == len(best.Prefix):
			tie = true
		}
	}
	if tie {
		return nil
	}
	return best
}

// profileOf is the sandbox profile def's process runs under, where that was
// set, and how the tool runs when under none.
func profileOf(cfg *config.Config, def tool.Definition) (profile, from, isolation string) {
	name := def.Name
	set := func(p config.SandboxProfile, path ...string) (string, string, string) {
		return string(p), origin(cfg, path...) + " " + strings.Join(path, "."), "sandbox"
	}
	general := func(none string) (string, string, string) {
		if cfg.Sandbox.Profile != "" {
			return set(cfg.Sandbox.Profile, "sandbox", "profile")
		}
		return "", defaultOrigin, none
	}
	server, isMCP := strings.CutPrefix(def.Source, "mcp.")
	switch {
	case isMCP:
		s := cfg.MCP[server]
		switch {
		case s == nil:
			return "", defaultOrigin, "unknown: the server is not in the configuration"
		case s.URL != "":
			return "", defaultOrigin, "remote: the server runs elsewhere, reached at its URL"
		case s.Profile != "":
			return set(s.Profile, "mcp", server, "profile")
		}
		return general("host process: the server's command runs unconfined, with a minimal environment")
	case def.Source == "local" && def.Runtime == "wasm":
		// A WASM tool runs inside lathe, never as a process; a profile of
		// its table confines only the programs it runs through the host.
		return "", defaultOrigin, "wasm: runs inside lathe, in a WASM instance of its own per call: the workspace's files as its read and write permissions allow, no network, its memory limited"
	case def.Source == "local":
		if t := cfg.Tools[name]; t != nil && t.Profile != "" {
			return set(t.Profile, "tools", name, "profile")
		}
		if s := toolsetOf(cfg, def); s != nil && s.Profile != "" {
			return set(s.Profile, "toolsets", s.Name, "profile")
		}
		if def.Runtime == "vfs" {
			// A VFS tool is never a host process (load refuses dev for
			// it): standard, or hardened where [sandbox] says so.
			if cfg.Sandbox.Profile == config.SandboxProfile(sandbox.Hardened) {
				return set(cfg.Sandbox.Profile, "sandbox", "profile")
			}
			return string(sandbox.Standard), defaultOrigin, "sandbox"
		}
		return general("host process: runs unconfined, with a minimal environment")
	case name == "run_command":
		if t := cfg.Tools[name]; t != nil && t.Profile != "" {
			return set(t.Profile, "tools", name, "profile")
		}
		if p, f, i := general(""); p != "" {
			return p, f, i
		}
		return string(sandbox.Standard), defaultOrigin, "sandbox"
	}
	return "", defaultOrigin, "in process: a tool of lathe's own, confined to the workspace by its code"
}

// describeEffective prints what lathe makes of a tool, after its
// definition.
func describeEffective(w io.Writer, e effective) error {
	fmt.Fprintf(w, "\nTimeout:  %s (%s)\n", e.Timeout, visible(e.TimeoutFrom))
	if e.WallTime != "" {
		fmt.Fprintf(w, "          the sandbox's wall time, %s (%s), also bounds each run\n", e.WallTime, visible(e.WallTimeFrom))
	}
	if e.Profile != "" {
		fmt.Fprintf(w, "Sandbox:  %s (%s)\n", e.Profile, visible(e.ProfileFrom))
	} else {
		fmt.Fprintf(w, "Sandbox:  none; %s\n", e.Isolation)
	}
	fmt.Fprintf(w, "Effects:  %s (%s)\n", e.Effects.Word, annotationWords(e.Effects))
	for _, f := range e.Effects.From {
		fmt.Fprintf(w, "          from %s\n", visible(f))
	}
	writeCheck(w, "Approval: ", e.Approval)
	if len(e.ArgumentRules) > 0 {
		fmt.Fprintln(w, "          for a call whose arguments match no rule below; these look at the arguments")
		fmt.Fprintln(w, "          (lathe policy check NAME ARGS says which one a call meets):")
		for _, r := range e.ArgumentRules {
			fmt.Fprintf(w, "            %s\n", ruleText(&r))
		}
	}
	if len(e.OperationRules) > 0 {
		fmt.Fprintln(w, "          what the tool asks lathe's host for is checked by these; an operation no rule names is")
		fmt.Fprintln(w, "          allowed within the tool's permissions:")
		for _, r := range e.OperationRules {
			fmt.Fprintf(w, "            %s\n", ruleText(&r))
		}
	}
	return nil
}

// writeCheck prints a policy decision, who made it and why.
func writeCheck(w io.Writer, label string, c check) {
	fmt.Fprintf(w, "%s%s, by %s: %s\n", label, c.Decision, c.By, visible(c.Reason))
	// The reason names the rule, with its place, when one decided.
	pad := strings.Repeat(" ", len(label))
	if c.Grant != "" {
		fmt.Fprintf(w, "%sa stored grant covers %s (lathe audit grants lists them)\n", pad, visible(c.Grant))
	}
	if c.Grants != "" {
		fmt.Fprintf(w, "%s%s\n", pad, visible(c.Grants))
	}
	if c.Remedy != "" {
		fmt.Fprintf(w, "%s%s\n", pad, visible(c.Remedy))
	}
}

func annotationWords(e effects) string {
	words := []string{fmt.Sprintf("readOnlyHint=%v", e.ReadOnly)}
	if e.Destructive != nil {
		words = append(words, fmt.Sprintf("destructiveHint=%v", *e.Destructive))
	}
	words = append(words, fmt.Sprintf("idempotentHint=%v", e.Idempotent))
	if e.OpenWorld != nil {
		words = append(words, fmt.Sprintf("openWorldHint=%v", *e.OpenWorld))
	}
	return strings.Join(words, ", ")
}

// ruleText writes a rule as lathe.toml would, with its place.
func ruleText(r *ruleJSON) string {
	s := "tool = " + tomlString(r.Tool)
	if r.Operation != "" {
		s += ", operation = " + tomlString(r.Operation)
	}
	if r.Args != "" {
		s += ", args = " + tomlString(r.Args)
	}
	if r.Arg != "" {
		s += ", arg = " + tomlString(r.Arg)
	}
	s += ", approval = " + tomlString(r.Approval)
	if r.Source != "" {
		s += " (" + visible(r.Source) + ")"
	}
	return s
}
