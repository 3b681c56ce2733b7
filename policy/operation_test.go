package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// hostTool stands in for package host: the tool "confined" checks each
// operation it is given with CheckOperation, records it with
// RecordOperation as host does, and does it (appends it to done) only when
// the policy allowed it. That it is done when nothing denies it is what
// makes a denial count.
type hostTool struct {
	mu   sync.Mutex
	done []string
	errs []error
}

type opsIn struct {
	Ops  [][2]string `json:"ops"`
	Wait bool        `json:"wait,omitempty"`
}

func (h *hostTool) tool() tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "confined", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in opsIn) (string, error) {
			var out []string
			defer func() {
				// The tool itself waits out its deadline, as one that
				// goes on after a denial would.
				if in.Wait {
					<-ctx.Done()
				}
			}()
			for _, o := range in.Ops {
				op := policy.OperationRequest{Kind: o[0], Subject: o[1]}
				d, err := policy.CheckOperation(ctx, op)
				rec := lathe.Operation{Kind: op.Kind, Subject: op.Subject, Approval: string(d.Approval), By: d.By, Reason: d.Reason}
				if err != nil {
					rec.Error = err.Error()
				}
				lathe.RecordOperation(ctx, rec)
				h.mu.Lock()
				if err != nil {
					h.errs = append(h.errs, err)
				} else {
					h.done = append(h.done, op.Kind+" "+op.Subject)
				}
				h.mu.Unlock()
				if err != nil {
					out = append(out, "denied: "+err.Error())
					if ctx.Err() != nil {
						return "", ctx.Err()
					}
					continue
				}
				out = append(out, "done "+op.Kind+" "+op.Subject)
			}
			return strings.Join(out, "\n"), nil
		}))
}

func (h *hostTool) snapshot() ([]string, []error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.done...), append([]error(nil), h.errs...)
}

func opsArgs(ops ...string) json.RawMessage {
	var in opsIn
	for i := 0; i+1 < len(ops); i += 2 {
		in.Ops = append(in.Ops, [2]string{ops[i], ops[i+1]})
	}
	b, _ := json.Marshal(in)
	return b
}

func hostEngine(t *testing.T, p *policy.Policy, opts policy.Options, timeout time.Duration) (*lathe.Engine, *hostTool) {
	t.Helper()
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(p, opts)}})
	t.Cleanup(func() { e.Close() })
	h := &hostTool{}
	tl := h.tool()
	tl.Timeout = timeout
	if err := e.Register(tl); err != nil {
		t.Fatal(err)
	}
	return e, h
}

func TestOperationRulesAndCallRulesDoNotMix(t *testing.T) {
	def := &tool.Definition{Name: "confined", Annotations: tool.Annotations{ReadOnlyHint: true}}
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "*", Operation: "*", Approval: policy.Deny, Source: "lathe.toml:3"},
	}}
	if d := p.Decide(def, map[string]any{}); d.Approval != policy.Allow || d.By != "default" {
		t.Errorf("a deny rule about operations decided a call: %+v", d)
	}
	p = &policy.Policy{Rules: []policy.Rule{{Tool: "*", Approval: policy.Deny, Source: "lathe.toml:3"}}}
	if d := p.DecideOperation(def, policy.OperationRequest{Kind: "read", Subject: "a.txt"}); d.Approval != policy.Allow || d.Rule != nil {
		t.Errorf("a deny rule about calls decided an operation: %+v", d)
	}
}

