package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// confinedIn asks the tool "confined" for operations, as a confined tool
// asks package host: each is checked by the policy and recorded, as host
// does, then done when allowed.
type confinedIn struct {
	Ops  [][2]string `json:"ops,omitempty"`
	N    int         `json:"n,omitempty"`
	Wait bool        `json:"wait,omitempty"`
}

func opsEngine(t *testing.T, s *audit.Store, p *policy.Policy, opts policy.Options, timeout time.Duration) *lathe.Engine {
	t.Helper()
	r, _ := audit.NewRedactor(nil, nil)
	e := lathe.New(lathe.Options{
		Outer:      []lathe.Middleware{audit.Middleware(s, r)},
		Middleware: []lathe.Middleware{policy.Middleware(p, opts)},
	})
	t.Cleanup(func() { e.Close() })
	confined := builtin.Must(builtin.Func(tool.Definition{Name: "confined", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in confinedIn) (string, error) {
			for i := range in.N {
				in.Ops = append(in.Ops, [2]string{"read", fmt.Sprintf("src/f%04d.go", i)})
			}
			for _, o := range in.Ops {
				start := time.Now()
				d, err := policy.CheckOperation(ctx, policy.OperationRequest{Kind: o[0], Subject: o[1]})
				rec := lathe.Operation{Kind: o[0], Subject: o[1], Approval: string(d.Approval), By: d.By,
					Reason: d.Reason, Started: start}
				if err != nil {
					rec.Error = err.Error()
				} else {
					rec.Bytes = 10
				}
				rec.Duration = time.Since(start)
				lathe.RecordOperation(ctx, rec)
			}
			if in.Wait {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "ok", nil
		}))
	confined.Timeout = timeout
	if err := e.Register(confined); err != nil {
		t.Fatal(err)
	}
	return e
}

func lastRecord(t *testing.T, s *audit.Store) audit.Record {
	t.Helper()
	recs, err := s.List(context.Background(), audit.Filter{Limit: 1, Operations: true})
	if err != nil || len(recs) != 1 {
		t.Fatalf("list: %v %v", recs, err)
	}
	return recs[0]
}

// Nothing is lost: a call with a thousand operations has a thousand rows,
// in order, with its record.
func TestOperationsAreWrittenWithTheirCall(t *testing.T) {
	s, _ := open(t)
	e := opsEngine(t, s, &policy.Policy{}, policy.Options{}, 0)
	out := e.Call(context.Background(), &tool.Call{Name: "confined", Arguments: json.RawMessage(`{"n":1000}`)})
	if out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	r := lastRecord(t, s)
	if len(r.Operations) != 1000 {
		t.Fatalf("%d operations written, want 1000", len(r.Operations))
	}
	for i, op := range r.Operations {
		if want := fmt.Sprintf("src/f%04d.go", i); op.Subject != want || op.Kind != "read" || op.Approval != "allow" || op.Bytes != 10 {
			t.Fatalf("operation %d = %+v, want a read of %s", i, op, want)
		}
	}
	if r.Operations[0].Time.IsZero() {
		t.Error("an operation's time was lost")
	}
	// Without the flag, the list does not read them.
	recs, err := s.List(context.Background(), audit.Filter{Limit: 1})
	if err != nil || len(recs) != 1 || recs[0].Operations != nil {
		t.Errorf("list without operations: %+v %v", recs, err)
	}
}

func TestOperationsBeyondTheBoundAreCounted(t *testing.T) {
	s, _ := open(t)
	e := opsEngine(t, s, &policy.Policy{}, policy.Options{}, 0)
	out := e.Call(context.Background(), &tool.Call{Name: "confined",
		Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, lathe.MaxOperations+3))})
	if out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	r := lastRecord(t, s)
	if len(r.Operations) != lathe.MaxOperations || r.OperationsDropped != 3 {
		t.Errorf("%d operations and %d dropped, want %d and 3", len(r.Operations), r.OperationsDropped, lathe.MaxOperations)
	}
}

// The operations of a call that was cancelled are written all the same.
func TestOperationsOfACancelledCallAreWritten(t *testing.T) {
	s, _ := open(t)
	e := opsEngine(t, s, &policy.Policy{}, policy.Options{}, 0)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel()
	}()
	out := e.Call(ctx, &tool.Call{Name: "confined", Arguments: json.RawMessage(`{"n":5,"wait":true}`)})
	if out.Result.ErrorKind != tool.KindCancelled {
		t.Fatalf("outcome %s, want cancelled", out.Result.ErrorKind)
	}
	r := lastRecord(t, s)
	if r.Outcome != string(tool.KindCancelled) || len(r.Operations) != 5 {
		t.Errorf("record: outcome %s with %d operations, want cancelled with 5", r.Outcome, len(r.Operations))
	}
}

