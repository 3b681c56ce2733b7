package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
)

// TestSearch: each filter, the cursor, and text with LIKE's wildcards
// taken literally.
func TestSearch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	t0 := time.Now()
	for i := range 10 {
		r := &audit.Record{CallID: fmt.Sprint("c", i), Time: t0.Add(time.Duration(i) * time.Second), Tool: []string{"read", "write"}[i%2],
			Arguments: fmt.Sprintf(`{"path":"f%d_x"}`, i), Session: fmt.Sprint("s", i%3)}
		id, err := s.Start(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		r.Outcome = []string{"ok", "denied"}[min(i%4, 1)]
		if err := s.Finish(ctx, id, r); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(q audit.Query) (out string, next int64) {
		t.Helper()
		recs, next, err := s.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out += r.CallID + " "
		}
		return out, next
	}
	for _, c := range []struct {
		q    audit.Query
		want string
	}{
		{audit.Query{Tool: "write"}, "c9 c7 c5 c3 c1 "},
		{audit.Query{Tool: "wr*"}, "c9 c7 c5 c3 c1 "},
		{audit.Query{Outcome: "ok"}, "c8 c4 c0 "},
		{audit.Query{Session: "s1"}, "c7 c4 c1 "},
		{audit.Query{Text: "F3_"}, "c3 "},
		{audit.Query{Text: "%"}, ""},
		{audit.Query{Text: "_x"}, "c9 c8 c7 c6 c5 c4 c3 c2 c1 c0 "},
		{audit.Query{Since: t0.Add(2 * time.Second), Until: t0.Add(4 * time.Second)}, "c3 c2 "},
		{audit.Query{CallID: "c6"}, "c6 "},
	} {
		if got, _ := ids(c.q); got != c.want {
			t.Errorf("%+v: %q, want %q", c.q, got, c.want)
		}
	}
	page, next := ids(audit.Query{Limit: 4})
	if page != "c9 c8 c7 c6 " || next == 0 {
		t.Fatalf("page 1 %q next %d", page, next)
	}
	page, next = ids(audit.Query{Limit: 4, Before: next})
	if page != "c5 c4 c3 c2 " {
		t.Errorf("page 2 %q", page)
	}
	if page, next = ids(audit.Query{Limit: 4, Before: next}); page != "c1 c0 " || next != 0 {
		t.Errorf("last page %q next %d", page, next)
	}
}

// TestSearchIndexesMigrate: a log an earlier lathe wrote, with its index on
// (tool, time) and the search indexes that every record paid for, is left
// with the one index of the searches when it is opened.
func TestSearchIndexesMigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	indexes := func() []string {
		rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'calls' AND sql IS NOT NULL ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	if got := indexes(); !slices.Equal(got, []string{"calls_tool_id"}) {
		t.Fatalf("a new log's indexes: %q, want calls_tool_id alone", got)
	}
	if _, err := db.Exec(`DROP INDEX calls_tool_id; CREATE INDEX calls_tool ON calls(tool, time_ns);
		CREATE INDEX calls_outcome_id ON calls(outcome, id); CREATE INDEX calls_session_id ON calls(session, id);
		CREATE INDEX calls_call_id ON calls(call_id)`); err != nil {
		t.Fatal(err)
	}
	s, err = audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := indexes(); !slices.Equal(got, []string{"calls_tool_id"}) {
		t.Errorf("an old log's indexes after it was opened: %q, want calls_tool_id alone", got)
	}
}
