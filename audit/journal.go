package audit

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lathe-tools/lathe/internal/jsonscan"
)

// The journal is what makes a record durable before SQLite has it. Each
// open Store appends one line per write (a record started, a record
// finished) to a file of its own beside the database, with one write(2),
// and returns: the line is then in the kernel's page cache and survives a
// crash of lathe, as a WAL commit with synchronous=NORMAL does (neither
// survives a crash of the machine that loses what the page cache had not
// written out). The writer goroutine moves the records into SQLite behind
// the calls, in batches, and a journal whose every line is in SQLite is
// removed. A store whose process died leaves its journal; the next store
// to open the database, or to read it, replays it into SQLite.
//
// A journal is named after the database with a random suffix
// (lathe.db.journal.<hex>), created with O_EXCL and O_NOFOLLOW, mode 0600,
// and locked (flock) while its store is open, so that a live process's
// journal is never taken for a dead one's. A file that is not a regular
// file of this user's, readable by no one else, is left alone whatever
// its name.

// journalMagic is the first line's "t" of every journal.
const journalMagic = "lathe-audit-journal"

// rotateBytes is the size past which a store starts a new journal; the old
// one is removed once every line of it is in SQLite. (A variable, for
// tests.)
var rotateBytes int64 = 4 << 20

// journalPrefix is the start of the name of every journal of the database
// at path: never SQLite's own <db>-journal, <db>-wal or <db>-shm.
func journalPrefix(path string) string { return filepath.Base(path) + ".journal." }

// A jline is one line of a journal: the header (T journalMagic), a record
// started (T "start") or finished (T "finish"). Fields have short names,
// and are left out when empty, so that a line costs little to write.
type jline struct {
	T  string `json:"t"`
	ID int64  `json:"id,omitempty"`
	// The header's.
	V  int    `json:"v,omitempty"`
	DB string `json:"db,omitempty"`
	// A start's.
	CallID    string `json:"c,omitempty"`
	Parent    int64  `json:"p,omitempty"`
	Time      int64  `json:"ts,omitempty"`
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"a,omitempty"`
	ArgsBytes int    `json:"ab,omitempty"`
	PID       int    `json:"pid,omitempty"`
	Kind      string `json:"k,omitempty"`
	Session   string `json:"s,omitempty"`
	Server    string `json:"sv,omitempty"`
	// A finish's.
	Decision    string `json:"d,omitempty"`
	DecidedBy   string `json:"by,omitempty"`
	Reason      string `json:"r,omitempty"`
	Outcome     string `json:"o,omitempty"`
	Duration    int64  `json:"du,omitempty"`
	ResultBytes int    `json:"rb,omitempty"`
	Ops         []jop  `json:"ops,omitempty"`
	Dropped     int    `json:"dr,omitempty"`
}

// jop is an Operation in a journal line.
type jop struct {
	Kind      string `json:"k"`
	Subject   string `json:"s,omitempty"`
	Approval  string `json:"a,omitempty"`
	DecidedBy string `json:"by,omitempty"`
	Reason    string `json:"r,omitempty"`
	Error     string `json:"e,omitempty"`
	Bytes     int64  `json:"b,omitempty"`
	Time      int64  `json:"t,omitempty"`
	Duration  int64  `json:"du,omitempty"`
}

// startLine encodes the start of record id. The lines are written by hand
// rather than by encoding/json's reflection, which cost a call several
// microseconds on its path; parseJournal reads them with encoding/json,
// and TestJournalLineEncoding holds the two to the same meaning.
func startLine(id int64, r *Record) []byte {
	b := make([]byte, 0, 96+len(r.CallID)+len(r.Tool)+len(r.Arguments)+len(r.Session)+len(r.Server))
	b = append(b, `{"t":"start","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = appendStrField(b, "c", r.CallID)
	b = appendIntField(b, "p", r.Parent)
	b = appendIntField(b, "ts", r.Time.UnixNano())
	b = appendStrField(b, "tool", r.Tool)
	b = appendStrField(b, "a", r.Arguments)
	b = appendIntField(b, "ab", int64(r.ArgsBytes))
	b = appendIntField(b, "pid", int64(r.PID))
	b = appendStrField(b, "k", r.Kind)
	b = appendStrField(b, "s", r.Session)
	b = appendStrField(b, "sv", r.Server)
	return append(b, "}\n"...)
}

// finishLine encodes the end of record id, with its operations.
func finishLine(id int64, r *Record) []byte {
	b := make([]byte, 0, 96+len(r.Reason)+len(r.Outcome)+120*len(r.Operations))
	b = append(b, `{"t":"finish","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = appendStrField(b, "d", r.Decision)
	b = appendStrField(b, "by", r.DecidedBy)
	b = appendStrField(b, "r", r.Reason)
	b = appendStrField(b, "o", r.Outcome)
	b = appendIntField(b, "du", int64(r.Duration))
	b = appendIntField(b, "rb", int64(r.ResultBytes))
	if len(r.Operations) > 0 {
		b = append(b, `,"ops":[`...)
		for i := range r.Operations {
			op := &r.Operations[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"k":`...)
			b = jsonscan.AppendString(b, op.Kind)
			b = appendStrField(b, "s", op.Subject)
			b = appendStrField(b, "a", op.Approval)
			b = appendStrField(b, "by", op.DecidedBy)
			b = appendStrField(b, "r", op.Reason)
			b = appendStrField(b, "e", op.Error)
			b = appendIntField(b, "b", op.Bytes)
			b = appendIntField(b, "t", op.Time.UnixNano())
			b = appendIntField(b, "du", int64(op.Duration))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendIntField(b, "dr", int64(r.OperationsDropped))
	return append(b, "}\n"...)
}

// appendStrField appends ,"key":"s", unless s is empty.
func appendStrField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return jsonscan.AppendString(b, s)
}

// appendIntField appends ,"key":n, unless n is zero.
func appendIntField(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, n, 10)
}

