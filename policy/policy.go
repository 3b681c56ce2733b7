// Package policy decides whether a tool call may run: rules per tool (and
// per argument), defaults from the tool's annotations, grants a person gave
// earlier, and an approval hook that asks a person when a rule says "ask".
//
// A [Policy] is pure: [Policy.Decide] looks at a tool and its arguments and
// says allow, ask or deny, and which rule said so. [Middleware] puts a policy
// into an engine's pipeline, with an [Approver] to ask and a [GrantStore] to
// remember the answers that last.
//
// Which rule wins (docs/policy.md says the same for users):
//
//  1. A matching deny rule always wins; neither another rule nor a grant
//     overrides it.
//  2. Otherwise the most specific matching rule wins: a rule that matches
//     arguments beats one that does not; then the rule whose patterns hold
//     more literal characters (read_file beats read_* beats *); a tie goes
//     to ask over allow.
//  3. With no matching rule, the default of the tool's source decides, when
//     the policy has one ([SourceDefault]: an MCP server's approval).
//  4. With neither, the tool's annotations decide: a read-only tool is
//     allowed, any other tool (destructive, or of unknown effects) asks.
//
// Rules with an Operation are about the host operations of a confined
// tool's running call (a file read, a URL fetched, a command run), not
// about calls: [Policy.DecideOperation] weighs them, with the same order
// of precedence but no defaults (an operation no rule names is allowed,
// the tool's permissions having narrowed it already), and [CheckOperation]
// settles them for the call running in a context, asking where a rule says
// ask.
//
// The annotations are what the tool's definition says when it reaches the
// policy; a caller that does not trust a tool's own word (an upstream
// server's) adjusts them before the tool is registered, as package config
// does.
package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-tools/lathe/tool"
)

// Approval is what a rule says about a call.
type Approval string

const (
	// Allow runs the call.
	Allow Approval = "allow"
	// Ask runs it only once a person (or a grant they gave) approves.
	Ask Approval = "ask"
	// Deny refuses it; the reason goes back to the model.
	Deny Approval = "deny"
)

// Valid reports whether a is one of the three approvals.
func (a Approval) Valid() bool { return a == Allow || a == Ask || a == Deny }

// rank orders approvals by restriction, for ties.
func (a Approval) rank() int {
	switch a {
	case Deny:
		return 2
	case Ask:
		return 1
	}
	return 0
}

// Rule is one line of a policy.
type Rule struct {
	// Tool is a pattern over tool names: * matches any run of characters,
	// ? one character, anything else itself. Empty matches every tool.
	Tool string
	// Args, if set, is a pattern over the call's argument text (see
	// [Subject]); the rule then matches only calls whose text fits it.
	Args string
	// Arg names the argument whose value is the argument text; empty means
	// the default choice of [Subject].
	Arg string
	// Approval is what the rule says.
	Approval Approval
	// Operation, if set, makes the rule one about the host operations of
	// the tools it matches rather than their calls: "read", "write",
	// "list", "stat", "remove", "fetch", "run" or "env" ([OperationKinds]),
	// or "*" for any of them. Args then matches the operation's subject
	// (see [OperationRequest]) and Arg must be empty. [Policy.Decide]
	// ignores such a rule, and [Policy.DecideOperation] every other.
	Operation string
	// Source says where the rule came from ("lathe.toml:12"), for the audit log.
	Source string
}

// OperationKinds returns the host operations a rule may name in its
// Operation, besides "*". The result is a copy.
func OperationKinds() []string {
	return []string{"read", "write", "list", "stat", "remove", "fetch", "run", "env"}
}

// Validate checks a rule's approval, and its operation when it has one.
func (r Rule) Validate() error {
	if !r.Approval.Valid() {
		return fmt.Errorf("policy rule for %q: approval must be \"allow\", \"ask\" or \"deny\", got %q", r.Tool, r.Approval)
	}
	if r.Operation != "" && r.Operation != "*" && !slices.Contains(OperationKinds(), r.Operation) {
		return fmt.Errorf("policy rule for %q: operation must be one of %s or \"*\", got %q", r.Tool,
			strings.Join(OperationKinds(), ", "), r.Operation)
	}
	if r.Operation != "" && r.Arg != "" {
		return fmt.Errorf("policy rule for %q: arg does not apply to a rule about an operation, whose args match the operation's subject", r.Tool)
	}
	return nil
}

// SourceDefault is the approval of every call of the tools of one source
// that no rule decides: an MCP server's approval for its tools.
type SourceDefault struct {
	// Source is the tools' [tool.Definition].Source, as "mcp.github".
	Source string
	// Approval is what it says.
	Approval Approval
	// Origin says where it was set ("lathe.toml:4 mcp.github.approval"),
	// for the reason and the audit log.
	Origin string
}

