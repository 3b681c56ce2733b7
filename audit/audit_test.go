package audit_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestMain doubles as a process that crashes in the middle of a call, when
// AUDIT_CRASH_DB names a database.
func TestMain(m *testing.M) {
	if db := os.Getenv("AUDIT_CRASH_DB"); db != "" {
		crash(db)
		return
	}
	if db := os.Getenv(killEnv); db != "" {
		killed(db)
		return
	}
	if db := os.Getenv("AUDIT_WRITER_DB"); db != "" {
		n, _ := strconv.Atoi(os.Getenv("AUDIT_WRITER_CALLS"))
		writer(db, n)
		return
	}
	goleak.VerifyTestMain(m)
}

func crash(path string) {
	s, err := audit.Open(path)
	if err != nil {
		os.Exit(2)
	}
	e := newEngine(s, &policy.Policy{})
	e.Call(context.Background(), &tool.Call{Name: "die", Arguments: json.RawMessage(`{"path":"x"}`)})
	os.Exit(2) // not reached: die exits
}

type in struct {
	Path  string `json:"path"`
	Token string `json:"token,omitempty"`
}

// newEngine returns an engine that records into s, with the grants of
// grants, if given.
func newEngine(s *audit.Store, p *policy.Policy, grants ...policy.GrantStore) *lathe.Engine {
	r, _ := audit.NewRedactor(nil, []string{`hunter\d`})
	var opts policy.Options
	if len(grants) > 0 {
		opts.Grants = grants[0]
	}
	e := lathe.New(lathe.Options{
		Outer:      []lathe.Middleware{audit.Middleware(s, r)},
		Middleware: []lathe.Middleware{policy.Middleware(p, opts)},
	})
	e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "look", Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(ctx context.Context, in in) (string, error) { return "looked at " + in.Path, nil })),
		builtin.Must(builtin.Func(tool.Definition{Name: "wipe"},
			func(ctx context.Context, in in) (string, error) { return "wiped", nil })),
		builtin.Must(builtin.Func(tool.Definition{Name: "die", Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(ctx context.Context, in in) (string, error) { os.Exit(3); return "", nil })),
	)
	return e
}

func open(t *testing.T) (*audit.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".lathe", "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestRecordsEveryCall(t *testing.T) {
	s, _ := open(t)
	e := newEngine(s, &policy.Policy{})
	defer e.Close()
	ctx := context.Background()
	e.Call(ctx, &tool.Call{ID: "1", Name: "look", Arguments: json.RawMessage(`{"path":"a.txt","token":"abc"}`)})
	e.Call(ctx, &tool.Call{ID: "2", Name: "wipe", Arguments: json.RawMessage(`{"path":"pw hunter2"}`)})
	e.Call(ctx, &tool.Call{ID: "3", Name: "nosuch", Arguments: json.RawMessage(`{}`)})
	e.Call(ctx, &tool.Call{ID: "4", Name: "look", Arguments: json.RawMessage(`{"path":3}`)})

	recs, err := s.List(ctx, audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4: %+v", len(recs), recs)
	}
	r := recs[0]
	if r.Tool != "look" || r.Decision != "allow" || r.DecidedBy != "default" || r.Outcome != "ok" ||
		r.Status != audit.StatusDone || r.ResultBytes != len("looked at a.txt") || r.ArgsBytes == 0 || r.CallID != "1" {
		t.Errorf("record 1: %+v", r)
	}
	if strings.Contains(r.Arguments, "abc") || !strings.Contains(r.Arguments, audit.Redacted) {
		t.Errorf("token not redacted: %s", r.Arguments)
	}
	if r := recs[1]; r.Decision != "deny" || r.DecidedBy != "nobody" || r.Outcome != "denied" ||
		strings.Contains(r.Arguments, "hunter2") {
		t.Errorf("record 2: %+v", r)
	}
	if r := recs[2]; r.Outcome != "unknown_tool" || r.Decision != "" {
		t.Errorf("record 3: %+v", r)
	}
	if r := recs[3]; r.Outcome != "invalid_arguments" {
		t.Errorf("record 4: %+v", r)
	}

	for _, c := range []struct {
		f    audit.Filter
		want int
	}{
		{audit.Filter{Tool: "lo*"}, 2},
		{audit.Filter{Decision: "deny"}, 1},
		{audit.Filter{Outcome: "ok"}, 1},
		{audit.Filter{Limit: 2}, 2},
		{audit.Filter{Since: time.Now().Add(time.Hour)}, 0},
	} {
		got, err := s.List(ctx, c.f)
		if err != nil || len(got) != c.want {
			t.Errorf("List(%+v) = %d records, %v; want %d", c.f, len(got), err, c.want)
		}
	}
}