func TestDecideOperation(t *testing.T) {
	def := &tool.Definition{Name: "confined"}
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "confined", Operation: "fetch", Args: "https://api.example.com/*", Approval: policy.Allow, Source: "lathe.toml:1"},
		{Tool: "*", Operation: "fetch", Args: "*/admin*", Approval: policy.Deny, Source: "lathe.toml:2"},
		{Tool: "*", Operation: "*", Approval: policy.Ask, Source: "lathe.toml:3"},
		{Tool: "confined", Operation: "read", Args: "src/*", Approval: policy.Allow, Source: "lathe.toml:4"},
		{Tool: "confined", Operation: "read", Args: "src/secret*", Approval: policy.Ask, Source: "lathe.toml:5"},
		{Tool: "*", Operation: "run", Args: "rm *", Approval: policy.Deny, Source: "lathe.toml:6"},
		{Tool: "other", Operation: "env", Approval: policy.Deny, Source: "lathe.toml:7"},
	}}
	for _, c := range []struct {
		kind, subject string
		want          policy.Approval
		source        string
	}{
		{"fetch", "https://api.example.com/v1", policy.Allow, "lathe.toml:1"},
		// The deny rule wins over the more specific allow.
		{"fetch", "https://api.example.com/admin/users", policy.Deny, "lathe.toml:2"},
		{"fetch", "https://elsewhere.example/", policy.Ask, "lathe.toml:3"},
		{"read", "src/main.go", policy.Allow, "lathe.toml:4"},
		{"read", "src/secrets.txt", policy.Ask, "lathe.toml:5"},
		{"read", "README", policy.Ask, "lathe.toml:3"},
		{"run", "git status", policy.Ask, "lathe.toml:3"},
		{"run", "sh -c 'rm -rf ~'", policy.Deny, "lathe.toml:6"},
		{"run", "sudo rm -rf /", policy.Deny, "lathe.toml:6"},
		// A rule for another tool says nothing of this one.
		{"env", "HOME", policy.Ask, "lathe.toml:3"},
	} {
		d := p.DecideOperation(def, policy.OperationRequest{Kind: c.kind, Subject: c.subject})
		if d.Approval != c.want || d.Rule == nil || d.Rule.Source != c.source {
			t.Errorf("%s %s: %s by %v, want %s by %s", c.kind, c.subject, d.Approval, d.Rule, c.want, c.source)
		}
	}
	none := &policy.Policy{Rules: []policy.Rule{{Tool: "confined", Operation: "write", Approval: policy.Deny}}}
	if d := none.DecideOperation(def, policy.OperationRequest{Kind: "read", Subject: "x"}); d.Approval != policy.Allow {
		t.Errorf("no rule names read, yet: %+v", d)
	}
}

func TestOperationRuleValidation(t *testing.T) {
	bad := policy.Rule{Tool: "*", Operation: "exec", Approval: policy.Deny}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "fetch") || !strings.Contains(err.Error(), `"exec"`) {
		t.Errorf("unknown operation: %v, want an error naming the valid ones", err)
	}
	if err := (policy.Rule{Tool: "*", Operation: "read", Arg: "path", Approval: policy.Deny}).Validate(); err == nil {
		t.Error("arg with an operation was accepted")
	}
	if err := (policy.Rule{Tool: "*", Operation: "*", Approval: policy.Deny}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestDenyRuleStopsAnOperation(t *testing.T) {
	args := opsArgs("fetch", "https://api.example.com/admin", "read", "a.txt")
	// Without the rule the operations happen: the denial below is the rule's.
	e, h := hostEngine(t, &policy.Policy{}, policy.Options{}, 0)
	if out := e.Call(context.Background(), &tool.Call{Name: "confined", Arguments: args}); out.Result.IsError {
		t.Fatalf("without rules: %s", out.Result.Text())
	}
	if done, _ := h.snapshot(); len(done) != 2 {
		t.Fatalf("without rules, done = %v", done)
	}
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "confined", Operation: "fetch", Args: "https://api.example.com/*", Approval: policy.Allow, Source: "lathe.toml:4"},
		{Tool: "*", Operation: "fetch", Args: "*admin*", Approval: policy.Deny, Source: "lathe.toml:9"},
	}}
	e, h = hostEngine(t, p, policy.Options{}, 0)
	if out := e.Call(context.Background(), &tool.Call{Name: "confined", Arguments: args}); out.Result.IsError {
		t.Fatalf("the call itself was refused: %s", out.Result.Text())
	}
	done, errs := h.snapshot()
	if strings.Join(done, ",") != "read a.txt" || len(errs) != 1 {
		t.Fatalf("done = %v, errors = %v; want the fetch denied and the read done", done, errs)
	}
	var te *tool.Error
	if !errors.As(errs[0], &te) || te.Kind != tool.KindDenied || !strings.Contains(te.Message, "lathe.toml:9") {
		t.Errorf("denial = %#v, want a denied tool.Error naming lathe.toml:9", errs[0])
	}
}