// An ask nobody answers ends with the call's deadline, and the log says
// why the operation did not happen.
func TestUnansweredOperationIsLogged(t *testing.T) {
	s, _ := open(t)
	approver := policy.ApproverFunc(func(ctx context.Context, r *policy.Request) (policy.Answer, error) {
		<-ctx.Done()
		return policy.Answer{}, ctx.Err()
	})
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "*", Operation: "fetch", Approval: policy.Ask, Source: "lathe.toml:4"}}}
	e := opsEngine(t, s, p, policy.Options{Approver: approver}, time.Second)
	out := e.Call(context.Background(), &tool.Call{Name: "confined",
		Arguments: json.RawMessage(`{"ops":[["fetch","https://api.example.com/"]],"wait":true}`)})
	if out.Result.ErrorKind != tool.KindTimeout {
		t.Fatalf("outcome %s, want timeout", out.Result.ErrorKind)
	}
	r := lastRecord(t, s)
	if r.Outcome != string(tool.KindTimeout) || len(r.Operations) != 1 {
		t.Fatalf("record: %+v", r)
	}
	op := r.Operations[0]
	if op.Approval != "deny" || op.DecidedBy != "approver" || !strings.Contains(op.Reason, "nobody answered") ||
		!strings.Contains(op.Error, "nobody answered") {
		t.Errorf("operation = %+v, want denied for want of an answer", op)
	}
}

func TestOperationSubjectsAreRedacted(t *testing.T) {
	s, path := open(t)
	e := opsEngine(t, s, &policy.Policy{}, policy.Options{}, 0)
	// The secrets come from the tool, not from the call's arguments, as
	// they would from a tool that reads a token and puts it in a URL.
	secretive := builtin.Must(builtin.Func(tool.Definition{Name: "secretive", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ struct{}) (string, error) {
			for _, op := range []lathe.Operation{
				{Kind: "fetch", Subject: "https://alice:pa55word@api.example.com/v1/repos?access_token=tok123456&page=2",
					Error: "GET https://api.example.com/v1/repos?access_token=tok123456: refused"},
				{Kind: "run", Subject: "git push https://x:ghp_abcdefghijklmnopqrstuvwxyz0123@github.example/r.git"},
				{Kind: "env", Subject: "API_TOKEN", Error: "value correct-horse-battery is not UTF-8"},
			} {
				lathe.RecordOperation(ctx, op)
			}
			return "ok", nil
		}))
	if err := e.Register(secretive); err != nil {
		t.Fatal(err)
	}
	if out := e.Call(context.Background(), &tool.Call{Name: "secretive", Arguments: json.RawMessage(`{}`)}); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The whole file, not only what List shows: a secret must be nowhere.
	raw := readAll(t, path)
	for _, secret := range []string{"pa55word", "tok123456", "ghp_abcdefghijklmnopqrstuvwxyz0123", "alice", "correct-horse-battery"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	s2, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r := lastRecord(t, s2)
	if len(r.Operations) != 3 {
		t.Fatalf("operations: %+v", r.Operations)
	}
	for i, want := range []string{"api.example.com/v1/repos?access_token=", "git push https://", "API_TOKEN"} {
		if !strings.Contains(r.Operations[i].Subject, want) {
			t.Errorf("operation %d's subject %q lost %q", i, r.Operations[i].Subject, want)
		}
	}
}

// readAll reads the database and its write-ahead log.
func readAll(t *testing.T, path string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{path, path + "-wal"} {
		data, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// A log written before operations were recorded gets their table and
// column when opened, and keeps its calls.
func TestOldLogIsMigrated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(`CREATE TABLE calls (
	id INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL DEFAULT '', time_ns INTEGER NOT NULL,
	tool TEXT NOT NULL, arguments TEXT NOT NULL DEFAULT '', decision TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL DEFAULT '', status TEXT NOT NULL,
	outcome TEXT NOT NULL DEFAULT '', duration_ns INTEGER NOT NULL DEFAULT 0, args_bytes INTEGER NOT NULL DEFAULT 0,
	result_bytes INTEGER NOT NULL DEFAULT 0, pid INTEGER NOT NULL DEFAULT 0);
	INSERT INTO calls (time_ns, tool, status, outcome) VALUES (1, 'old', 'done', 'ok');`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s, err := audit.Open(path)
	if err != nil {
		t.Fatalf("opening an old log: %v", err)
	}
	e := opsEngine(t, s, &policy.Policy{}, policy.Options{}, 0)
	if out := e.Call(context.Background(), &tool.Call{Name: "confined", Arguments: json.RawMessage(`{"n":2}`)}); out.Result.IsError {
		t.Fatal(out.Result.Text())
	}
	recs, err := s.List(context.Background(), audit.Filter{Operations: true})
	if err != nil || len(recs) != 2 || recs[0].Tool != "old" || len(recs[1].Operations) != 2 {
		t.Fatalf("after migration: %+v %v", recs, err)
	}
	e.Close()
	s.Close()
	// Opening it again finds it migrated and changes nothing.
	s, err = audit.Open(path)
	if err != nil {
		t.Fatalf("opening a migrated log: %v", err)
	}
	s.Close()
}
