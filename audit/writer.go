package audit

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

const (
	// batchDelay is how long the writer lets a batch build after its first
	// record is queued: long enough that a call's start and finish usually
	// meet in the queue and become one row, and that calls at once share a
	// commit; short enough that another process reading the log sees a
	// record soon after it is written. A person who makes a call and then
	// runs lathe audit finds it there: the command takes longer to start
	// than a batch to build. (50 ms would save a gateway about 1 % of its
	// processor time per call, and lose that.)
	batchDelay = 20 * time.Millisecond
	// maxBatch is how many queued records make the writer commit at once,
	// without waiting out batchDelay.
	maxBatch = 256
	// idBlock is how many record ids a store reserves at once, at first;
	// maxIDBlock the most, for a store that uses them fast (blockSize).
	idBlock    = 256
	maxIDBlock = 8192
	// blockRenew is how soon after the last a reservation must come for
	// its block to be twice the size.
	blockRenew = time.Second
	// maxBackoff bounds the pause between attempts after SQLite failed.
	maxBackoff = 2 * time.Second
)

// The queue's bounds (variables, for tests).
var (
	// queueLen bounds the records queued for SQLite: a Start that finds
	// the queue full waits, up to queueWait, for the writer to catch up.
	queueLen = 4096
	// queueWait is how long a Start waits for room in the queue before it
	// fails (and its call is not run): SQLite has then failed for longer
	// than its busy timeout.
	queueWait = 30 * time.Second
)

// An entry is a record on its way to SQLite: its start, its finish, or
// both when the finish came before the start was written, which then go in
// as one row.
type entry struct {
	id            int64
	start, finish *Record
	// files are the journals holding its lines, the start's and the
	// finish's (nil where there is none, as in a replay).
	files [2]*jfile
}

// A request is work for the writer goroutine, which alone uses the write
// connection.
type request struct {
	// flush: write everything queued, and replay dead stores' journals.
	flush bool
	// run, when set, runs on the write connection.
	run   func(w *writer) error
	reply chan error
}

// writer is the write connection and its prepared statements; only the
// writer goroutine uses it once the store is open.
type writer struct {
	conn                   *sql.Conn
	insert, replay, finish *sql.Stmt
	ops                    opStmts
	// inserts are the driver's statements that insert n rows at once
	// (insertRaw), by n, prepared when first needed.
	inserts map[int]driver.Stmt
	// batch is what the writer has taken from the queue and not yet
	// committed; inBatch indexes it by record id.
	batch   []*entry
	inBatch map[int64]*entry
}

// insertSQL writes a record's row, started or finished.
const insertSQL = ` INTO calls (id, call_id, parent, time_ns, tool, arguments, status, args_bytes, pid, session, kind,
	server, decision, decided_by, reason, outcome, duration_ns, result_bytes, operations_dropped)
	VALUES ` + insertRow

const insertRow = `(?, ifnull(?, ''), ?, ?, ?, ifnull(?, ''), ?, ?, ?, ifnull(?, ''), ifnull(?, ''), ifnull(?, ''),
	ifnull(?, ''), ifnull(?, ''), ifnull(?, ''), ifnull(?, ''), ?, ?, ?)`

// insertRows is how many rows one INSERT of a batch writes: a statement
// costs the driver more than a row, as for operations (opRows).
const insertRows = 32

