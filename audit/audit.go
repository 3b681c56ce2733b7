// Package audit records every tool call in a SQLite database
// (.lathe/lathe.db in the workspace, by default), and keeps the grants
// people give outside the workspace (see [Grants]).
//
// A call is written twice: a row marked started before anything runs, and
// the same row completed when the call ends. A process that dies in the
// middle of a call leaves its row started, which [Store.List] reports as
// incomplete: a record is never lost. The host operations a confined tool
// asked for during the call ([Operation]) are written with its end, in the
// same transaction, one row each. The database runs in WAL mode, so
// that `lathe audit` reads while a server writes; each Store writes through
// one connection (see [Store]), and several processes may share the file.
package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go

	"github.com/lathe-tools/lathe/policy"
)

// fileURI is the driver's "file:" address of the database at path. In it
// "#" would end the path and "?" start the options, so that a workspace
// named "a#b" would have its log written to a file "a" beside it, and one
// named "x?_pragma=…" would set the database's options; SQLite decodes the
// percent escapes, so the path arrives whole.
func fileURI(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}

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
	ID     int64  `json:"id"`
	CallID string `json:"call_id,omitempty"`
	// Parent is the ID of the record of the call that made this one (a
	// tool called from run_code's script names the run_code call); 0 for
	// a call made from outside any tool.
	Parent int64     `json:"parent,omitempty"`
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
	// Operations are what the call's tool asked lathe's host to do, in
	// order ([Operation]); [Store.List] fills them in when its filter asks.
	Operations []Operation `json:"operations,omitempty"`
	// OperationsDropped counts the operations the engine did not keep
	// (past [lathe.MaxOperations]).
	OperationsDropped int `json:"operations_dropped,omitempty"`
	// Kind is "" for a call, else [KindResourceRead] or [KindPromptGet]:
	// then Tool is the URI or the prompt's name and Server the upstream
	// server (see [Store.StartAccess]). Session is the client's session
	// ([lathe.WithSession]), of a call or a read.
	Kind    string `json:"kind,omitempty"`
	Session string `json:"session,omitempty"`
	Server  string `json:"server,omitempty"`
}

// Store is an open audit database. Its methods are safe for concurrent use.
// It is a log: it holds no rules (grants live in [Grants]).
//
// The store has one write connection. A write (a record started, a record
// finished) that is the only one under way runs on the caller's goroutine;
// writes that overlap are queued to the writer goroutine, which commits what has
// queued up in one transaction once the connection is free. So a call in
// sequence pays no hand-over between goroutines, and calls at once share
// commits. SQLite takes one writer at a time anyway; many connections
// writing at once only fight over the lock and, under load, fail with
// SQLITE_BUSY. The queue is bounded, so that a burst of calls waits for the
// writer rather than piling up in memory or losing records. Either way a
// write returns once it is committed. Another process writing the same
// database (lathe serve and lathe call on one workspace) is waited for
// through SQLite's busy timeout.
type Store struct {
	path string
	db   *sql.DB // readers; query_only

	wdb *sql.DB
	w   *writer
	wmu sync.Mutex // held while the write connection is in use
	// writing counts the writes under way, queued or running.
	writing atomic.Int32
	ops     chan *op
	done    chan struct{} // closed when the writer has stopped

	mu      sync.RWMutex // held for reading while an op is queued; Close takes it to stop the queue
	closed  bool
	open    atomic.Int64 // records started and not finished
	closing sync.Once
	err     error // of Close
}

// An op is one write, of one statement, run by the writer alone or in a
// transaction with the writes queued beside it.
type op struct {
	run  func(w *writer) error
	errc chan error
}

// writer is the write connection and its prepared statements; only the
// writer goroutine uses it.
type writer struct {
	conn          *sql.Conn
	start, finish *sql.Stmt
	ops           opStmts
	inTx          bool // within tx: a write of several statements need not open its own
}

const (
	// queueLen bounds the writes waiting for the writer; a call that finds
	// the queue full waits.
	queueLen = 1024
	// maxBatch bounds the writes of one transaction, so that a waiting
	// call's commit is never put off for long.
	maxBatch = 256
	// busyTimeout is how long a write waits for another process that holds
	// the database's write lock.
	busyTimeout = 10 * time.Second
	// closeGrace is how long Close waits for calls in flight to finish
	// their records.
	closeGrace = 5 * time.Second
)

