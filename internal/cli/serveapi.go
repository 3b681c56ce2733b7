package cli

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/server/httpapi"
	"github.com/lathe-tools/lathe/tool"
)

// apiFace is the HTTP API of lathe serve --http, in two steps: its stages
// go into the engine before the workspace is opened, and the API itself
// is made once it is, when the configuration (the approval wait, the
// redaction patterns) is known. No call runs between the two: the
// listener serves only after.
type apiFace struct {
	queue *approvals.Queue
	calls *httpapi.Calls
}

// prepareAPI makes g's engine ask the API's queue when a call's client
// cannot answer, and record the calls' arguments for it.
func (g *globals) prepareAPI() *apiFace {
	f := &apiFace{}
	g.fallback = policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		return f.queue.Approve(ctx, r)
	})
	g.middleware = append(g.middleware, func(next lathe.Handler) lathe.Handler {
		return func(ctx context.Context, inv *lathe.Invocation) (*tool.Outcome, error) {
			// Every call comes after open, which set f.calls.
			return f.calls.Middleware()(next)(ctx, inv)
		}
	})
	return f
}

// open makes the API of workspace w.
func (f *apiFace) open(w *load.Workspace, token string) (*httpapi.API, error) {
	cfg := w.Config
	red, err := audit.NewRedactor(patternStrings(cfg.Audit.RedactKeys), patternStrings(cfg.Audit.RedactValues))
	if err != nil {
		return nil, err
	}
	f.queue = approvals.New(approvals.Options{Wait: cfg.Serve.ApprovalWait})
	if f.calls, err = httpapi.NewCalls(0, red); err != nil {
		return nil, err
	}
	opts := httpapi.Options{Engine: w.Engine, Token: token, Approvals: f.queue, Policy: load.Policy(cfg),
		Redactor: red, Calls: f.calls, Upstreams: upstreams(w)}
	if cfg.Audit.Enable == nil || *cfg.Audit.Enable {
		opts.Audit = w.Audit
		if dir, err := audit.DefaultGrantDir(); err == nil {
			if gs, err := audit.OpenGrants(dir, w.Dir); err == nil {
				opts.Grants = gs
			}
		}
	}
	return httpapi.New(opts)
}

func patternStrings(ps []config.Pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = string(p)
	}
	return out
}

// upstreams reports the upstream servers of w: those skipped or deferred,
// and the other enabled ones as running, with the number of tools each has.
func upstreams(w *load.Workspace) func() []httpapi.Upstream {
	return func() []httpapi.Upstream {
		if w.MCP == nil {
			return nil
		}
		count := map[string]int{}
		for _, d := range w.Engine.Tools() {
			if name, ok := strings.CutPrefix(d.Source, "mcp."); ok {
				count[name]++
			}
		}
		state := map[string]string{}
		for n, s := range w.Config.MCP {
			if s != nil && (s.Enable == nil || *s.Enable) {
				state[n] = "running"
			}
		}
		for _, n := range w.MCP.Skipped() {
			state[n] = "skipped"
		}
		for _, n := range w.MCP.Deferred() {
			state[n] = "deferred"
		}
		var out []httpapi.Upstream
		for _, n := range slices.Sorted(maps.Keys(state)) {
			out = append(out, httpapi.Upstream{Name: n, State: state[n], Tools: count[n]})
		}
		return out
	}
}
