package audit

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lathe-tools/lathe"
)

// Operation is one host operation of a call (see [lathe.Operation]): what a
// confined tool asked lathe to do for it, and what became of it. It is
// written with its call's end: in the same journal line, and in the same
// transaction.
type Operation struct {
	// Kind is "read", "write", "list", "stat", "remove", "fetch", "run",
	// "env", "log", "progress" or "ask".
	Kind string `json:"kind"`
	// Subject is what it was done to: a path relative to the workspace, a
	// URL (its userinfo and query values redacted), a command line, a
	// variable's name (never its value), with secret-looking values
	// redacted as in a call's arguments.
	Subject string `json:"subject"`
	// Approval is "allow", "ask" or "deny"; DecidedBy says who decided
	// and Reason why.
	Approval  string `json:"approval,omitempty"`
	DecidedBy string `json:"decided_by,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Error is why it failed; empty when it succeeded.
	Error    string        `json:"error,omitempty"`
	Bytes    int64         `json:"bytes,omitempty"`
	Time     time.Time     `json:"time"`
	Duration time.Duration `json:"duration_ns,omitempty"`
}

// operationsSQL is the table of operations, one row per operation, keyed by
// its call's row and its place among the call's operations. It is created
// beside the calls table; a log written before it existed gets it, and the
// calls table its count of dropped operations, when a lathe that knows them
// opens it (migrate).
const operationsSQL = `
CREATE TABLE IF NOT EXISTS operations (
	call INTEGER NOT NULL,
	seq INTEGER NOT NULL,
	kind TEXT NOT NULL,
	subject TEXT NOT NULL DEFAULT '',
	approval TEXT NOT NULL DEFAULT '',
	decided_by TEXT NOT NULL DEFAULT '',
	reason TEXT NOT NULL DEFAULT '',
	error TEXT NOT NULL DEFAULT '',
	bytes INTEGER NOT NULL DEFAULT 0,
	time_ns INTEGER NOT NULL DEFAULT 0,
	duration_ns INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (call, seq)
) WITHOUT ROWID;`

// migrate brings a log to the schema of the operations: their table, and
// the calls' column counting the operations not kept. It runs in one
// immediate transaction, so that two processes opening an old log at once
// do not both add the column.
func migrate(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	err := func() error {
		if _, err := conn.ExecContext(ctx, operationsSQL); err != nil {
			return err
		}
		var n int
		if err := conn.QueryRowContext(ctx,
			`SELECT count(*) FROM pragma_table_info('calls') WHERE name = 'operations_dropped'`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			_, err := conn.ExecContext(ctx, `ALTER TABLE calls ADD COLUMN operations_dropped INTEGER NOT NULL DEFAULT 0`)
			return err
		}
		return nil
	}()
	if err != nil {
		conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}

// opRows is how many operations one INSERT writes: a statement costs the
// driver far more than a row, so a call's operations go in as few
// statements as the parameter limit allows (11 per row).
const opRows = 64

// opStmts are the writer's statements for operations.
type opStmts struct {
	conn   *sql.Conn
	insert map[int]*sql.Stmt // by rows per statement, prepared when first needed
	clear  *sql.Stmt
}

func (o *opStmts) prepare(ctx context.Context, conn *sql.Conn) error {
	if err := migrate(ctx, conn); err != nil {
		return err
	}
	o.conn, o.insert = conn, map[int]*sql.Stmt{}
	var err error
	o.clear, err = conn.PrepareContext(ctx, `DELETE FROM operations WHERE call = ?`)
	return err
}

func (o *opStmts) close() {
	for _, st := range o.insert {
		st.Close()
	}
	if o.clear != nil {
		o.clear.Close()
	}
}

// insertOf returns the statement that inserts n operations.
func (o *opStmts) insertOf(n int) (*sql.Stmt, error) {
	if st := o.insert[n]; st != nil {
		return st, nil
	}
	q := `INSERT INTO operations (call, seq, kind, subject, approval, decided_by, reason, error, bytes, time_ns,
		duration_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1)
	st, err := o.conn.PrepareContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	o.insert[n] = st
	return st, nil
}

// writeOperations writes the operations of the call of row id, in the
// transaction of the call's end. A replay first removes what an earlier
// write of the same end left.
func (o *opStmts) writeOperations(id int64, ops []Operation, replay bool) error {
	if replay {
		if _, err := o.clear.Exec(id); err != nil {
			return err
		}
	}
	args := make([]any, 0, 11*min(opRows, len(ops)))
	for start := 0; start < len(ops); start += opRows {
		part := ops[start:min(start+opRows, len(ops))]
		args = args[:0]
		for i := range part {
			op := &part[i]
			args = append(args, id, start+i, op.Kind, op.Subject, op.Approval, op.DecidedBy, op.Reason, op.Error,
				op.Bytes, op.Time.UnixNano(), int64(op.Duration))
		}
		st, err := o.insertOf(len(part))
		if err != nil {
			return err
		}
		if _, err := st.Exec(args...); err != nil {
			return err
		}
	}
	return nil
}

// operations turns a call's operations into records, redacted.
func operations(ops []lathe.Operation, r *Redactor) []Operation {
	if len(ops) == 0 {
		return nil
	}
	if r == nil {
		r = defaultRedactor()
	}
	out := make([]Operation, len(ops))
	for i, op := range ops {
		out[i] = Operation{Kind: op.Kind, Subject: r.text(op.Subject), Approval: op.Approval, DecidedBy: op.By,
			Reason: r.text(op.Reason), Error: r.text(op.Error), Bytes: op.Bytes, Time: op.Started, Duration: op.Duration}
		if op.Kind == "env" {
			// A variable's name is all the log keeps of it: an error,
			// the one message that might quote its value, is not kept.
			out[i].Error = redactEnv(out[i].Error)
		}
	}
	return out
}

// defaultRedactor applies the default rules alone, compiled once.
var defaultRedactor = sync.OnceValue(func() *Redactor {
	r, _ := NewRedactor(nil, nil)
	return r
})

// redactEnv keeps whether there was a message, not the message.
func redactEnv(s string) string {
	if s == "" {
		return ""
	}
	return Redacted
}

// listOperations fills in the operations of recs, in their order.
func (s *Store) listOperations(ctx context.Context, recs []Record) error {
	byID := make(map[int64]*Record, len(recs))
	ids := make([]any, 0, len(recs))
	for i := range recs {
		byID[recs[i].ID] = &recs[i]
		ids = append(ids, recs[i].ID)
	}
	// SQLite allows a bounded number of parameters in one statement.
	const chunk = 500
	for len(ids) > 0 {
		n := min(chunk, len(ids))
		part := ids[:n]
		ids = ids[n:]
		q := `SELECT call, kind, subject, approval, decided_by, reason, error, bytes, time_ns, duration_ns
			FROM operations WHERE call IN (?` + strings.Repeat(", ?", len(part)-1) + `) ORDER BY call, seq`
		rows, err := s.db.QueryContext(ctx, q, part...)
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		for rows.Next() {
			var id, t, d int64
			var op Operation
			if err := rows.Scan(&id, &op.Kind, &op.Subject, &op.Approval, &op.DecidedBy, &op.Reason, &op.Error,
				&op.Bytes, &t, &d); err != nil {
				rows.Close()
				return fmt.Errorf("audit: %w", err)
			}
			op.Time = time.Unix(0, t).UTC()
			op.Duration = time.Duration(d)
			if r := byID[id]; r != nil {
				r.Operations = append(r.Operations, op)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	return nil
}
