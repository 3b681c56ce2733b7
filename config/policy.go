package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Policy is the [policy] table: who may run what (see docs/policy.md).
type Policy struct {
	// Rules holds the [[policy.rules]] tables, in the order written. Rules
	// of the user file and the workspace file are not merged: the workspace
	// file's list, when it has one, replaces the user file's.
	Rules []PolicyRule `toml:"rules"`
}

// PolicyRule is one [[policy.rules]] table.
type PolicyRule struct {
	// Tool is a pattern over tool names (* any run of characters, ? one).
	Tool string `toml:"tool"`
	// Args, if set, is a pattern over the call's argument text.
	Args string `toml:"args"`
	// Arg names the argument whose value Args matches; empty means
	// "command", else the only string argument, else all of them as JSON.
	Arg string `toml:"arg"`
	// Approval is "allow", "ask" or "deny".
	Approval Approval `toml:"approval"`
	// Operation, if set, makes the rule one about the host operations of
	// the tools it matches ("read", "write", "list", "stat", "remove",
	// "fetch", "run", "env", or "*" for any), not about their calls; Args
	// then matches the operation's subject (a path relative to the
	// workspace, a URL, a command line, a variable's name).
	Operation Operation `toml:"operation"`

	// Pos is where the rule was written.
	Pos Pos `toml:"-"`
}

// Operation is the value of a rule's operation key.
type Operation string

// operationKinds are the host operations a rule may name; package policy
// holds the same list (policy.OperationKinds), and a test keeps the two
// alike.
var operationKinds = []string{"read", "write", "list", "stat", "remove", "fetch", "run", "env"}

func (o Operation) validate() error {
	if o == "*" || slices.Contains(operationKinds, string(o)) {
		return nil
	}
	return fmt.Errorf("must be one of %s, or \"*\" for any, got %q",
		`"`+strings.Join(operationKinds, `", "`)+`"`, string(o))
}

// checkRules reports what no single key's value says is wrong with a rule:
// arg on a rule about an operation, whose args match the operation's
// subject rather than an argument.
func (p *Policy) checkRules() []error {
	var errs []error
	for i, r := range p.Rules {
		if r.Operation != "" && r.Arg != "" {
			errs = append(errs, &Error{Pos: r.Pos, Msg: fmt.Sprintf(
				"policy.rules.%d: arg does not apply to a rule with operation = %q: its args match the operation's subject", i, string(r.Operation))})
		}
	}
	return errs
}

// Approval is the value of a rule's approval key.
type Approval string

func (a Approval) validate() error {
	switch a {
	case "allow", "ask", "deny":
		return nil
	}
	return fmt.Errorf("must be \"allow\", \"ask\" or \"deny\", got %q", string(a))
}

// Audit is the [audit] table: where and how calls are recorded.
type Audit struct {
	// Path is the SQLite database; relative paths are relative to the
	// workspace. Empty means .lathe/lathe.db.
	Path string `toml:"path"`
	// Enable = false records nothing and keeps no grants ("allow always"
	// then lasts the session); nil means on.
	Enable *bool `toml:"enable"`
	// RedactKeys are regular expressions over argument names whose values
	// are hidden in the log, beside the built-in ones.
	RedactKeys []Pattern `toml:"redact_keys"`
	// RedactValues are regular expressions over string values; what they
	// match is hidden, beside the built-in ones.
	RedactValues []Pattern `toml:"redact_values"`
}

// Pattern is a regular expression, checked when the file is read.
type Pattern string

func (p Pattern) validate() error {
	if _, err := regexp.Compile(string(p)); err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	return nil
}

// UnmatchedRules returns an error for each policy rule whose tool pattern
// matches none of the names of known tools, so that a mistyped rule (a deny
// rule for "run_comand" protects nothing) is caught when lathe starts rather
// than never. Each error names the rule's file and line and, when one is
// close, the tool it probably meant. match is the policy's pattern matcher.
//
// Call it once every tool is known: builtin, local and those of the MCP
// servers. A server that is configured but brought no tools (an optional one
// that could not start) may have the tools a rule names, so a rule whose
// pattern starts with that server's prefix is not reported; loaded says
// which servers brought tools.
func (c *Config) UnmatchedRules(names []string, loaded func(server string) bool, match func(pattern, name string) bool) []*Error {
	if c == nil {
		return nil
	}
	var errs []*Error
	for _, r := range c.Policy.Rules {
		if slices.ContainsFunc(names, func(n string) bool { return match(r.Tool, n) }) || c.mayBeUnloaded(r.Tool, loaded) {
			continue
		}
		msg := fmt.Sprintf("[[policy.rules]] tool = %s matches no tool, so the rule applies to nothing", quote(r.Tool))
		if s := suggest(literalPrefix(r.Tool), names); s != "" && !strings.ContainsAny(r.Tool, "*?") {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else if s != "" {
			msg += fmt.Sprintf(" (a tool that is close: %q)", s)
		}
		errs = append(errs, &Error{Pos: r.Pos, Msg: msg})
	}
	return errs
}

// mayBeUnloaded reports whether pattern may name a tool of a configured MCP
// server that brought no tools.
func (c *Config) mayBeUnloaded(pattern string, loaded func(server string) bool) bool {
	lit := literalPrefix(pattern)
	for name, s := range c.MCP {
		if loaded(name) {
			continue
		}
		prefix := s.ToolPrefix()
		if strings.HasPrefix(lit, prefix) || strings.HasPrefix(prefix, lit) && len(lit) < len(pattern) {
			return true
		}
	}
	return false
}

// literalPrefix is the part of a pattern before its first wildcard.
func literalPrefix(pattern string) string {
	if i := strings.IndexAny(pattern, "*?"); i >= 0 {
		return pattern[:i]
	}
	return pattern
}