func TestOperationOutsideThePolicyIsAllowed(t *testing.T) {
	d, err := policy.CheckOperation(context.Background(), policy.OperationRequest{Kind: "write", Subject: "x"})
	if err != nil || d.Approval != policy.Allow {
		t.Errorf("outside a call: %+v %v", d, err)
	}
}

// An ask nobody answers holds the operation no longer than the call may
// run, and the call ends as a timeout.
func TestOperationAskNobodyAnswersEndsWithTheDeadline(t *testing.T) {
	asked := make(chan *policy.Request, 1)
	approver := policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		asked <- r
		<-ctx.Done()
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "write", Approval: policy.Ask, Source: "lathe.toml:2"}}}
	e, h := hostEngine(t, p, policy.Options{Approver: approver}, time.Second)
	rec, stop := subscribe(e)
	defer stop()
	start := time.Now()
	args := json.RawMessage(`{"ops":[["write","out/a.txt"]],"wait":true}`)
	out := e.Call(context.Background(), &tool.Call{Name: "confined", Arguments: args})
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the call took %s; the unanswered ask outlived the deadline", el)
	}
	if out.Result.ErrorKind != tool.KindTimeout {
		t.Errorf("outcome = %s %s, want a timeout", out.Result.ErrorKind, out.Result.Text())
	}
	select {
	case r := <-asked:
		if r.Operation == nil || r.Operation.Kind != "write" || r.Operation.Subject != "out/a.txt" || r.Arguments != "write out/a.txt" {
			t.Errorf("the approver was asked %+v, want the write", r)
		}
	default:
		t.Fatal("the approver was never asked")
	}
	done, errs := h.snapshot()
	if len(done) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "before the call's deadline") {
		t.Errorf("done = %v, errors = %v; want the write denied for want of an answer", done, errs)
	}
	evs := rec.wait(t, func(evs []lathe.Event) bool { return hasKind(evs, lathe.EventCallFinished) })
	var sawAsked, sawAnswered bool
	for _, ev := range evs {
		if ev.Operation == nil || ev.Approval == nil {
			continue
		}
		switch ev.Kind {
		case lathe.EventApprovalAsked:
			sawAsked = ev.Approval.Rule == "lathe.toml:2" && ev.Operation.Subject == "out/a.txt"
		case lathe.EventApprovalAnswered:
			sawAnswered = ev.Approval.Answer == "deny" && ev.Approval.By == "approver"
		}
	}
	if !sawAsked || !sawAnswered {
		t.Errorf("events = %v, want the operation's approval asked and answered deny", evs)
	}
}

// "Allow always" for an operation lasts the session, for that subject, and
// is never stored as a grant.
func TestOperationApprovalLastsTheSessionOnly(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	approver := policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		mu.Lock()
		asked = append(asked, lathe.SessionFrom(ctx)+":"+r.Arguments)
		mu.Unlock()
		return policy.Answer{Verdict: policy.AllowAlways}, nil
	})
	grants := &memGrants{m: map[string]bool{}}
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "fetch", Approval: policy.Ask}}}
	e, h := hostEngine(t, p, policy.Options{Approver: approver, Grants: grants}, 0)
	s1 := lathe.WithSession(context.Background(), "s1")
	s2 := lathe.WithSession(context.Background(), "s2")
	for _, c := range []struct {
		ctx context.Context
		url string
	}{{s1, "https://a.example/"}, {s1, "https://a.example/"}, {s1, "https://b.example/"}, {s2, "https://a.example/"}} {
		if out := e.Call(c.ctx, &tool.Call{Name: "confined", Arguments: opsArgs("fetch", c.url)}); out.Result.IsError {
			t.Fatalf("%s: %s", c.url, out.Result.Text())
		}
	}
	mu.Lock()
	got := strings.Join(asked, ",")
	mu.Unlock()
	if want := "s1:fetch https://a.example/,s1:fetch https://b.example/,s2:fetch https://a.example/"; got != want {
		t.Errorf("asked %s, want %s", got, want)
	}
	if done, _ := h.snapshot(); len(done) != 4 {
		t.Errorf("done = %v, want all four fetches", done)
	}
	if len(grants.m) != 0 {
		t.Errorf("an operation's approval was stored as a grant: %v", grants.m)
	}
}