// ErrClosed is returned by writes to a closed store.
var ErrClosed = errors.New("audit: the store is closed")

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
CREATE INDEX IF NOT EXISTS calls_tool_id ON calls(tool, id);`

// ignoreAll writes dir/.gitignore holding "*", unless a file of that name
// exists: one the user wrote is theirs. O_EXCL also refuses a symbolic link
// planted there, so nothing is ever written through one. A failure is not
// the audit log's: the database works without the file.
func ignoreAll(dir string) {
	f, err := os.OpenFile(filepath.Join(dir, ".gitignore"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, werr := f.WriteString("# lathe's state: the audit log. Nothing here belongs in version control.\n*\n")
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY (extended codes
// included).
func isBusy(err error) bool {
	var c interface{ Code() int }
	return errors.As(err, &c) && c.Code()&0xff == 5
}

// Open opens (creating it and its directory if need be) the database at path.
//
// A directory it creates for the database gets a .gitignore that ignores
// everything in it, so that lathe's state (.lathe/ by default) never shows
// as untracked in a repository nor gets committed by accident.
func Open(path string) (*Store, error) {
	dir := filepath.Dir(path)
	_, statErr := os.Lstat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		ignoreAll(dir)
	}
	// The busy timeout comes first, so that even switching to WAL waits for
	// another process opening the same file. WAL lets readers run beside the
	// writer; NORMAL synchronisation keeps a committed record through a
	// crash of lathe (not of the machine) at a fraction of FULL's cost.
	busy := fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())
	wdb, err := sql.Open("sqlite", fileURI(path)+"?"+busy+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	w, err := newWriter(wdb)
	// SQLite does not call the busy handler everywhere: switching a new
	// file to WAL while other processes open it too can fail at once with
	// SQLITE_BUSY. Opening is tried again, for as long as the busy timeout.
	for wait, end := 5*time.Millisecond, time.Now().Add(busyTimeout); err != nil && isBusy(err) && time.Now().Before(end); wait = min(2*wait, 200*time.Millisecond) {
		time.Sleep(wait)
		w, err = newWriter(wdb)
	}
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	// Readers cannot write: every write goes through the writer.
	db, err := sql.Open("sqlite", fileURI(path)+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		w.close()
		wdb.Close()
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	s := &Store{path: path, db: db, wdb: wdb, w: w, ops: make(chan *op, queueLen), done: make(chan struct{})}
	go s.write()
	return s, nil
}

func newWriter(wdb *sql.DB) (*writer, error) {
	ctx := context.Background()
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn}
	if _, err := conn.ExecContext(ctx, schemaSQL); err != nil {
		w.close()
		return nil, err
	}
	if err := w.ops.prepare(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	if err := migrateAccess(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	if err := migrateParent(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	if err := migrateSearch(ctx, conn); err != nil {
		w.close()
		return nil, err
	}
	if w.start, err = conn.PrepareContext(ctx,
		`INSERT INTO calls (call_id, parent, time_ns, tool, arguments, status, args_bytes, pid, session) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	if w.finish, err = conn.PrepareContext(ctx,
		`UPDATE calls SET decision = ?, decided_by = ?, reason = ?, status = ?, outcome = ?, duration_ns = ?,
		result_bytes = ? WHERE id = ?`); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.start, w.finish} {
		if st != nil {
			st.Close()
		}
	}
	w.ops.close()
	w.conn.Close()
}

// write is the writer goroutine: it takes what has queued up, up to
// maxBatch writes, and commits them in one transaction, until the queue is
// closed and empty.
func (s *Store) write() {
	defer close(s.done)
	defer s.w.close()
	batch := make([]*op, 0, maxBatch)
	for o := range s.ops {
		batch = append(batch[:0], o)
		// The connection may be in use by a write run directly (see
		// do); what queues up meanwhile joins this batch.
		s.wmu.Lock()
	fill:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-s.ops:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.w.commit(batch)
		s.wmu.Unlock()
	}
}

