package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// checkRules refuses policy rules that match no tool, now that every tool
// is known (including those of MCP servers, loaded after the policy). A rule
// of the user's own file, which applies to every workspace, may name a tool
// that this workspace lacks: that is a warning, not an error. So is every
// such rule while trust has left part of the configuration out: the rule
// may name a tool of a table that is waiting to be trusted.
func (w *Workspace) checkRules(opts *Options, known map[string]bool, leftOut bool) error {
	loaded := map[string]bool{}
	for _, d := range w.Engine.Tools() {
		if server, ok := strings.CutPrefix(d.Source, "mcp."); ok {
			loaded[server] = true
		}
	}
	names := slices.Sorted(maps.Keys(known))
	var errs []error
	for _, err := range w.Config.UnmatchedRules(names, func(s string) bool { return loaded[s] }, policy.Match) {
		if u := config.UserFile(); leftOut || u != "" && err.Pos.File == u {
			opts.warn(err)
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &ConfigError{errors.Join(errs...)}
	}
	return nil
}

// policyStages returns the engine's audit stage (outermost, so that it sees
// every call) and its policy stage. The audit database is opened at the
// first call, not before: listing the tools leaves no database behind.
func (w *Workspace) policyStages(opts *Options) (outer, inner []lathe.Middleware, err error) {
	cfg := w.Config
	p := Policy(cfg)
	po := policy.Options{Approver: opts.Approver, Fallback: opts.Fallback, Remedy: Remedy(cfg)}
	if cfg.Audit.Enable == nil || *cfg.Audit.Enable {
		// Grants are kept in the user's state directory, not in the audit
		// database: that is a log, which anything writing the workspace
		// could forge, never a source of rules. Without a place for them,
		// "always" lasts the session.
		if grants, err := openGrants(w.Dir); err != nil {
			opts.warn(fmt.Errorf("grants are not kept: %w", err))
		} else {
			po.Grants = grants
		}
		red, err := audit.NewRedactor(patterns(cfg.Audit.RedactKeys), patterns(cfg.Audit.RedactValues))
		if err != nil {
			return nil, nil, &ConfigError{err}
		}
		ls := &lazyStore{path: auditPath(cfg, w.Dir), red: red}
		w.store = ls
		outer = append(outer, func(next lathe.Handler) lathe.Handler {
			// The store's handler is made once, at the first call that
			// finds the store open: not once per call, which cost every
			// call its closures (and a getpid).
			var (
				once    sync.Once
				audited lathe.Handler
			)
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				s, err := ls.get()
				if err != nil {
					return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Stage: "audit",
						Message: "the call was not run because the audit log could not be opened", Err: err}
				}
				once.Do(func() { audited = audit.Middleware(s, red)(next) })
				return audited(ctx, inv)
			}
		})
	}
	inner = append(slices.Clone(opts.Middleware), policy.Middleware(p, po))
	return outer, inner, nil
}

// Policy returns the policy cfg describes: its [[policy.rules]], and the
// approval of each [mcp.NAME] server that sets one as the default of the
// server's tools, below the rules (see docs/policy.md).
func Policy(cfg *config.Config) *policy.Policy {
	p := &policy.Policy{}
	for _, r := range cfg.Policy.Rules {
		p.Rules = append(p.Rules, policy.Rule{Tool: r.Tool, Args: r.Args, Arg: r.Arg,
			Approval: policy.Approval(r.Approval), Operation: string(r.Operation), Source: r.Pos.String()})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.MCP)) {
		s := cfg.MCP[name]
		if s == nil || s.Approval == "" {
			continue
		}
		origin := s.Pos.String()
		if pos, ok := cfg.Origin("mcp", name, "approval"); ok {
			origin = pos.String()
		}
		p.Defaults = append(p.Defaults, policy.SourceDefault{Source: "mcp." + name,
			Approval: policy.Approval(s.Approval), Origin: origin})
	}
	return p
}

// Remedy returns what [policy.Options].Remedy wants for cfg: for a call
// denied with nobody answering, the line of the configuration that denied
// or asked (file:line) and the key that would let the call run, so that
// the client that got the denial, or the person behind it, can tell what
// to change.
func Remedy(cfg *config.Config) func(def *tool.Definition, d policy.Decision) string {
	return func(def *tool.Definition, d policy.Decision) string { return remedy(cfg, def, d) }
}