// A call typed by a person approves the call, not what the tool then asks
// its host for.
func TestPersonDoesNotApproveOperations(t *testing.T) {
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "remove", Approval: policy.Ask}}}
	e, h := hostEngine(t, p, policy.Options{}, 0)
	ctx := policy.WithPerson(context.Background(), "person")
	e.Call(ctx, &tool.Call{Name: "confined", Arguments: opsArgs("remove", "important.txt")})
	done, errs := h.snapshot()
	if len(done) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "no one to ask") {
		t.Errorf("done = %v, errors = %v; want the remove denied with no one to ask", done, errs)
	}
}

// A goroutine that outlives its call cannot use the call's context to
// have the policy (or a person) allow anything.
func TestOperationAfterTheCallEndedIsDenied(t *testing.T) {
	kept := make(chan context.Context, 1)
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{policy.Middleware(&policy.Policy{}, policy.Options{})}})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "leaky", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ struct{}) (string, error) {
			if _, err := policy.CheckOperation(ctx, policy.OperationRequest{Kind: "read", Subject: "a"}); err != nil {
				return "", err
			}
			kept <- ctx
			return "ok", nil
		})))
	if out := e.Call(context.Background(), &tool.Call{Name: "leaky", Arguments: []byte(`{}`)}); out.Result.IsError {
		t.Fatalf("during the call: %s", out.Result.Text())
	}
	var old context.Context
	select {
	case old = <-kept:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool never handed its context over")
	}
	_, err := policy.CheckOperation(old, policy.OperationRequest{Kind: "read", Subject: "a"})
	if !errors.Is(err, tool.ErrDenied) || !strings.Contains(err.Error(), "ended") {
		t.Errorf("after the call: %v, want denied because it ended", err)
	}
}

type evRecorder struct {
	mu   sync.Mutex
	evs  []lathe.Event
	more chan struct{}
}

func subscribe(e *lathe.Engine) (*evRecorder, func()) {
	r := &evRecorder{more: make(chan struct{}, 1)}
	stop := e.Subscribe(func(ev lathe.Event) {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
		select {
		case r.more <- struct{}{}:
		default:
		}
	})
	return r, stop
}

func (r *evRecorder) wait(t *testing.T, ok func([]lathe.Event) bool) []lathe.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		evs := append([]lathe.Event(nil), r.evs...)
		r.mu.Unlock()
		if ok(evs) {
			return evs
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("events never came; got %v", evs)
		}
	}
}

func hasKind(evs []lathe.Event, k lathe.EventKind) bool {
	for _, ev := range evs {
		if ev.Kind == k {
			return true
		}
	}
	return false
}

// Cancelling the call ends the wait for an operation's approval at once.
func TestOperationAskEndsWithCancellation(t *testing.T) {
	asked := make(chan struct{})
	approver := policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		close(asked)
		<-ctx.Done()
		return policy.Answer{Verdict: policy.AllowOnce}, nil
	})
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "run", Approval: policy.Ask}}}
	e, h := hostEngine(t, p, policy.Options{Approver: approver}, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-asked:
		case <-time.After(10 * time.Second):
		}
		cancel()
	}()
	start := time.Now()
	out := e.Call(ctx, &tool.Call{Name: "confined", Arguments: opsArgs("run", "make deploy")})
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("the call took %s; the ask outlived its cancellation", el)
	}
	if out.Result.ErrorKind != tool.KindCancelled {
		t.Errorf("outcome %s %s, want cancelled", out.Result.ErrorKind, out.Result.Text())
	}
	// The engine returns at the cancellation; the tool hears its denial
	// on its own goroutine just after.
	deadline := time.Now().Add(10 * time.Second)
	done, errs := h.snapshot()
	for len(done)+len(errs) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
		done, errs = h.snapshot()
	}
	if len(done) != 0 || len(errs) != 1 || !strings.Contains(errs[0].Error(), "cancelled") {
		t.Errorf("done = %v, errors = %v; want the run denied by the cancellation", done, errs)
	}
}
