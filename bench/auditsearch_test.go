package bench

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
)

// searchRecords is how many records the audit search is measured over.
const searchRecords = 100_000

// fillSearchLog writes n records of varied tools, outcomes, sessions and
// arguments, one a second apart ending now, into a new audit log at path,
// with plain INSERTs in one transaction (writing them through the store,
// a transaction per record, would take minutes and measure nothing of the
// search). It returns the start time of the records.
func fillSearchLog(b *testing.B, path string, n int) time.Time {
	s, err := audit.Open(path) // the schema, as lathe makes it
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO calls (call_id, time_ns, tool, arguments, decision, decided_by, reason, status,
		outcome, duration_ns, args_bytes, pid, session) VALUES (?, ?, ?, ?, 'allow', 'rule', '', 'done', ?, 1000, 40, 1, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	tools := []string{"read_file", "write_file", "run_command", "list_dir", "fetch", "grep", "github_create_issue", "wipe"}
	outcomes := []string{"ok", "ok", "ok", "ok", "ok", "ok", "tool_error", "denied", "timeout", "ok"}
	start := time.Now().Add(-time.Duration(n) * time.Second)
	for i := range n {
		tool := tools[i%len(tools)]
		if i%1000 == 7 {
			tool = "rare_tool" // one record in a thousand: a selective filter
		}
		args := fmt.Sprintf(`{"path":"src/pkg%d/file%d.go","pattern":"func %d"}`, i%97, i, i%13)
		if _, err := st.Exec(fmt.Sprint("mcp-", i), start.Add(time.Duration(i)*time.Second).UnixNano(), tool, args,
			outcomes[i%len(outcomes)], fmt.Sprint("mcp-", i%50)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return start
}

// BenchmarkAuditSearch measures a search of the audit log (one page of
// 100, newest first, as GET /api/audit asks) over 100,000 records in a real
// SQLite file, for each filter, against the raw floor measured in the same
// run on the same file: the newest page with no filter at all, by the
// primary key alone. It reports ms/search for each, and search/raw.
// Half the filters have an index; text and the cursor ride on the id.
func BenchmarkAuditSearch(b *testing.B) {
	path := filepath.Join(b.TempDir(), "lathe.db")
	start := fillSearchLog(b, path, searchRecords)
	s, err := audit.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	rawPage := func() {
		rows, err := raw.QueryContext(ctx, `SELECT id, call_id, time_ns, tool, arguments, outcome FROM calls ORDER BY id DESC LIMIT 100`)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id, t int64
			var c, tl, a, o string
			rows.Scan(&id, &c, &t, &tl, &a, &o)
			n++
		}
		rows.Close()
		if n != 100 {
			b.Fatalf("raw page: %d rows", n)
		}
	}
	cases := []struct {
		name string
		q    audit.Query
	}{
		{"none", audit.Query{}},
		{"tool", audit.Query{Tool: "write_file"}},
		{"tool=rare", audit.Query{Tool: "rare_tool"}},
		{"tool=pattern", audit.Query{Tool: "github_*"}},
		{"outcome", audit.Query{Outcome: "denied"}},
		{"session", audit.Query{Session: "mcp-7"}},
		{"text", audit.Query{Text: "pkg42/"}},
		{"text=absent", audit.Query{Text: "no such text"}},
		{"time-range", audit.Query{Since: start.Add(20_000 * time.Second), Until: start.Add(30_000 * time.Second)}},
		{"all-filters", audit.Query{Tool: "read_file", Outcome: "ok", Session: "mcp-8", Text: "pkg", Since: start}},
		{"cursor-deep", audit.Query{Before: 1000}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var searchTime, rawTime time.Duration
			for b.Loop() {
				t0 := time.Now()
				rawPage()
				t1 := time.Now()
				if _, _, err := s.Search(ctx, c.q); err != nil {
					b.Fatal(err)
				}
				searchTime += time.Since(t1)
				rawTime += t1.Sub(t0)
			}
			b.ReportMetric(float64(searchTime.Microseconds())/1000/float64(b.N), "ms/search")
			b.ReportMetric(float64(rawTime.Microseconds())/1000/float64(b.N), "ms/raw")
			b.ReportMetric(searchTime.Seconds()/rawTime.Seconds(), "search/raw")
		})
	}
}
