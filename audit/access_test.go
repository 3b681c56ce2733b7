package audit_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/audit"
)

// TestAccessRecorded: a resource read and a prompt get are records of the
// log, with their kind, session and server; a secret in a URI's query or
// a prompt's arguments is redacted; a denied one says so; a log written
// before these columns existed gets them and keeps its calls.
func TestAccessRecorded(t *testing.T) {
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
	defer s.Close()
	ctx := context.Background()
	end, err := s.StartAccess(ctx, &audit.Access{Kind: audit.KindResourceRead, Session: "s1", Server: "ev",
		Name: "https://example.com/doc?token=hunter2&x=1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := end(audit.AccessEnd{Outcome: "ok", Bytes: 42}); err != nil {
		t.Fatal(err)
	}
	end, err = s.StartAccess(ctx, &audit.Access{Kind: audit.KindPromptGet, Session: "s2", Server: "ev",
		Name: "ev__greet", Arguments: map[string]string{"name": "bob", "api_key": "sk-secretsecretsecret"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := end(audit.AccessEnd{Outcome: "tool_error"}); err != nil {
		t.Fatal(err)
	}
	end, err = s.StartAccess(ctx, &audit.Access{Kind: audit.KindResourceRead, Session: "s1", Name: "test://both"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := end(audit.AccessEnd{Denied: true, Reason: "several servers list it"}); err != nil {
		t.Fatal(err)
	}

	recs, err := s.List(ctx, audit.Filter{})
	if err != nil || len(recs) != 4 {
		t.Fatalf("records: %+v %v", recs, err)
	}
	if recs[0].Tool != "old" || recs[0].Kind != "" {
		t.Errorf("the old call: %+v", recs[0])
	}
	r := recs[1]
	if r.Kind != audit.KindResourceRead || r.Session != "s1" || r.Server != "ev" || r.Outcome != "ok" ||
		r.ResultBytes != 42 || r.Incomplete || strings.Contains(r.Tool, "hunter2") || !strings.Contains(r.Tool, "example.com/doc") {
		t.Errorf("the read: %+v", r)
	}
	r = recs[2]
	if r.Kind != audit.KindPromptGet || r.Tool != "ev__greet" || r.Outcome != "tool_error" ||
		!strings.Contains(r.Arguments, "bob") || strings.Contains(r.Arguments, "sk-secret") {
		t.Errorf("the prompt get: %+v", r)
	}
	r = recs[3]
	if r.Decision != "deny" || r.Outcome != "denied" || r.Reason != "several servers list it" || r.Server != "" {
		t.Errorf("the denied read: %+v", r)
	}
}
