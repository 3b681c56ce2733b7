package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Query selects records for [Store.Search], newest first. Zero fields
// select everything.
type Query struct {
	// ID selects one record by its number.
	ID int64
	// CallID selects the records of the caller's call id.
	CallID string
	// Tool is a tool's name, or a pattern over names (* and ?, as in
	// policy rules).
	Tool string
	// Outcome selects by exact value ("ok", "denied" …); "incomplete"
	// selects records still started.
	Outcome string
	// Session selects the records of one client's session.
	Session string
	// Text selects records whose tool, arguments (as recorded, redacted)
	// or reason hold it, in any case of ASCII letters.
	Text string
	// Since and Until bound the records' start times: from Since on,
	// before Until.
	Since, Until time.Time
	// Before is a cursor: records with a number below it, as the next of
	// an earlier search returned.
	Before int64
	// Limit caps the records returned; zero means 100.
	Limit int
	// Operations fills in each record's operations.
	Operations bool
}

// searchIndexesSQL keeps one index for the searches, on the tool and the
// record's number: the search people make most (one tool's calls, newest
// first) walks it backwards without sorting, and so does `lathe audit
// --tool`. The other filters (outcome, session, call id, text, time range)
// scan the table, newest first: about 30-65 ms over 100,000 records
// (docs/benchmarks.md). An index costs every call a write: the three more
// this search once had (outcome, session, call id) made each record 1.6
// times as slow to write (BenchmarkAudit: 51 against 82 µs), on the hot
// path of every call, for searches a person makes now and then. Records
// are numbered in the order they start, so walking the numbers backwards
// meets a time range in order. The index on (tool, time) of earlier
// logs is replaced, and the others are dropped where a log has them.
const searchIndexesSQL = `
DROP INDEX IF EXISTS calls_tool;
DROP INDEX IF EXISTS calls_outcome_id;
DROP INDEX IF EXISTS calls_session_id;
DROP INDEX IF EXISTS calls_call_id;
CREATE INDEX IF NOT EXISTS calls_tool_id ON calls(tool, id);`

func migrateSearch(ctx context.Context, conn *sql.Conn) error {
	_, err := conn.ExecContext(ctx, searchIndexesSQL)
	return err
}

// likeEscape escapes LIKE's wildcards in s, with \ as the escape.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// Search returns the records that fit q, newest first, and the cursor of
// the page after them (q.Before for the next search), 0 when there is
// none.
func (s *Store) Search(ctx context.Context, q Query) ([]Record, int64, error) {
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		where = append(where, cond)
		args = append(args, a...)
	}
	if q.ID > 0 {
		add("id = ?", q.ID)
	}
	if q.CallID != "" {
		add("call_id = ?", q.CallID)
	}
	if q.Tool != "" {
		// A plain name is compared as such, which the index serves;
		// GLOB only for a pattern.
		if strings.ContainsAny(q.Tool, "*?[") {
			add("tool GLOB ?", q.Tool)
		} else {
			add("tool = ?", q.Tool)
		}
	}
	switch q.Outcome {
	case "":
	case "incomplete":
		add("status = ?", StatusStarted)
	default:
		add("outcome = ?", q.Outcome)
	}
	if q.Session != "" {
		add("session = ?", q.Session)
	}
	if q.Text != "" {
		pat := "%" + likeEscape(q.Text) + "%"
		add(`(tool LIKE ? ESCAPE '\' OR arguments LIKE ? ESCAPE '\' OR reason LIKE ? ESCAPE '\')`, pat, pat, pat)
	}
	if !q.Since.IsZero() {
		add("time_ns >= ?", q.Since.UnixNano())
	}
	if !q.Until.IsZero() {
		add("time_ns < ?", q.Until.UnixNano())
	}
	if q.Before > 0 {
		add("id < ?", q.Before)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	sqlq := recordColumns
	if len(where) > 0 {
		sqlq += " WHERE " + strings.Join(where, " AND ")
	}
	// One more than the limit tells whether a next page exists.
	sqlq += fmt.Sprintf(" ORDER BY id DESC LIMIT %d", limit+1)
	out, err := s.records(ctx, sqlq, args)
	if err != nil {
		return nil, 0, err
	}
	var next int64
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	if q.Operations && len(out) > 0 {
		if err := s.listOperations(ctx, out); err != nil {
			return nil, 0, err
		}
	}
	return out, next, nil
}
