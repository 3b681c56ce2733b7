package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
	"golang.org/x/term"
)

// personWho names the person at the terminal in the audit log, when lathe
// call's own command line is the approval.
const personWho = "person"

// checkRules refuses policy rules that match no tool, now that every tool
// is known (including those of MCP servers, loaded after the policy). A rule
// of the user's own file, which applies to every workspace, may name a tool
// that this workspace lacks: that is a warning, not an error. So is every
// such rule while trust has left part of the configuration out (leftOut):
// the rule may name a tool of a table that is waiting to be trusted.
func (g *globals) checkRules(e *lathe.Engine, cfg *config.Config, known map[string]bool, leftOut bool) error {
	loaded := map[string]bool{}
	for _, d := range e.Tools() {
		if server, ok := strings.CutPrefix(d.Source, "mcp."); ok {
			loaded[server] = true
		}
	}
	names := slices.Sorted(maps.Keys(known))
	var errs []error
	for _, err := range cfg.UnmatchedRules(names, func(s string) bool { return loaded[s] }, policy.Match) {
		if u := config.UserFile(); leftOut || u != "" && err.Pos.File == u {
			fmt.Fprintln(g.streams.Err, "lathe: warning:", err)
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &configError{errors.Join(errs...)}
	}
	return nil
}

// policyStages returns the engine's audit stage (outermost, so that it sees
// every call) and its policy stage. The audit database is opened at the
// first call, not before: `lathe list` leaves no database behind.
func (g *globals) policyStages(cfg *config.Config, ws string) (outer, inner []lathe.Middleware, err error) {
	p := &policy.Policy{}
	for _, r := range cfg.Policy.Rules {
		p.Rules = append(p.Rules, policy.Rule{Tool: r.Tool, Args: r.Args, Arg: r.Arg,
			Approval: policy.Approval(r.Approval), Source: r.Pos.String()})
	}
	opts := policy.Options{Approver: g.approver}
	if cfg.Audit.Enable == nil || *cfg.Audit.Enable {
		// Grants are kept in the user's state directory, not in the audit
		// database: that is a log, which anything writing the workspace
		// could forge, never a source of rules. Without a place for them,
		// "always" lasts the session.
		if grants, err := openGrants(ws); err != nil {
			fmt.Fprintf(g.streams.Err, "lathe: grants are not kept: %v\n", err)
		} else {
			opts.Grants = grants
		}
		red, err := audit.NewRedactor(patterns(cfg.Audit.RedactKeys), patterns(cfg.Audit.RedactValues))
		if err != nil {
			return nil, nil, &configError{err}
		}
		ls := g.auditStore(auditPath(cfg, ws))
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
	return outer, []lathe.Middleware{policy.Middleware(p, opts)}, nil
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

// auditStore returns the lazily opened store at path; Run closes it.
func (g *globals) auditStore(path string) *lazyStore {
	g.storeMu.Lock()
	defer g.storeMu.Unlock()
	if g.store == nil || g.store.path != path {
		g.store = &lazyStore{path: path}
	}
	return g.store
}

// closeStore closes the audit database, if a call opened it.
func (g *globals) closeStore() {
	g.storeMu.Lock()
	defer g.storeMu.Unlock()
	if g.store != nil && g.store.s != nil {
		g.store.s.Close()
	}
	g.store = nil
}

// lazyStore opens an audit store at its first use.
type lazyStore struct {
	path string
	once sync.Once
	s    *audit.Store
	err  error
}

func (l *lazyStore) get() (*audit.Store, error) {
	l.once.Do(func() { l.s, l.err = audit.Open(l.path) })
	return l.s, l.err
}

// openGrants returns the grants of the workspace ws, kept in the user's
// state directory.
func openGrants(ws string) (*audit.Grants, error) {
	dir, err := audit.DefaultGrantDir()
	if err != nil {
		return nil, err
	}
	return audit.OpenGrants(dir, ws)
}

// terminalApprover asks for approvals on the terminal, or is nil when
// standard input is not one.
func terminalApprover(s Streams) policy.Approver {
	f, ok := s.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newApprover(f, s.Err)
}

// newApprover asks on w and reads answers from in. Calls of a batch run
// at once, so their questions are put one at a time.
func newApprover(in io.Reader, w io.Writer) policy.Approver {
	r := bufio.NewReader(in)
	var mu sync.Mutex
	return policy.ApproverFunc(func(ctx context.Context, req *policy.Request) (policy.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s wants to run: %s\n  (%s)\n", req.Tool.Name, req.Arguments, req.Reason)
		for {
			fmt.Fprint(w, "Allow? [o]nce, [s]ession, [a]lways, [d]eny: ")
			line, err := r.ReadString('\n')
			if err != nil && line == "" {
				return policy.Answer{}, fmt.Errorf("no answer on the terminal: %w", err)
			}
			switch strings.ToLower(strings.TrimSpace(line)) {
			case "o", "once", "y", "yes":
				return policy.Answer{Verdict: policy.AllowOnce}, nil
			case "s", "session":
				return policy.Answer{Verdict: policy.AllowSession}, nil
			case "a", "always":
				return policy.Answer{Verdict: policy.AllowAlways}, nil
			case "d", "deny", "n", "no":
				fmt.Fprint(w, "Reason for the model (optional): ")
				reason, _ := r.ReadString('\n')
				return policy.Answer{Verdict: policy.Refuse, Reason: strings.TrimSpace(reason)}, nil
			}
		}
	})
}
