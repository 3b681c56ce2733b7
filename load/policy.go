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
	p := &policy.Policy{}
	for _, r := range cfg.Policy.Rules {
		p.Rules = append(p.Rules, policy.Rule{Tool: r.Tool, Args: r.Args, Arg: r.Arg,
			Approval: policy.Approval(r.Approval), Source: r.Pos.String()})
	}
	po := policy.Options{Approver: opts.Approver}
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
		ls := &lazyStore{path: auditPath(cfg, w.Dir)}
		w.store = ls
		outer = append(outer, func(next lathe.Handler) lathe.Handler {
			return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
				s, err := ls.get()
				if err != nil {
					return nil, &tool.Error{Kind: tool.KindRuntimeFailure, Tool: inv.Call.Name, Stage: "audit",
						Message: "the call was not run because the audit log could not be opened", Err: err}
				}
				return audit.Middleware(s, red)(next)(ctx, inv)
			}
		})
	}
	return outer, []lathe.Middleware{policy.Middleware(p, po)}, nil
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