// record is the Record a start or a finish line holds.
func (l *jline) record() *Record {
	r := &Record{ID: l.ID, CallID: l.CallID, Parent: l.Parent, Time: time.Unix(0, l.Time), Tool: l.Tool,
		Arguments: l.Arguments, ArgsBytes: l.ArgsBytes, PID: l.PID, Kind: l.Kind, Session: l.Session, Server: l.Server,
		Decision: l.Decision, DecidedBy: l.DecidedBy, Reason: l.Reason, Outcome: l.Outcome,
		Duration: time.Duration(l.Duration), ResultBytes: l.ResultBytes, OperationsDropped: l.Dropped}
	for _, op := range l.Ops {
		r.Operations = append(r.Operations, Operation{Kind: op.Kind, Subject: op.Subject, Approval: op.Approval,
			DecidedBy: op.DecidedBy, Reason: op.Reason, Error: op.Error, Bytes: op.Bytes, Time: time.Unix(0, op.Time),
			Duration: time.Duration(op.Duration)})
	}
	return r
}

// A jfile is one journal of this store.
type jfile struct {
	f    *os.File
	path string
	size int64 // guarded by Store.mu
	// lines counts the records of this file not yet in SQLite.
	lines atomic.Int64
	// broken says a write to it failed and could not be undone: nothing
	// more is appended to it.
	broken bool
	// m maps the file, where lines are copied while they fit (see
	// journalmap_linux.go); nil where the file is written with write(2).
	m []byte
}

