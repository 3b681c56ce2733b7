package config

import (
	"fmt"
	"regexp"
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

	// Pos is where the rule was written.
	Pos Pos `toml:"-"`
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