// String renders the default for a reason.
func (s *SourceDefault) String() string {
	// Concatenation, not fmt: a server's tools get this reason on every
	// call the default decides.
	out := "the default approval=\"" + string(s.Approval) + "\" of the tools of " + s.Source
	if s.Origin != "" {
		out += " (" + s.Origin + ")"
	}
	return out
}

// Policy is an ordered set of rules, and defaults per source. The zero
// value has neither: every call gets the default its annotations give.
type Policy struct {
	Rules []Rule
	// Defaults hold at most one default per source; they decide the calls
	// no rule matches.
	Defaults []SourceDefault
}

// Decision is what the policy says about one call, and why.
type Decision struct {
	Approval Approval
	// By names who or what decided: "rule", "source" (a [SourceDefault]),
	// "default" (the tool's annotations), and, once
	// [Middleware] has settled an ask, "grant", "session", "person",
	// "approver", "client", "remote" (a [Options].Fallback) or "nobody" (no way to ask).
	By string
	// Rule is the rule that decided, if one did.
	Rule *Rule
	// Default is the source's default that decided, if one did.
	Default *SourceDefault
	// Reason says why, in words a person and a model can read.
	Reason string
}

// Decide says whether the call of def with args (decoded JSON, normally a
// map[string]any) may run. It never asks anyone.
func (p *Policy) Decide(def *tool.Definition, args any) Decision {
	var best *Rule
	var bestScore [2]int
	// doubt is a deny rule that could not tell whether it matches: the
	// call is then asked, never allowed.
	var doubt *Rule
	var doubtWhy string
	// Every deny rule reads the same command line: it is read once.
	var sh *shellReader
	var shText string
	read := func(text string) *shellReader {
		if sh == nil || shText != text {
			sh, shText = readShell(text), text
		}
		return sh
	}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.Operation != "" || !match(r.Tool, def.Name) {
			continue
		}
		if r.Args != "" {
			ok, why := matchArgs(r, args, read)
			if why != "" && doubt == nil {
				doubt, doubtWhy = r, why
			}
			if !ok {
				continue
			}
		}
		if r.Approval == Deny {
			return Decision{Approval: Deny, By: "rule", Rule: r, Reason: "the rule " + r.String() + " denies it"}
		}
		score := [2]int{0, literals(r.Tool)}
		if r.Args != "" {
			score[0] = 1
			score[1] += literals(r.Args)
		}
		if best == nil || score[0] > bestScore[0] || (score[0] == bestScore[0] &&
			(score[1] > bestScore[1] || (score[1] == bestScore[1] && r.Approval.rank() > best.Approval.rank()))) {
			best, bestScore = r, score
		}
	}
	d := p.fallback(def, best)
	if doubt != nil && d.Approval == Allow {
		return Decision{Approval: Ask, By: "rule", Rule: doubt,
			Reason: "the rule " + doubt.String() + " cannot tell whether it denies the command: " + doubtWhy}
	}
	return d
}

// fallback is the decision when no deny rule matched: the best rule, else
// the source's default, else the annotations'.
func (p *Policy) fallback(def *tool.Definition, best *Rule) Decision {
	if best != nil {
		return Decision{Approval: best.Approval, By: "rule", Rule: best, Reason: "the rule " + best.String()}
	}
	for i := range p.Defaults {
		if s := &p.Defaults[i]; s.Source == def.Source && def.Source != "" {
			return Decision{Approval: s.Approval, By: "source", Default: s, Reason: s.String()}
		}
	}
	a := def.Annotations
	if a.ReadOnlyHint {
		return Decision{Approval: Allow, By: "default", Reason: "the tool is read-only"}
	}
	if a.DestructiveHint != nil && *a.DestructiveHint {
		return Decision{Approval: Ask, By: "default", Reason: "the tool may change or destroy data"}
	}
	return Decision{Approval: Ask, By: "default", Reason: "the tool does not say it is read-only"}
}

// String renders a rule as it would be written in lathe.toml. It is on the
// path of every call a rule decides (the decision's reason), so it quotes
// with strconv, as fmt's %q would, without fmt's cost.
func (r *Rule) String() string {
	b := make([]byte, 0, 48+len(r.Tool)+len(r.Operation)+len(r.Args)+len(r.Source))
	b = append(b, "tool="...)
	b = strconv.AppendQuote(b, r.Tool)
	if r.Operation != "" {
		b = append(b, " operation="...)
		b = strconv.AppendQuote(b, r.Operation)
	}
	if r.Args != "" {
		b = append(b, " args="...)
		b = strconv.AppendQuote(b, r.Args)
	}
	b = append(b, " approval="...)
	b = strconv.AppendQuote(b, string(r.Approval))
	if r.Source != "" {
		b = append(append(append(b, " ("...), r.Source...), ')')
	}
	return string(b)
}