// createJournal makes a new journal in dir, locked, its header written,
// mapped to hold rotateBytes, or need bytes after its header if more.
func createJournal(dir, prefix, db string, need int64) (*jfile, error) {
	header, _ := json.Marshal(&jline{T: journalMagic, V: 1, DB: db})
	header = append(header, '\n')
	var last error
	for range 8 {
		var rnd [8]byte
		rand.Read(rnd[:])
		path := filepath.Join(dir, prefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|openFlags, 0o600)
		if errors.Is(err, fs.ErrExist) {
			last = err
			continue
		}
		if err != nil {
			return nil, err
		}
		// Another store may have found the file between its creation and
		// this lock, taken it for a dead process's (it is empty) and
		// removed it: the lock then fails, or holds a file no longer at
		// path. Either way, another name.
		if err := lockOwn(f); err != nil {
			f.Close()
			last = err
			continue
		}
		if fi, err := f.Stat(); err != nil {
			f.Close()
			return nil, err
		} else if pi, err := os.Lstat(path); err != nil || !os.SameFile(fi, pi) {
			f.Close()
			last = fmt.Errorf("%s was replaced while it was created", path)
			continue
		}
		if _, err := f.Write(header); err != nil {
			os.Remove(path)
			f.Close()
			return nil, err
		}
		jf := &jfile{f: f, path: path, size: int64(len(header))}
		// Without a mapping the journal is written with write(2): slower,
		// as safe.
		_ = jf.mapJournal(max(rotateBytes, jf.size+need))
		return jf, nil
	}
	return nil, fmt.Errorf("no new journal in %s: %w", dir, last)
}

// append writes line, which ends in a newline, at the end of jf: copied
// into its mapping while it fits, else with one write, a partial write
// undone, so that a line is in the file whole or not at all.
func (jf *jfile) append(line []byte) error {
	if jf.m != nil {
		if jf.size+int64(len(line)) <= int64(len(jf.m)) {
			if err := jf.copyLine(line); err != nil {
				jf.broken = true
				return err
			}
			jf.size += int64(len(line))
			jf.lines.Add(1)
			return nil
		}
		// Full (no new journal could be had): the file is cut after its
		// last line and grows by write(2) from there.
		if err := jf.unmap(); err != nil {
			jf.broken = true
			return err
		}
	}
	n, err := jf.f.Write(line)
	if err == nil {
		jf.size += int64(n)
		jf.lines.Add(1)
		return nil
	}
	if n > 0 {
		if terr := jf.f.Truncate(jf.size); terr != nil {
			// The partial line stays: it is the file's last, which
			// recovery skips as torn, and nothing goes after it.
			jf.broken = true
		}
	}
	return err
}

// remove deletes the journal and then lets go of its lock.
func (jf *jfile) remove() {
	os.Remove(jf.path)
	jf.close()
}

// close ends the journal's mapping, cutting the file after its last line,
// and lets go of its lock, leaving the file for a replay.
func (jf *jfile) close() {
	jf.unmap()
	jf.f.Close()
}

// ErrJournal wraps the error of a journal that is not lathe's: recovery
// refuses it, and keeps the file.
var ErrJournal = errors.New("not a journal of lathe's audit log")

// errNewer is parseJournal's answer for the journal of a newer lathe,
// whose lines this one may not understand: it is left for that lathe.
var errNewer = errors.New("a journal of a newer lathe")

// parseJournal reads a journal's records, a start and its finish in the
// file merged into one entry. A last line without its newline (a crash in
// the middle of the write) is skipped and counted in torn; any other line
// that is not a journal line fails the whole file, naming it and the line.
func parseJournal(path string, data []byte, db string) (entries []*entry, torn int, err error) {
	byID := map[int64]*entry{}
	// The zeros after a mapped journal's last line are room it did not use.
	data = bytes.TrimRight(data, "\x00")
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return entries, torn + 1, nil
		}
		raw := data[:i]
		data = data[i+1:]
		var l jline
		if z := bytes.LastIndexByte(raw, 0); z >= 0 && n > 1 {
			// No line holds a zero byte (JSON escapes it): zeros in a
			// line are room of a mapped journal whose pages did not all
			// reach the disk before the machine stopped. The line they
			// cut is torn; what follows them is a line, or the end of one.
			torn++
			if unmarshalLine(raw[z+1:], &l, true) != nil {
				continue
			}
		} else if unmarshalLine(raw, &l, n > 1) != nil {
			return nil, 0, fmt.Errorf("%s:%d: %w", path, n, ErrJournal)
		}
		if n == 1 {
			if l.T == journalMagic && l.V > 1 && l.DB == db {
				return nil, 0, errNewer
			}
			if l.T != journalMagic || l.V != 1 || l.DB != db {
				return nil, 0, fmt.Errorf("%s:%d: %w (its first line is not a journal's header for %s)", path, n, ErrJournal, db)
			}
			continue
		}
		if l.ID <= 0 {
			return nil, 0, fmt.Errorf("%s:%d: %w (no record id)", path, n, ErrJournal)
		}
		switch l.T {
		case "start":
			e := &entry{id: l.ID, start: l.record()}
			byID[l.ID] = e
			entries = append(entries, e)
		case "finish":
			if e := byID[l.ID]; e != nil && e.finish == nil {
				e.finish = l.record()
				continue
			}
			entries = append(entries, &entry{id: l.ID, finish: l.record()})
		default:
			return nil, 0, fmt.Errorf("%s:%d: %w (a line of kind %q)", path, n, ErrJournal, l.T)
		}
	}
	return entries, torn, nil
}

