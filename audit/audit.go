// Package audit records every tool call, and the grants people give, in a
// SQLite database (.lathe/lathe.db in the workspace, by default).
//
// A call is written twice: a row marked started before anything runs, and
// the same row completed when the call ends. A process that dies in the
// middle of a call leaves its row started, which [Store.List] reports as
// incomplete: a record is never lost. The database runs in WAL mode, so
// that `lathe audit` reads while a server writes.
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go

	"github.com/lathe-tools/lathe/policy"
)

// DefaultPath is where the database lives, relative to the workspace.
const DefaultPath = ".lathe/lathe.db"

// Status of a record.
const (
	// StatusStarted: the call began and has not ended, or the process died
	// during it.
	StatusStarted = "started"
	// StatusDone: the call ended and its outcome is recorded.
	StatusDone = "done"
)

// Record is one call.
type Record struct {
	ID     int64     `json:"id"`
	CallID string    `json:"call_id,omitempty"`
	Time   time.Time `json:"time"`
	Tool   string    `json:"tool"`
	// Arguments are the call's arguments, secret-looking values redacted.
	Arguments string `json:"arguments"`
	// Decision is allow, ask or deny ("" when the call failed before the
	// policy saw it); DecidedBy says who decided (see [policy.Decision]).
	Decision  string `json:"decision,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Status is [StatusStarted] or [StatusDone]; Incomplete is true for a
	// record still started.
	Status     string `json:"status"`
	Incomplete bool   `json:"incomplete,omitempty"`
	// Outcome is "ok", "question", or an error kind.
	Outcome     string        `json:"outcome,omitempty"`
	Duration    time.Duration `json:"duration_ns,omitempty"`
	ArgsBytes   int           `json:"args_bytes"`
	ResultBytes int           `json:"result_bytes"`
	// PID is the process that made the call.
	PID int `json:"pid"`
}

// Store is an open audit database. Its methods are safe for concurrent use.
type Store struct {
	db *sql.DB
}

const schemaSQL = `
CREATE TABLE IF NOT EXISTS calls (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	call_id TEXT NOT NULL DEFAULT '',
	time_ns INTEGER NOT NULL,
	tool TEXT NOT NULL,
	arguments TEXT NOT NULL DEFAULT '',
	decision TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	status TEXT NOT NULL,
	outcome TEXT NOT NULL DEFAULT '',
	duration_ns INTEGER NOT NULL DEFAULT 0,
	args_bytes INTEGER NOT NULL DEFAULT 0,
	result_bytes INTEGER NOT NULL DEFAULT 0,
	pid INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS calls_tool ON calls(tool, time_ns);
CREATE TABLE IF NOT EXISTS grants (
	tool TEXT NOT NULL,
	command TEXT NOT NULL DEFAULT '',
	created_ns INTEGER NOT NULL,
	PRIMARY KEY (tool, command)
);`

// Open opens (creating it and its directory if need be) the database at path.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// busy_timeout makes concurrent writers (a server, a CLI call) wait for
	// each other rather than fail; WAL lets readers run beside a writer.
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	if _, err := db.Exec(schemaSQL); err != nil {
		db.Close()
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Start writes a started record and returns its id.
func (s *Store) Start(ctx context.Context, r *Record) (int64, error) {
	res, err := s.db.ExecContext(context.WithoutCancel(ctx),
		`INSERT INTO calls (call_id, time_ns, tool, arguments, status, args_bytes, pid) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		r.CallID, r.Time.UnixNano(), r.Tool, r.Arguments, StatusStarted, r.ArgsBytes, r.PID)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return res.LastInsertId()
}

// Finish completes the record id with r's decision and outcome. It runs even
// when ctx was cancelled: a cancelled call is still recorded.
func (s *Store) Finish(ctx context.Context, id int64, r *Record) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx),
		`UPDATE calls SET decision = ?, decided_by = ?, reason = ?, status = ?, outcome = ?, duration_ns = ?,
		result_bytes = ? WHERE id = ?`,
		r.Decision, r.DecidedBy, r.Reason, StatusDone, r.Outcome, int64(r.Duration), r.ResultBytes, id)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Filter selects records. Zero fields select everything.
type Filter struct {
	// Tool is a pattern over tool names (* and ?, as in policy rules).
	Tool string
	// Decision, Outcome select by exact value; Outcome "incomplete" selects
	// records still started.
	Decision string
	Outcome  string
	// Since keeps records from this time on.
	Since time.Time
	// Limit keeps the newest Limit records; zero means 100, negative all.
	Limit int
}

// List returns the records that fit f, oldest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Record, error) {
	var where []string
	var args []any
	if f.Tool != "" {
		where = append(where, "tool GLOB ?")
		args = append(args, f.Tool)
	}
	if f.Decision != "" {
		where = append(where, "decision = ?")
		args = append(args, f.Decision)
	}
	switch f.Outcome {
	case "":
	case "incomplete":
		where = append(where, "status = ?")
		args = append(args, StatusStarted)
	default:
		where = append(where, "outcome = ?")
		args = append(args, f.Outcome)
	}
	if !f.Since.IsZero() {
		where = append(where, "time_ns >= ?")
		args = append(args, f.Since.UnixNano())
	}
	q := `SELECT id, call_id, time_ns, tool, arguments, decision, decided_by, reason, status, outcome, duration_ns,
		args_bytes, result_bytes, pid FROM calls`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC"
	switch {
	case f.Limit == 0:
		q += " LIMIT 100"
	case f.Limit > 0:
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var t, d int64
		if err := rows.Scan(&r.ID, &r.CallID, &t, &r.Tool, &r.Arguments, &r.Decision, &r.DecidedBy, &r.Reason,
			&r.Status, &r.Outcome, &d, &r.ArgsBytes, &r.ResultBytes, &r.PID); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		r.Time = time.Unix(0, t).UTC()
		r.Duration = time.Duration(d)
		r.Incomplete = r.Status == StatusStarted
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	// Oldest first, as a log reads.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

var _ policy.GrantStore = (*Store)(nil)

// Granted reports whether a person granted calls of the tool with this
// command line (see [policy.Grant]) for good.
func (s *Store) Granted(ctx context.Context, toolName, command string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM grants WHERE tool = ? AND command = ?`, toolName, command).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("audit: %w", err)
	}
	return true, nil
}

// AddGrant stores a grant; granting a tool twice keeps the first.
func (s *Store) AddGrant(ctx context.Context, g policy.Grant) error {
	_, err := s.db.ExecContext(context.WithoutCancel(ctx),
		`INSERT OR IGNORE INTO grants (tool, command, created_ns) VALUES (?, ?, ?)`, g.Tool, g.Command, g.Created.UnixNano())
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Grants lists the stored grants by tool name.
func (s *Store) Grants(ctx context.Context) ([]policy.Grant, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT tool, command, created_ns FROM grants ORDER BY tool, command`)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []policy.Grant
	for rows.Next() {
		var g policy.Grant
		var t int64
		if err := rows.Scan(&g.Tool, &g.Command, &t); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		g.Created = time.Unix(0, t).UTC()
		out = append(out, g)
	}
	return out, rows.Err()
}

// RevokeGrant removes the grants of a tool, every command line's; it
// reports whether there was one.
func (s *Store) RevokeGrant(ctx context.Context, toolName string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM grants WHERE tool = ?`, toolName)
	if err != nil {
		return false, fmt.Errorf("audit: %w", err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}
