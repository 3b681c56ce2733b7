package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// Tool is a tool as GET /api/tools shows it.
type Tool struct {
	Name         string           `json:"name"`
	Summary      string           `json:"summary"`
	Description  string           `json:"description"`
	Source       string           `json:"source"`
	InputSchema  json.RawMessage  `json:"inputSchema"`
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  tool.Annotations `json:"annotations"`
	Effects      Effects          `json:"effects"`
	Policy       ToolPolicy       `json:"policy"`
}

// Effects are what a tool's annotations say it does.
type Effects struct {
	ReadOnly    bool `json:"readOnly"`
	Destructive bool `json:"destructive"`
	Idempotent  bool `json:"idempotent"`
	OpenWorld   bool `json:"openWorld"`
}

// ToolPolicy is what the policy says of a call of the tool whose
// arguments no rule singles out.
type ToolPolicy struct {
	Decision string `json:"decision"`
	Rule     string `json:"rule"`
}

func summary(desc string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
	if i := strings.Index(line, ". "); i > 0 {
		line = line[:i+1]
	}
	return line
}

func (a *API) handleTools(w http.ResponseWriter, r *http.Request, _ *caller) {
	defs := a.g().Engine.Tools()
	slices.SortFunc(defs, func(x, y tool.Definition) int { return strings.Compare(x.Name, y.Name) })
	p := a.g().Policy
	if p == nil {
		p = &policy.Policy{}
	}
	out := make([]Tool, 0, len(defs))
	for i := range defs {
		d := &defs[i]
		in := d.InputSchema
		if len(in) == 0 {
			in = json.RawMessage(`{"type":"object"}`)
		}
		an := d.Annotations
		dec := p.Decide(d, map[string]any{})
		tp := ToolPolicy{Decision: string(dec.Approval)}
		if dec.Rule != nil {
			tp.Rule = dec.Rule.Source
		} else if dec.Default != nil {
			tp.Rule = dec.Default.Origin
		}
		out = append(out, Tool{Name: d.Name, Summary: summary(d.Description), Description: d.Description,
			Source: d.Source, InputSchema: in, OutputSchema: d.OutputSchema, Annotations: an,
			// MCP's defaults: a tool that says nothing may destroy, and
			// reaches the open world; a read-only one destroys nothing.
			Effects: Effects{ReadOnly: an.ReadOnlyHint, Destructive: !an.ReadOnlyHint && (an.DestructiveHint == nil || *an.DestructiveHint),
				Idempotent: an.IdempotentHint, OpenWorld: an.OpenWorldHint == nil || *an.OpenWorldHint},
			Policy: tp})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": out})
}

func (a *API) handleUpstreams(w http.ResponseWriter, r *http.Request, _ *caller) {
	ups := []Upstream{}
	if a.g().Upstreams != nil {
		ups = append(ups, a.g().Upstreams()...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"upstreams": ups})
}

// callRequest is the body of POST /api/calls, and one call of a batch.
type callRequest struct {
	ID        string          `json:"id,omitempty"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func (c *callRequest) check(where string) string {
	if c.Tool == "" {
		return where + "tool: missing"
	}
	if len(c.Arguments) > 0 {
		var m map[string]any
		if json.Unmarshal(c.Arguments, &m) != nil || m == nil {
			return where + "arguments: must be a JSON object"
		}
	}
	return ""
}

func (c *callRequest) call() *tool.Call {
	id := c.ID
	if id == "" {
		id = "api-" + randomHex(8)
	}
	return &tool.Call{ID: id, Name: c.Tool, Arguments: c.Arguments}
}

// outcomeOf names how a call ended, as the engine's events do.
func outcomeOf(out *tool.Outcome) string {
	switch {
	case out.Question != nil:
		return "question"
	case out.Result != nil && out.Result.IsError:
		if out.Result.ErrorKind == "" {
			return string(tool.KindToolError)
		}
		return string(out.Result.ErrorKind)
	}
	return "ok"
}

// view is the API's view of one of its own calls, once it ended.
func (g *generation) view(ctx context.Context, c *tool.Call, started time.Time, out *tool.Outcome) Call {
	args := json.RawMessage(`{}`)
	if len(c.Arguments) > 0 {
		args = json.RawMessage(g.red.Redact(c.Arguments))
	}
	v := Call{ID: c.ID, Tool: c.Name, Session: sessionOf(ctx), Client: "api", State: "finished", Started: started,
		DurationMS: ms(time.Since(started)), Outcome: outcomeOf(out), Arguments: args,
		Result: resultOf(out.Result), Question: out.Question}
	if t, ok := g.calls.find(c.ID); ok {
		v.Seq = t.Seq
	}
	return v
}

func (a *API) handleCall(w http.ResponseWriter, r *http.Request, cl *caller) {
	var in callRequest
	if !readJSON(w, r, &in) {
		return
	}
	if msg := in.check(""); msg != "" {
		writeError(w, http.StatusBadRequest, "bad_request", msg)
		return
	}
	// One generation serves the call from start to end, a reload
	// notwithstanding.
	g := a.g()
	ctx, end := a.withSession(r.Context(), cl)
	defer end()
	c := in.call()
	started := time.Now()
	if !wantsEvents(r) {
		out := g.Engine.Call(ctx, c)
		g.calls.finished(c.ID, out)
		writeJSON(w, http.StatusOK, map[string]any{"call": g.view(ctx, c, started, out)})
		return
	}
	out, ok := startSSE(w)
	if !ok {
		return
	}
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	progress := make(chan tool.Progress, 64)
	ctx = tool.WithHooks(ctx, tool.Hooks{Progress: func(p tool.Progress) {
		select {
		case progress <- p:
		default: // a client that reads slowly loses progress, never the outcome
		}
	}})
	done := make(chan *tool.Outcome, 1)
	go func() { done <- g.Engine.Call(ctx, c) }()
	for {
		select {
		case p := <-progress:
			out.send("progress", p)
		case res := <-done:
			for len(progress) > 0 {
				out.send("progress", <-progress)
			}
			g.calls.finished(c.ID, res)
			out.send("outcome", map[string]any{"call": g.view(ctx, c, started, res)})
			return
		}
	}
}

func (a *API) handleCalls(w http.ResponseWriter, r *http.Request, _ *caller) {
	writeJSON(w, http.StatusOK, map[string]any{"calls": a.g().calls.list()})
}

func (a *API) handleCallByID(w http.ResponseWriter, r *http.Request, _ *caller) {
	id := r.PathValue("id")
	if c, ok := a.g().calls.find(id); ok {
		writeJSON(w, http.StatusOK, map[string]any{"call": c})
		return
	}
	if a.g().Audit != nil {
		s, err := a.g().Audit()
		if err != nil {
			a.internal(w, "the audit log cannot be opened", err)
			return
		}
		recs, _, err := s.Search(r.Context(), audit.Query{CallID: id, Limit: 1})
		if err != nil {
			a.internal(w, "the audit log cannot be read", err)
			return
		}
		if len(recs) == 1 {
			writeJSON(w, http.StatusOK, map[string]any{"call": callOfRecord(&recs[0])})
			return
		}
	}
	writeError(w, http.StatusNotFound, "not_found", "no call has the id "+strconv.Quote(id))
}

// callOfRecord is a call the audit log remembers.
func callOfRecord(r *audit.Record) Call {
	state, outcome := "finished", r.Outcome
	if r.Incomplete {
		// A record still started is a call that runs in another process
		// or one that died with its process; either way its end is unknown.
		state, outcome = "running", ""
	}
	args := json.RawMessage(r.Arguments)
	if !json.Valid(args) || len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return Call{ID: r.CallID, Tool: r.Tool, Session: r.Session, Client: clientOf(r.Session), State: state,
		Started: r.Time, DurationMS: ms(r.Duration), Outcome: outcome, Arguments: args}
}

type batchRequest struct {
	Calls    []callRequest `json:"calls"`
	PlanOnly bool          `json:"plan_only,omitempty"`
}

func (a *API) handleBatch(w http.ResponseWriter, r *http.Request, cl *caller) {
	var in batchRequest
	if !readJSON(w, r, &in) {
		return
	}
	if len(in.Calls) == 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "calls: at least one call is needed")
		return
	}
	g := a.g()
	calls := make([]*tool.Call, len(in.Calls))
	for i := range in.Calls {
		if msg := in.Calls[i].check("calls/" + strconv.Itoa(i) + "/"); msg != "" {
			writeError(w, http.StatusBadRequest, "bad_request", msg)
			return
		}
		calls[i] = in.Calls[i].call()
	}
	p := g.Engine.PlanBatch(calls)
	var stages [][]string
	for i, s := range p.Stage {
		for len(stages) <= s {
			stages = append(stages, []string{})
		}
		stages[s] = append(stages[s], calls[i].ID)
	}
	resp := map[string]any{"plan": map[string]any{"stages": stages}}
	if in.PlanOnly {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	ctx, end := a.withSession(r.Context(), cl)
	defer end()
	started := time.Now()
	outs := g.Engine.CallBatch(ctx, calls, nil)
	views := make([]Call, len(calls))
	for i, o := range outs {
		out := o.Outcome
		if o.Waiting() {
			out = tool.Outcome{Result: tool.ErrorResult(&tool.Error{Kind: tool.KindCancelled, Tool: calls[i].Name,
				Message: "not run: it follows a call that asked a question"})}
		}
		g.calls.finished(calls[i].ID, &out)
		views[i] = g.view(ctx, calls[i], started, &out)
	}
	resp["calls"] = views
	writeJSON(w, http.StatusOK, resp)
}

// Approval is a pending approval as the API shows it: the queue's, with its
// arguments and renderings redacted as the audit log redacts them, and the
// client named.
type Approval struct {
	approvals.Pending
	Client string `json:"client"`
}

func (a *API) handleApprovals(w http.ResponseWriter, r *http.Request, _ *caller) {
	out := []Approval{}
	if a.g().Approvals != nil {
		for _, p := range a.g().Approvals.Pending() {
			p.Arguments = json.RawMessage(a.g().red.Redact(p.Arguments))
			p.Formatted, p.Operation = a.redactText(p.Formatted), a.redactText(p.Operation)
			out = append(out, Approval{Pending: p, Client: clientOf(p.Session)})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// redactText hides in text (a tool's rendering of its arguments) what the
// audit log's value patterns hide in arguments.
func (a *API) redactText(text string) string {
	if text == "" {
		return ""
	}
	b, _ := json.Marshal(text)
	var out string
	if json.Unmarshal([]byte(a.g().red.Redact(b)), &out) != nil {
		return ""
	}
	return out
}

type answerRequest struct {
	Answer string `json:"answer"`
	Reason string `json:"reason,omitempty"`
	Digest string `json:"digest"`
}

func (a *API) handleAnswer(w http.ResponseWriter, r *http.Request, _ *caller) {
	if a.g().Approvals == nil {
		writeError(w, http.StatusNotFound, "not_found", "no approvals are kept here")
		return
	}
	var in answerRequest
	if !readJSON(w, r, &in) {
		return
	}
	if in.Digest == "" {
		writeError(w, http.StatusBadRequest, "bad_digest", "digest: missing; give the approval's digest (GET /api/approvals)")
		return
	}
	err := a.g().Approvals.Answer(r.PathValue("id"), in.Digest, policy.Answer{Verdict: policy.Verdict(in.Answer), Reason: in.Reason})
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	case errors.Is(err, approvals.ErrUnknown), errors.Is(err, approvals.ErrEnded):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, approvals.ErrAnswered):
		writeError(w, http.StatusConflict, "answered", err.Error())
	case errors.Is(err, approvals.ErrDigest):
		writeError(w, http.StatusBadRequest, "bad_digest", err.Error())
	case errors.Is(err, approvals.ErrVerdict):
		writeError(w, http.StatusBadRequest, "bad_request", "answer: "+err.Error())
	default:
		a.internal(w, "the answer could not be given", err)
	}
}

// AuditRecord is a record of the audit log as the API shows it.
type AuditRecord struct {
	audit.Record
	// Arguments are the recorded (redacted) arguments as JSON, not as
	// the string the log keeps; a string when the log's text is not JSON.
	Arguments  json.RawMessage `json:"arguments"`
	DurationMS float64         `json:"duration_ms"`
}

func auditRecord(r audit.Record) AuditRecord {
	args := json.RawMessage(r.Arguments)
	if !json.Valid(args) {
		args, _ = json.Marshal(r.Arguments)
	}
	return AuditRecord{Record: r, Arguments: args, DurationMS: ms(r.Duration)}
}

func (a *API) store(w http.ResponseWriter) (*audit.Store, bool) {
	if a.g().Audit == nil {
		writeError(w, http.StatusNotFound, "not_found", "no audit log is kept ([audit] enable = false)")
		return nil, false
	}
	s, err := a.g().Audit()
	if err != nil {
		a.internal(w, "the audit log cannot be opened", err)
		return nil, false
	}
	return s, true
}

func (a *API) handleAudit(w http.ResponseWriter, r *http.Request, _ *caller) {
	q := r.URL.Query()
	f := audit.Query{Tool: q.Get("tool"), Outcome: q.Get("outcome"), Session: q.Get("session"), Text: q.Get("q")}
	for _, t := range []struct {
		name string
		to   *time.Time
	}{{"since", &f.Since}, {"until", &f.Until}} {
		if v := q.Get(t.name); v != "" {
			tm, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", t.name+": want an RFC 3339 time, as 2026-01-02T15:04:05Z")
				return
			}
			*t.to = tm
		}
	}
	for _, n := range []struct {
		name string
		to   *int64
	}{{"limit", nil}, {"before", &f.Before}} {
		v := q.Get(n.name)
		if v == "" {
			continue
		}
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i <= 0 {
			writeError(w, http.StatusBadRequest, "bad_request", n.name+": want a positive integer")
			return
		}
		if n.to != nil {
			*n.to = i
		} else {
			f.Limit = int(min(i, 1000))
		}
	}
	s, ok := a.store(w)
	if !ok {
		return
	}
	recs, next, err := s.Search(r.Context(), f)
	if err != nil {
		a.internal(w, "the audit log cannot be searched", err)
		return
	}
	out := make([]AuditRecord, len(recs))
	for i, rec := range recs {
		out[i] = auditRecord(rec)
	}
	resp := map[string]any{"records": out, "next": ""}
	if next > 0 {
		resp["next"] = strconv.FormatInt(next, 10)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (a *API) handleAuditRecord(w http.ResponseWriter, r *http.Request, _ *caller) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		writeError(w, http.StatusBadRequest, "bad_request", "id: want the record's number")
		return
	}
	s, ok := a.store(w)
	if !ok {
		return
	}
	recs, _, err := s.Search(r.Context(), audit.Query{ID: id, Limit: 1, Operations: true})
	if err != nil {
		a.internal(w, "the audit log cannot be read", err)
		return
	}
	if len(recs) == 0 {
		writeError(w, http.StatusNotFound, "not_found", "no audit record has the id "+strconv.FormatInt(id, 10))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"record": auditRecord(recs[0])})
}

func (a *API) handleGrants(w http.ResponseWriter, r *http.Request, _ *caller) {
	gs := []policy.Grant{}
	if a.g().Grants != nil {
		l, err := a.g().Grants.List(r.Context())
		if err != nil && len(l) == 0 {
			a.internal(w, "the grants cannot be read", err)
			return
		}
		gs = append(gs, l...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": gs})
}

func (a *API) handleRevoke(w http.ResponseWriter, r *http.Request, _ *caller) {
	if a.g().Grants == nil {
		writeError(w, http.StatusNotFound, "not_found", "no grants are kept")
		return
	}
	name, command := r.PathValue("tool"), r.URL.Query().Get("command")
	found, err := a.g().Grants.RevokeCommand(r.Context(), name, command)
	if err != nil {
		a.internal(w, "the grant could not be revoked", err)
		return
	}
	if !found {
		writeError(w, http.StatusNotFound, "not_found", "no grant of "+strconv.Quote(name)+" to revoke")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func (a *API) handleReload(w http.ResponseWriter, r *http.Request, _ *caller) {
	if a.g().Reload == nil {
		writeError(w, http.StatusNotImplemented, "not_implemented", "this server cannot reload")
		return
	}
	if err := a.g().Reload(r.Context()); err != nil {
		if errors.Is(err, ErrUntrusted) {
			writeError(w, http.StatusConflict, "untrusted", err.Error())
			return
		}
		writeError(w, http.StatusUnprocessableEntity, "config", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true})
}

func sessionOf(ctx context.Context) string {
	return lathe.SessionFrom(ctx)
}