// commit runs a batch in one transaction. When that fails, each write is
// tried again in a transaction of its own, so that one bad write does not
// cost the others their records.
func (w *writer) commit(batch []*op) {
	if len(batch) == 1 {
		// A write of one statement SQLite commits on its own, and one of
		// several opens its own transaction (writer.atomic): BEGIN and
		// COMMIT here would only add two round trips.
		batch[0].errc <- batch[0].run(w)
		return
	}
	err := w.tx(func() error {
		for _, o := range batch {
			if err := o.run(w); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		for _, o := range batch {
			o.errc <- err
		}
		return
	}
	for _, o := range batch {
		o.errc <- w.tx(func() error { return o.run(w) })
	}
}

// tx runs f in an immediate transaction: the write lock is taken at BEGIN,
// where SQLite waits out another process's lock, not at the first write,
// where a transaction that read first could only fail.
func (w *writer) tx(f func() error) error {
	ctx := context.Background()
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	w.inTx = true
	defer func() { w.inTx = false }()
	if err := f(); err != nil {
		w.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	if _, err := w.conn.ExecContext(ctx, "COMMIT"); err != nil {
		w.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// do runs a write and returns once it is committed: on the caller's
// goroutine when it is the only write under way, else queued to the writer
// goroutine and waited for. A full queue makes it wait:
// records are never dropped to keep up.
func (s *Store) do(run func(w *writer) error) error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	// No other write under way: no batch to join. When writes overlap
	// they are queued, so that they share commits. The read lock is held
	// through the write, so that Close cannot close the connection under
	// it.
	defer s.writing.Add(-1)
	if s.writing.Add(1) == 1 && s.wmu.TryLock() {
		// A write of one statement SQLite commits on its own; one of
		// several opens its own transaction (writer.atomic).
		err := run(s.w)
		s.wmu.Unlock()
		s.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
		return nil
	}
	o := &op{run: run, errc: make(chan error, 1)}
	s.ops <- o
	s.mu.RUnlock()
	if err := <-o.errc; err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Path returns the database's file.
func (s *Store) Path() string { return s.path }

// Close waits, up to a few seconds, for calls in flight to finish their
// records, then writes what is queued and closes the database. A record
// still open after that stays started, and the log shows it as incomplete.
func (s *Store) Close() error {
	s.closing.Do(func() {
		deadline := time.Now().Add(closeGrace)
		for s.open.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		s.mu.Lock()
		s.closed = true
		close(s.ops)
		s.mu.Unlock()
		<-s.done
		s.err = errors.Join(s.db.Close(), s.wdb.Close())
	})
	return s.err
}

// Start writes a started record and returns its id once the record is
// committed: a call must not run before its record exists. It waits for the
// writer even when ctx is cancelled.
func (s *Store) Start(ctx context.Context, r *Record) (int64, error) {
	var id int64
	err := s.do(func(w *writer) error {
		res, err := w.start.Exec(r.CallID, r.Parent, r.Time.UnixNano(), r.Tool, r.Arguments, StatusStarted, r.ArgsBytes, r.PID,
			r.Session)
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, err
	}
	s.open.Add(1)
	return id, nil
}

// Finish completes the record id with r's decision and outcome, and its
// operations, and returns once that is committed, all in one transaction.
// It runs even when ctx was cancelled: a cancelled call is still recorded.
func (s *Store) Finish(ctx context.Context, id int64, r *Record) error {
	defer s.open.Add(-1)
	return s.do(func(w *writer) error {
		return w.atomic(len(r.Operations) > 0 || r.OperationsDropped > 0, func() error {
			_, err := w.finish.Exec(r.Decision, r.DecidedBy, r.Reason, StatusDone, r.Outcome, int64(r.Duration),
				r.ResultBytes, id)
			if err != nil {
				return err
			}
			return w.ops.writeOperations(id, r)
		})
	})
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
	// Operations fills in each record's operations.
	Operations bool
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
	q := recordColumns
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
	out, err := s.records(ctx, q, args)
	if err != nil {
		return nil, err
	}
	// Oldest first, as a log reads.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if f.Operations && len(out) > 0 {
		if err := s.listOperations(ctx, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// recordColumns selects what [Store.records] reads of each record.
const recordColumns = `SELECT id, call_id, parent, time_ns, tool, arguments, decision, decided_by, reason, status, outcome,
	duration_ns, args_bytes, result_bytes, pid, operations_dropped, kind, session, server FROM calls`

// records runs q, which selects [recordColumns], and reads its records.
func (s *Store) records(ctx context.Context, q string, args []any) ([]Record, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var t, d int64
		if err := rows.Scan(&r.ID, &r.CallID, &r.Parent, &t, &r.Tool, &r.Arguments, &r.Decision, &r.DecidedBy, &r.Reason,
			&r.Status, &r.Outcome, &d, &r.ArgsBytes, &r.ResultBytes, &r.PID, &r.OperationsDropped,
			&r.Kind, &r.Session, &r.Server); err != nil {
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
	return out, nil
}

// LegacyGrants returns the grants an earlier lathe kept in this database.
// They are not honoured: anything that could write the workspace could
// have written them. They are listed so that a person can see what to
// grant again.
func (s *Store) LegacyGrants(ctx context.Context) ([]policy.Grant, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'grants'`).Scan(&n)
	if err != nil || n == 0 {
		if err != nil {
			err = fmt.Errorf("audit: %w", err)
		}
		return nil, err
	}
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

// DropLegacyGrants removes the grants an earlier lathe kept in this
// database (see [Store.LegacyGrants]); it reports whether there were any.
func (s *Store) DropLegacyGrants(ctx context.Context) (bool, error) {
	old, err := s.LegacyGrants(ctx)
	if err != nil || len(old) == 0 {
		return false, err
	}
	err = s.do(func(w *writer) error {
		_, err := w.conn.ExecContext(context.Background(), `DROP TABLE IF EXISTS grants`)
		return err
	})
	return err == nil, err
}
