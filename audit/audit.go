// Package audit records every tool call in a SQLite database
// (.lathe/lathe.db in the workspace, by default), and keeps the grants
// people give outside the workspace (see [Grants]).
//
// A call is written twice: a record started before anything runs, and
// the same record completed when the call ends. A process that dies in the
// middle of a call leaves its record started, which [Store.List] reports as
// incomplete: a record is never lost. The host operations a confined tool
// asked for during the call ([Operation]) are written with its end, one
// row each.
//
// Both writes go first to the store's journal, a file beside the database
// to which each write appends one line with one write(2), and return: a
// record started is in the journal before its call runs, a finished one
// before its answer is sent. A line written so is in the kernel's page
// cache and survives a crash of lathe, as a commit of SQLite's WAL with
// synchronous=NORMAL does (which is how the database itself is written);
// neither survives a crash of the machine that loses what was not yet
// written out. A goroutine then moves the records into SQLite in batches,
// a call's two writes usually as one row, many calls in one commit, and
// removes journals whose every line is in. The journal of a process that
// died is replayed into SQLite by the next store that opens or reads the
// database. A store reads its own writes; another process sees a record
// once its batch is committed, some tens of milliseconds after the write.
//
// The database runs in WAL mode, so that `lathe audit` reads while a
// server writes; each Store writes through one connection (see [Store]),
// and several processes may share the file. Each store reserves record
// ids in blocks, so that [Store.Start] returns a record's id before its row
// is written: the ids of two processes writing at once interleave by block
// (an id does not say which of two processes' records started first), and
// never collide, with each other nor with an older lathe's.
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
// A write (a record started, a record finished) is a line appended to the
// store's journal, which is what keeps it (see the package doc), and a
// record queued for the writer goroutine, which moves the queue into SQLite
// in the background, one transaction per batch. A call's two writes
// usually meet in the queue and go in as one row; calls at once share one
// commit. The queue is bounded, so that a burst of calls waits for the
// writer rather than piling up in memory; when SQLite fails (another
// process holds its lock past the busy timeout, the disk is full), records
// stay queued and in the journal and are tried again, never dropped.
//
// Reads ([Store.List], [Store.Search]) first wait for the writers to have
// written everything this process wrote to the database before them,
// through this store or another, so that a process reads its own writes;
// and they replay the journals of processes that died. Another process sees
// a record once its batch is committed, tens of milliseconds after it is
// written.
type Store struct {
	path   string
	key    string  // path made absolute, which names the database in this process
	prefix string  // of the names of this database's journals
	db     *sql.DB // readers; query_only

	wdb *sql.DB
	w   *writer // the writer goroutine's

	mu      sync.Mutex
	closed  bool
	cur     *jfile   // the journal appended to; nil until the first write
	retired []*jfile // journals replaced by a newer one, removed once written
	pending []*entry // queued for the writer
	byID    map[int64]*entry
	since   time.Time     // when the first of pending was queued
	queued  int           // entries pending or in the writer's batch
	room    chan struct{} // closed when queued falls below queueLen
	ids     idBlocks

	wake chan struct{} // the writer has something new; 1-buffered
	reqs chan request
	quit chan struct{}
	done chan struct{} // closed when the writer has stopped
	// drained is the writer's last commit's error, read after done.
	drained error
	held    atomic.Bool // a test holds the writer back

	open    atomic.Int64 // records started and not finished
	closing sync.Once
	err     error // of Close

	recovered struct{ files, records, torn atomic.Int64 }
}

// busyTimeout is how long a write waits for another process that holds
// the database's write lock (a variable, for tests).
var busyTimeout = 10 * time.Second