func TestCrashLeavesIncompleteRecord(t *testing.T) {
	s, path := open(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AUDIT_CRASH_DB="+path)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("crashing process: %v", err)
	}
	recs, err := s.List(context.Background(), audit.Filter{Outcome: "incomplete"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Tool != "die" || !recs[0].Incomplete || recs[0].PID == os.Getpid() {
		t.Fatalf("incomplete records: %+v", recs)
	}
}

func TestConcurrentWriters(t *testing.T) {
	s, path := open(t)
	s2, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Go(func() {
			e := newEngine(st, &policy.Policy{})
			defer e.Close()
			for range 10 {
				e.Call(context.Background(), &tool.Call{Name: "look", Arguments: json.RawMessage(`{"path":"x"}`)})
			}
		})
	}
	wg.Wait()
	recs, err := s.List(context.Background(), audit.Filter{Limit: -1})
	if err != nil || len(recs) != 80 {
		t.Fatalf("%d records, %v; want 80", len(recs), err)
	}
}

func TestRedact(t *testing.T) {
	r, err := audit.NewRedactor([]string{`^x-custom$`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"password":"p","path":"a"}`, `{"password":"[redacted]","path":"a"}`},
		{`{"nested":{"api_key":"k"},"x-custom":"v"}`, `{"nested":{"api_key":"[redacted]"},"x-custom":"[redacted]"}`},
		{`{"command":"curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'"}`, `{"command":"curl -H 'Authorization: [redacted]'"}`},
		{`{"command":"export KEY=sk-abcdefghijklmnopqrstuv"}`, `{"command":"export KEY=[redacted]"}`},
		{`{"url":"https://x/?token=abc&q=1"}`, `{"url":"https://x/?[redacted]\u0026q=1"}`},
		{`not json password=abc`, `not json [redacted]`},
	} {
		if got := r.Redact(json.RawMessage(c.in)); got != c.want {
			t.Errorf("Redact(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := audit.NewRedactor(nil, []string{"("}); err == nil {
		t.Error("a bad pattern compiled")
	}
}

// TestOpenOddPath: the database is where its path says, whatever the path
// holds. The driver takes a "file:" address, in which "#" would end the
// path and "?" start options: a workspace named "a#b" once had its log
// written to a file "a" beside it, and one named "x?_pragma=…" could set
// the database's options.
func TestOpenOddPath(t *testing.T) {
	for _, name := range []string{"a#b", "a?_pragma=query_only(1)", "a%41b", "a b"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "lathe.db")
		s, err := audit.Open(path)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		ctx := context.Background()
		r := &audit.Record{CallID: "c1", Tool: "t", Time: time.Now()}
		id, err := s.Start(ctx, r)
		if err == nil {
			err = s.Finish(ctx, id, r)
		}
		if err != nil {
			t.Errorf("%q: a write: %v", name, err)
		}
		s.Close()
		if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
			t.Errorf("%q: no database at %s: %v", name, path, err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
			t.Errorf("%q: files beside the directory: %v", name, entries)
		}
	}
}