// Subject returns the argument text rules match: the value of the argument
// arg when it is a string; with arg empty, the "command" argument when
// there is one, else the only string argument when there is exactly one;
// otherwise the arguments as compact JSON with sorted keys.
func Subject(args any, arg string) string {
	m, _ := args.(map[string]any)
	if arg != "" {
		if s, ok := m[arg].(string); ok {
			return s
		}
		b, _ := json.Marshal(m[arg])
		return string(b)
	}
	if s, ok := m["command"].(string); ok {
		return s
	}
	var only string
	n := 0
	for _, v := range m {
		if s, ok := v.(string); ok {
			only = s
			n++
		}
	}
	if n == 1 && len(m) == 1 {
		return only
	}
	b, _ := json.Marshal(args) // encoding/json sorts map keys
	return string(b)
}

// matchArgs matches a rule's argument pattern. Shell control operators get
// care, as coding agents give them: an allow or ask rule matches only text
// that is one simple command (so "git status*" does not allow
// "git status; rm -rf ~"), while a deny rule matches when any one of the
// commands the text would run fits (so "rm *" denies "ls && rm -rf ~",
// "sudo /bin/rm -rf ~" and "sh -c 'rm -rf ~'" when the text is a command
// line; see readShell and commandLine), and "rm *" also denies a bare "rm". For a deny rule that does not match, why says
// what part of the text could not be read, if any: the rule cannot then
// tell that it does not match. read reads a command line as the shell
// would (readShell, or a cache of it).
func matchArgs(r *Rule, args any, read func(string) *shellReader) (ok bool, why string) {
	s := strings.TrimSpace(Subject(args, r.Arg))
	if r.Approval != Deny {
		return !hasShellControl(s) && match(r.Args, s), ""
	}
	bare, hasBare := strings.CutSuffix(r.Args, " *")
	fits := func(text string) bool {
		return match(r.Args, text) || (hasBare && match(bare, text))
	}
	if fits(s) {
		return true, ""
	}
	for _, part := range splitCommands(s) {
		if fits(part) {
			return true, ""
		}
	}
	if !commandLine(args, r.Arg) {
		return false, ""
	}
	sh := read(s)
	for _, c := range sh.commands {
		if fits(c) {
			return true, ""
		}
	}
	return false, sh.unsure
}

// commandLine reports whether the argument text a rule matches is a shell
// command line: the argument named "command", as run_command's is, chosen
// by the rule or by [Subject]'s default. Other text (a path, a pattern,
// arguments rendered as JSON) is not read as shell, lest its braces and
// stars read as commands only a shell could know.
func commandLine(args any, arg string) bool {
	if arg != "" {
		return arg == "command"
	}
	m, _ := args.(map[string]any)
	_, ok := m["command"].(string)
	return ok
}

// shellControl are the sequences that chain, substitute or redirect
// commands in a POSIX shell.
var shellControl = []string{";", "&", "|", "`", "$(", "\n", ">", "<"}

func hasShellControl(s string) bool {
	for _, c := range shellControl {
		if strings.Contains(s, c) {
			return true
		}
	}
	return false
}

// splitCommands splits s at shell control operators into the simple
// commands it holds, each trimmed; "$(" and backquotes also start one.
func splitCommands(s string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(";&|`\n><()", r)
	})
	out := parts[:0]
	for _, p := range parts {
		p = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(p), "$"))
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Match reports whether the tool name fits a rule's tool pattern, as the
// policy decides it; the configuration uses it to find rules that match no
// tool.
func Match(pattern, name string) bool { return match(pattern, name) }

// match reports whether s fits the pattern: * is any run of characters
// (spaces and slashes included), ? one character, anything else itself.
// An empty pattern matches everything.
func match(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	p := []rune(pattern)
	t := []rune(s)
	// The classic greedy algorithm with one backtrack point, linear in
	// practice and never exponential.
	pi, ti := 0, 0
	star, mark := -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// literals counts a pattern's characters that are not wildcards. It runs
// for every matching rule of every call, so it counts in place rather than
// building a string without the wildcards.
func literals(pattern string) int {
	n := 0
	for _, r := range pattern {
		if r != '*' && r != '?' {
			n++
		}
	}
	return n
}