const (
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
//
// Opening replays the journals of stores of this database whose process
// died (their lock is free) into SQLite, and removes them. A journal whose
// last line was cut short by the crash loses that line alone (its write
// had not returned: its call had not run, or its answer had not been sent);
// a journal holding a line that is not lathe's fails Open with its file and
// line, and is kept for a person to look at.
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
	s := &Store{path: path, prefix: journalPrefix(path), wdb: wdb, w: w, byID: map[int64]*entry{},
		wake: make(chan struct{}, 1), reqs: make(chan request, 16), quit: make(chan struct{}), done: make(chan struct{})}
	if err := s.recoverJournals(w); err != nil {
		w.close()
		wdb.Close()
		return nil, fmt.Errorf("audit: opening %s: replaying the journal of a process that died: %w", path, err)
	}
	// Readers cannot write: every write goes through the writer.
	s.db, err = sql.Open("sqlite", fileURI(path)+"?"+busy+"&_pragma=query_only(1)")
	if err != nil {
		w.close()
		wdb.Close()
		return nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	s.db.SetMaxOpenConns(4)
	s.key = path
	if abs, err := filepath.Abs(path); err == nil {
		s.key = abs
	}
	register(s)
	go s.run()
	return s, nil
}

// Path returns the database's file.
func (s *Store) Path() string { return s.path }

// Close waits, up to a few seconds, for calls in flight to finish their
// records, then writes what is queued into SQLite, removes the journal and
// closes the database. A record still open after that stays started, and
// the log shows it as incomplete. When SQLite cannot take the records,
// Close says so and leaves the journal, which the next store to open the
// database replays: nothing is lost.
func (s *Store) Close() error {
	s.closing.Do(func() {
		deadline := time.Now().Add(closeGrace)
		for s.open.Load() > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		s.mu.Lock()
		s.closed = true
		if s.room != nil {
			close(s.room)
			s.room = nil
		}
		s.mu.Unlock()
		unregister(s)
		close(s.quit)
		<-s.done
		err := s.drained
		if err == nil {
			err = s.giveBack(s.w)
		}
		s.w.close()
		for _, f := range append(s.retired, s.cur) {
			if f == nil {
				continue
			}
			if s.drained == nil {
				f.remove()
			} else {
				f.close()
			}
		}
		s.err = errors.Join(err, s.db.Close(), s.wdb.Close())
	})
	return s.err
}

// appendLine writes line to the journal, starting a new one when there is
// none yet or the one in use has grown past rotateBytes. s.mu is held.
func (s *Store) appendLine(line []byte) (*jfile, error) {
	if s.cur == nil || s.cur.broken || s.cur.size+int64(len(line)) > rotateBytes {
		f, err := createJournal(filepath.Dir(s.path), s.prefix, filepath.Base(s.path), int64(len(line)))
		switch {
		case err == nil:
			if s.cur != nil {
				s.retired = append(s.retired, s.cur)
			}
			s.cur = f
		case s.cur == nil || s.cur.broken:
			return nil, fmt.Errorf("audit: creating a journal: %w", err)
		}
		// Past rotateBytes with no new file to be had, the old one takes
		// the line: a longer journal, not a lost record.
	}
	if err := s.cur.append(line); err != nil {
		return nil, fmt.Errorf("audit: writing the journal: %w", err)
	}
	return s.cur, nil
}

// enqueue queues e for the writer. s.mu is held.
func (s *Store) enqueue(e *entry) {
	s.pending = append(s.pending, e)
	s.byID[e.id] = e
	s.queued++
	if len(s.pending) == 1 {
		s.since = time.Now()
	} else if len(s.pending) < maxBatch {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// waitRoom waits, up to queueWait, for room in the queue. s.mu is held,
// and let go while it waits.
func (s *Store) waitRoom() error {
	var timeout <-chan time.Time
	for s.queued >= queueLen && !s.closed {
		if s.room == nil {
			s.room = make(chan struct{})
		}
		room := s.room
		if timeout == nil {
			timeout = time.After(queueWait)
		}
		s.mu.Unlock()
		select {
		case <-room:
			s.mu.Lock()
		case <-timeout:
			s.mu.Lock()
			return fmt.Errorf("audit: %d records are waiting for %s, which has taken none for %v", s.queued, s.path, queueWait)
		}
	}
	return nil
}

// Start writes a started record and returns its id once the record is in
// the journal: a call must not run before its record exists.
func (s *Store) Start(ctx context.Context, r *Record) (int64, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	id, err := s.newID()
	if err != nil {
		return 0, err
	}
	rec := *r
	rec.ID, rec.Operations = id, nil
	line := startLine(id, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.waitRoom(); err != nil {
		return 0, err
	}
	if s.closed {
		return 0, ErrClosed
	}
	f, err := s.appendLine(line)
	if err != nil {
		return 0, err
	}
	s.enqueue(&entry{id: id, start: &rec, files: [2]*jfile{f}})
	s.open.Add(1)
	return id, nil
}

// Finish completes the record id with r's decision and outcome, and its
// operations, and returns once that is in the journal. It runs even when
// ctx was cancelled: a cancelled call is still recorded.
func (s *Store) Finish(ctx context.Context, id int64, r *Record) error {
	defer s.open.Add(-1)
	rec := *r
	rec.ID = id
	line := finishLine(id, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	f, err := s.appendLine(line)
	if err != nil {
		return err
	}
	// A finish whose start is still queued joins it: one row goes in.
	if e := s.byID[id]; e != nil && e.start != nil && e.finish == nil {
		e.finish, e.files[1] = &rec, f
		return nil
	}
	s.enqueue(&entry{id: id, finish: &rec, files: [2]*jfile{f}})
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
	if err := s.sync(ctx); err != nil {
		return nil, err
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
	err = s.ask(ctx, request{run: func(w *writer) error {
		_, err := w.conn.ExecContext(context.Background(), `DROP TABLE IF EXISTS grants`)
		return err
	}})
	return err == nil, err
}