func remedy(cfg *config.Config, def *tool.Definition, d policy.Decision) string {
	name := def.Name
	allowRule := fmt.Sprintf("[[policy.rules]] tool = %q, approval = \"allow\"", name)
	server, isMCP := strings.CutPrefix(def.Source, "mcp.")
	add := "add " + allowRule + where(cfg)
	verb := "to let the call run unasked, "
	if d.Approval == policy.Deny {
		verb = "to let the call run, "
	}
	switch {
	case d.By == "rule" && d.Rule != nil && d.Rule.Approval == policy.Deny && d.Approval == policy.Deny:
		return fmt.Sprintf("a deny rule always wins: to let the call run, narrow or remove the rule at %s", d.Rule.Source)
	case d.By == "rule" && d.Rule != nil && d.Rule.Approval == policy.Deny:
		// A deny rule that could not read the command asks.
		return fmt.Sprintf("the deny rule at %s could not read the command; one it can read (no unclosed quote or substitution) is decided by the rules", d.Rule.Source)
	case d.By == "rule" && d.Rule != nil && (d.Rule.Tool == name || d.Rule.Args != ""):
		// A rule of its own for the tool would not beat this one, which is
		// as specific or more: the rule itself has to change.
		return verb + fmt.Sprintf("change the rule at %s to approval = \"allow\"", d.Rule.Source)
	case d.By == "rule" && d.Rule != nil:
		return verb + fmt.Sprintf("%s (it is more specific than the rule at %s)", add, d.Rule.Source)
	case d.By == "source" && d.Default != nil:
		return verb + fmt.Sprintf("%s (a rule wins over [mcp.%s] approval = %q at %s), or change that line",
			add, server, string(d.Default.Approval), d.Default.Origin)
	}
	fix := verb + add
	if isMCP {
		fix += fmt.Sprintf("; or [mcp.%s] approval = \"allow\" for every tool of the server", server)
	}
	if a := def.Annotations; a.DestructiveHint == nil || !*a.DestructiveHint {
		// A tool that says it may destroy is not one to call read-only.
		fix += fmt.Sprintf("; or, if the tool changes nothing, [tools.%s] read_only = true", name)
		if s := cfg.MCP[server]; isMCP && (s == nil || s.TrustAnnotations == nil || !*s.TrustAnnotations) {
			fix += fmt.Sprintf(" (what the server says of its tools counts only with [mcp.%s] trust_annotations = true)", server)
		}
	}
	return fix
}

// where names the files a setting can go in: the workspace's, which then
// needs trust again, and the user's, which applies to every workspace.
func where(cfg *config.Config) string {
	user, ws := config.UserFile(), ""
	for _, f := range cfg.Files {
		if f != user {
			ws = f
		}
	}
	switch {
	case ws != "" && user != "":
		return fmt.Sprintf(" in %s (then lathe trust) or %s", ws, user)
	case ws != "":
		return fmt.Sprintf(" in %s (then lathe trust)", ws)
	case user != "":
		return " in lathe.toml (then lathe trust) or " + user
	}
	return " in lathe.toml"
}

func patterns(ps []config.Pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// auditPath is the database a workspace's configuration names.
func auditPath(cfg *config.Config, ws string) string {
	p := cfg.Audit.Path
	if p == "" {
		p = audit.DefaultPath
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	return p
}

// lazyStore opens an audit store at its first use.
type lazyStore struct {
	path   string
	red    *audit.Redactor // of the calls' arguments, and of reads' and gets' (access.go)
	mu     sync.Mutex
	s      *audit.Store
	err    error
	opened bool
}

func (l *lazyStore) get() (*audit.Store, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.opened {
		l.opened = true
		l.s, l.err = audit.Open(l.path)
	}
	return l.s, l.err
}

// close closes the store if a call opened it. A call that comes after
// finds it closed, and its error says so.
func (l *lazyStore) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = true
	if l.s == nil {
		l.err = errors.New("the workspace is closed")
		return nil
	}
	return l.s.Close()
}

// openGrants returns the grants of the workspace dir: the tools a person
// allowed always, kept in the user's state directory rather than in the
// workspace, where anything that writes the workspace could forge them.
func openGrants(dir string) (*audit.Grants, error) {
	gdir, err := audit.DefaultGrantDir()
	if err != nil {
		return nil, err
	}
	return audit.OpenGrants(gdir, dir)
}