// unmarshalLine decodes raw, one journal line, into l: strictly (no field this
// lathe does not know) but for a header, where a newer lathe may say more.
func unmarshalLine(raw []byte, l *jline, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(l); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one value")
	}
	return nil
}

// recoverJournals replays into SQLite every journal of this database that
// no live store holds, then removes them. A dead store's records may span
// several of its journals (a start in one, its finish in the next), whose
// names say nothing of their order: so all are read first, a finish joined
// to its start whichever file holds it, and written in one transaction.
// A journal that is not lathe's fails the replay of all of them, and they
// are all kept. It runs on the writer's connection.
//
// Replay is idempotent, as a store that died may have written part of its
// journal to SQLite already, and a replay cut short is done again: a start
// whose record exists is skipped, a finish is applied again.
func (s *Store) recoverJournals(w *writer) error {
	dir := filepath.Dir(s.path)
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var dead []*os.File
	defer func() {
		for _, f := range dead {
			f.Close()
		}
	}()
	var entries []*entry
	byID := map[int64]*entry{}
	torn := 0
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), s.prefix) || !de.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, de.Name())
		f := takeJournal(path)
		if f == nil {
			continue
		}
		dead = append(dead, f)
		data, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		es, n, err := parseJournal(path, data, filepath.Base(s.path))
		if errors.Is(err, errNewer) {
			dead = dead[:len(dead)-1]
			f.Close()
			continue
		}
		if err != nil {
			return err
		}
		torn += n
		for _, e := range es {
			if b := byID[e.id]; b != nil && e.start == nil && b.finish == nil {
				b.finish = e.finish
				continue
			}
			if b := byID[e.id]; b != nil && e.start != nil && b.start == nil && e.finish == nil {
				b.start = e.start
				continue
			}
			byID[e.id] = e
			entries = append(entries, e)
		}
	}
	if len(dead) == 0 {
		return nil
	}
	if len(entries) > 0 {
		if err := w.tx(func() error {
			for _, e := range entries {
				if err := w.put(e, true); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return fmt.Errorf("replaying %d journals: %w", len(dead), err)
		}
	}
	s.recovered.files.Add(int64(len(dead)))
	s.recovered.records.Add(int64(len(entries)))
	s.recovered.torn.Add(int64(torn))
	var errs []error
	for _, f := range dead {
		errs = append(errs, os.Remove(f.Name()))
	}
	return errors.Join(errs...)
}

// takeJournal opens and locks the journal at path, if it is a dead
// store's: a regular file of this user's that nobody else can read, with
// one name, whose lock it takes, still at path once locked. Anything else
// (a symbolic link, a FIFO, another user's file, a live store's journal)
// is left alone: nil.
func takeJournal(path string) *os.File {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || !owned(fi) || tryLock(f) != nil {
		f.Close()
		return nil
	}
	if pi, err := os.Lstat(path); err != nil || !os.SameFile(fi, pi) {
		f.Close()
		return nil
	}
	return f
}
