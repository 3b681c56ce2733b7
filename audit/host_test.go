package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// The whole path of a host request, through lathe's own host: the tool's
// permissions, then the policy's rules about operations, then the audit
// log, which records every request with its call, allowed or denied.
func TestHostRequestsThroughPolicyAndAudit(t *testing.T) {
	ws := t.TempDir()
	for name, data := range map[string]string{"src/a.txt": "alpha", "src/secret.txt": "s3cr3t", "notes.txt": "private"} {
		if err := os.MkdirAll(filepath.Join(ws, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.New(host.Config{Tool: "reader", Workspace: ws, Perms: host.Permissions{Read: []string{"src/"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := map[string]string{}
	reader := builtin.Must(builtin.Func(tool.Definition{Name: "reader", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in struct {
			Paths []string `json:"paths"`
		}) (string, error) {
			s := h.Begin(ctx)
			defer s.End()
			for _, p := range in.Paths {
				params, _ := json.Marshal(host.ReadParams{Path: p})
				res, err := s.Do(ctx, host.MethodRead, params)
				if err != nil {
					got[p] = "error: " + err.Error()
					continue
				}
				var r host.ReadResult
				json.Unmarshal(res, &r)
				got[p] = string(r.Data)
			}
			return "ok", nil
		}))
	s, _ := open(t)
	r, _ := audit.NewRedactor(nil, nil)
	p := &policy.Policy{Rules: []policy.Rule{
		{Tool: "reader", Operation: "read", Args: "src/*", Approval: policy.Allow, Source: "lathe.toml:1"},
		{Tool: "*", Operation: "read", Args: "*secret*", Approval: policy.Deny, Source: "lathe.toml:6"},
	}}
	e := lathe.New(lathe.Options{
		Outer:      []lathe.Middleware{audit.Middleware(s, r)},
		Middleware: []lathe.Middleware{policy.Middleware(p, policy.Options{})},
	})
	defer e.Close()
	if err := e.Register(reader); err != nil {
		t.Fatal(err)
	}
	out := e.Call(context.Background(), &tool.Call{Name: "reader",
		Arguments: json.RawMessage(`{"paths":["src/a.txt","src/secret.txt","notes.txt"]}`)})
	if out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if got["src/a.txt"] != "alpha" {
		t.Errorf("the allowed read gave %q", got["src/a.txt"])
	}
	if !strings.Contains(got["src/secret.txt"], "lathe.toml:6") || strings.Contains(got["src/secret.txt"], "s3cr3t") {
		t.Errorf("the read the deny rule names gave %q, want a denial naming lathe.toml:6", got["src/secret.txt"])
	}
	if !strings.Contains(got["notes.txt"], "outside the permissions") {
		t.Errorf("the read outside the permissions gave %q", got["notes.txt"])
	}
	rec := lastRecord(t, s)
	if len(rec.Operations) != 3 {
		t.Fatalf("the call's record has %d operations, want 3: %+v", len(rec.Operations), rec.Operations)
	}
	want := []struct{ subject, approval, by string }{
		{"src/a.txt", "allow", "rule"}, {"src/secret.txt", "deny", "rule"}, {"notes.txt", "deny", ""},
	}
	for i, w := range want {
		op := rec.Operations[i]
		if op.Kind != "read" || !strings.Contains(op.Subject, w.subject) || op.Approval != w.approval || (w.by != "" && op.DecidedBy != w.by) {
			t.Errorf("operation %d = %+v, want a read of %s, %s by %s", i, op, w.subject, w.approval, w.by)
		}
	}
}