func newWriter(wdb *sql.DB) (*writer, error) {
	ctx := context.Background()
	conn, err := wdb.Conn(ctx)
	if err != nil {
		return nil, err
	}
	w := &writer{conn: conn, inBatch: map[int64]*entry{}, inserts: map[int]driver.Stmt{}}
	for _, step := range []func() error{
		func() error { _, err := conn.ExecContext(ctx, schemaSQL); return err },
		func() error { return w.ops.prepare(ctx, conn) },
		func() error { return migrateAccess(ctx, conn) },
		func() error { return migrateParent(ctx, conn) },
		func() error { return migrateSearch(ctx, conn) },
		func() (err error) { w.insert, err = conn.PrepareContext(ctx, `INSERT`+insertSQL); return err },
		func() (err error) { w.replay, err = conn.PrepareContext(ctx, `INSERT OR IGNORE`+insertSQL); return err },
		func() (err error) {
			w.finish, err = conn.PrepareContext(ctx, `UPDATE calls SET decision = ?, decided_by = ?, reason = ?,
				status = ?, outcome = ?, duration_ns = ?, result_bytes = ?, operations_dropped = ? WHERE id = ?`)
			return err
		},
	} {
		if err := step(); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

func (w *writer) close() {
	for _, st := range []*sql.Stmt{w.insert, w.replay, w.finish} {
		if st != nil {
			st.Close()
		}
	}
	w.conn.Raw(func(any) error {
		for _, st := range w.inserts {
			st.Close()
		}
		return nil
	})
	w.ops.close()
	w.conn.Close()
}

// tx runs f in an immediate transaction: the write lock is taken at BEGIN,
// where SQLite waits out another process's lock, not at the first write,
// where a transaction that read first could only fail.
func (w *writer) tx(f func() error) error {
	ctx := context.Background()
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
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

// putAll writes a batch, within a transaction: the new rows insertRows at a
// time, then their operations, then the finishes of rows written before.
func (w *writer) putAll(batch []*entry) error {
	rows := make([]*entry, 0, len(batch))
	for _, e := range batch {
		if e.start != nil {
			rows = append(rows, e)
		}
	}
	nv := make([]driver.NamedValue, 0, 19*min(insertRows, len(rows)))
	for len(rows) > 0 {
		part := rows[:min(insertRows, len(rows))]
		rows = rows[len(part):]
		if len(part) == 1 {
			if err := w.put(part[0], false); err != nil {
				return err
			}
			continue
		}
		nv = nv[:0]
		for _, e := range part {
			nv = rowValues(nv, e)
		}
		if err := w.insertRaw(len(part), nv); err != nil {
			return err
		}
		for _, e := range part {
			if e.finish != nil && len(e.finish.Operations) > 0 {
				if err := w.ops.writeOperations(e.id, e.finish.Operations, false); err != nil {
					return err
				}
			}
		}
	}
	for _, e := range batch {
		if e.start == nil {
			if err := w.put(e, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// insertRaw inserts n rows of values nv with the driver's statement,
// prepared on the write connection when first needed: database/sql's
// checks and conversions of every value cost a batch's rows about as much
// as binding them.
func (w *writer) insertRaw(n int, nv []driver.NamedValue) error {
	return w.conn.Raw(func(dc any) error {
		st := w.inserts[n]
		if st == nil {
			pc, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("audit: the SQLite driver prepares no statement with a context")
			}
			var err error
			if st, err = pc.PrepareContext(context.Background(), `INSERT`+insertSQL+strings.Repeat(", "+insertRow, n-1)); err != nil {
				return err
			}
			w.inserts[n] = st
		}
		ex, ok := st.(driver.StmtExecContext)
		if !ok {
			return errors.New("audit: the SQLite driver's statement executes no statement with a context")
		}
		_, err := ex.ExecContext(context.Background(), nv)
		return err
	})
}

// rowValues appends the values of e's row, started or finished, as
// insertRow takes them, numbered on from those in nv.
func rowValues(nv []driver.NamedValue, e *entry) []driver.NamedValue {
	r, f, status := e.start, &Record{}, StatusStarted
	if e.finish != nil {
		f, status = e.finish, StatusDone
	}
	for _, v := range [...]driver.Value{e.id, text(r.CallID), r.Parent, r.Time.UnixNano(), r.Tool, text(r.Arguments),
		status, int64(r.ArgsBytes), int64(r.PID), text(r.Session), text(r.Kind), text(r.Server), text(f.Decision),
		text(f.DecidedBy), text(f.Reason), text(f.Outcome), int64(f.Duration), int64(f.ResultBytes),
		int64(f.OperationsDropped)} {
		nv = append(nv, driver.NamedValue{Ordinal: len(nv) + 1, Value: v})
	}
	return nv
}

// text is s as a row's value: nil when s is empty, which insertRow's
// ifnull stores as an empty text. The driver copies each text value into
// memory of SQLite's and unbinds it after the statement; a NULL costs
// neither.
func text(s string) driver.Value {
	if s == "" {
		return nil
	}
	return s
}

// rowArgs appends the values of e's row, started or finished, as insertRow
// takes them.
func rowArgs(args []any, e *entry) []any {
	for _, v := range rowValues(make([]driver.NamedValue, 0, 19), e) {
		args = append(args, v.Value)
	}
	return args
}

// put writes one entry, within a transaction: a start as a new row
// (finished when its finish is there too), a finish alone as an update.
// A replay skips a start whose row exists and applies its finish as an
// update, replacing the operations the row may have.
func (w *writer) put(e *entry, replay bool) error {
	f := e.finish
	if e.start != nil {
		st := w.insert
		if replay {
			st = w.replay
		}
		res, err := st.Exec(rowArgs(make([]any, 0, 19), e)...)
		if err != nil {
			return err
		}
		inserted := true
		if replay {
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			inserted = n > 0
		}
		if f == nil {
			return nil
		}
		if inserted {
			return w.ops.writeOperations(e.id, f.Operations, false)
		}
	}
	if _, err := w.finish.Exec(f.Decision, f.DecidedBy, f.Reason, StatusDone, f.Outcome, int64(f.Duration),
		f.ResultBytes, f.OperationsDropped, e.id); err != nil {
		return err
	}
	return w.ops.writeOperations(e.id, f.Operations, replay)
}

// run is the writer goroutine. It moves queued records into SQLite, one
// transaction per batch: it lets a batch build for batchDelay after the
// first record is queued (or until maxBatch are), and writes at once when
// a reader asks. When SQLite fails, the records stay queued (and in the
// journal) and are tried again after a pause that grows to maxBackoff.
// It serves requests meanwhile, and on quit writes what is left.
func (s *Store) run() {
	defer close(s.done)
	w := s.w
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var backoff time.Duration
	var retryAt time.Time
	commit := func() error {
		err := s.commit(w)
		if err == nil {
			backoff, retryAt = 0, time.Time{}
			return nil
		}
		backoff = min(max(2*backoff, 50*time.Millisecond), maxBackoff)
		retryAt = time.Now().Add(backoff)
		return err
	}
	for {
		var due <-chan time.Time
		if !s.held.Load() {
			s.mu.Lock()
			n, since := len(s.pending)+len(w.batch), s.since
			s.mu.Unlock()
			if n > 0 {
				at := since.Add(batchDelay)
				if n >= maxBatch {
					at = time.Now()
				}
				if len(w.batch) > 0 && at.Before(retryAt) {
					at = retryAt
				}
				timer.Reset(time.Until(at))
				due = timer.C
			}
		}
		select {
		case <-s.wake:
		case <-due:
			commit()
		case rq := <-s.reqs:
			var err error
			if rq.flush {
				err = s.recoverJournals(w)
				if s.held.Load() {
					err = errors.Join(err, errHeld)
				} else if cerr := commit(); cerr != nil {
					err = errors.Join(err, cerr)
				}
			}
			if rq.run != nil {
				err = rq.run(w)
			}
			if rq.reply != nil {
				rq.reply <- err
			}
		case <-s.quit:
			timer.Stop()
			s.held.Store(false)
			s.drained = commit()
			return
		}
		timer.Stop()
	}
}

// errHeld is a flush's error while a test holds the writer back.
var errHeld = errors.New("the writer is held back")

// commit writes the queued records: everything queued joins the batch
// (a finish whose start is in the batch joins its entry), and the batch
// goes in as one transaction. When that fails, each entry is tried in a
// transaction of its own, so that one that SQLite refuses does not hold
// back the others; what fails stays in the batch.
func (s *Store) commit(w *writer) error {
	s.mu.Lock()
	merged := 0
	for _, e := range s.pending {
		if b := w.inBatch[e.id]; b != nil && e.start == nil && b.finish == nil {
			b.finish, b.files[1] = e.finish, e.files[0]
			merged++
			continue
		}
		w.batch = append(w.batch, e)
		w.inBatch[e.id] = e
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.byID)
	s.queued -= merged
	s.mu.Unlock()
	if len(w.batch) == 0 {
		return nil
	}
	err := w.tx(func() error { return w.putAll(w.batch) })
	done := w.batch
	var kept []*entry
	if err != nil && len(w.batch) > 1 && !isBusy(err) {
		done = nil
		for _, e := range w.batch {
			if w.tx(func() error { return w.put(e, false) }) == nil {
				done = append(done, e)
			} else {
				kept = append(kept, e)
			}
		}
	} else if err != nil {
		done, kept = nil, w.batch
	}
	for _, e := range done {
		for _, f := range e.files {
			if f != nil {
				f.lines.Add(-1)
			}
		}
	}
	clear(w.inBatch)
	for _, e := range kept {
		w.inBatch[e.id] = e
	}
	w.batch = append(w.batch[:0:0], kept...)
	s.written(len(done))
	if err != nil {
		return fmt.Errorf("audit: writing %d records to %s (they are kept, and tried again): %w", len(kept), s.path, err)
	}
	return nil
}

// written accounts for n records now in SQLite: room in the queue, and the
// journals whose every line is in SQLite removed.
func (s *Store) written(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queued -= n
	if s.room != nil && s.queued < queueLen {
		close(s.room)
		s.room = nil
	}
	kept := s.retired[:0]
	for _, f := range s.retired {
		if f.lines.Load() == 0 {
			f.remove()
		} else {
			kept = append(kept, f)
		}
	}
	clear(s.retired[len(kept):])
	s.retired = kept
}

// ask has the writer run rq and returns its error.
func (s *Store) ask(ctx context.Context, rq request) error {
	rq.reply = make(chan error, 1)
	select {
	case s.reqs <- rq:
	case <-s.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-rq.reply:
		return err
	case <-s.done:
		// The writer stopped before it came to the request.
		select {
		case err := <-rq.reply:
			return err
		default:
			return ErrClosed
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sync waits until every record this process wrote before it to this
// database (through any of its stores) is in SQLite, and dead stores'
// journals are replayed, so that a read sees them.
func (s *Store) sync(ctx context.Context) error {
	var errs []error
	for _, o := range storesOf(s.key) {
		if err := o.ask(ctx, request{flush: true}); err != nil && (o == s || !errors.Is(err, ErrClosed)) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// openStores is every open store of this process, by its database's absolute
// path: a read through one store waits for the writes of the others.
var openStores = struct {
	sync.Mutex
	m map[string][]*Store
}{m: map[string][]*Store{}}

func register(s *Store) {
	openStores.Lock()
	defer openStores.Unlock()
	openStores.m[s.key] = append(openStores.m[s.key], s)
}

func unregister(s *Store) {
	openStores.Lock()
	defer openStores.Unlock()
	l := slices.DeleteFunc(openStores.m[s.key], func(o *Store) bool { return o == s })
	if len(l) == 0 {
		delete(openStores.m, s.key)
	} else {
		openStores.m[s.key] = l
	}
}

func storesOf(key string) []*Store {
	openStores.Lock()
	defer openStores.Unlock()
	return slices.Clone(openStores.m[key])
}
