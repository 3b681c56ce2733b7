package audit_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
)

// The journal's attacks and crashes: a process killed with records only in
// its journal, or in the middle of its batches; journals planted by
// someone else (a symbolic link, a FIFO, another user's file, garbage); a
// journal cut short; SQLite locked by another process past the busy
// timeout; a store closed with records queued.

// killEnv makes this test binary a process that writes records and
// reports each (see killed), until it is killed.
const killEnv = "AUDIT_KILL_DB"

// killed is the process of startKilled. With AUDIT_KILL_HOLD set its writer
// is held back, so that its records exist in its journal alone: it writes
// 20 records started and finished (two operations each) and 10 started
// only, says "ready", and waits to be killed. Without it, it writes
// records as fast as it can, finishing two of every three, with the writer
// running, and says "s ID" once Start has returned and "f ID" once Finish
// has: everything it reported must survive SIGKILL.
func killed(path string) {
	if os.Getenv("AUDIT_KILL_ROTATE") != "" {
		audit.SetRotateBytes(1024)
	}
	s, err := audit.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	if os.Getenv("AUDIT_KILL_HOLD") != "" {
		audit.HoldWriter(s, true)
		for i := range 30 {
			r := killRecord(i)
			id, err := s.Start(ctx, r)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			if i < 20 {
				r.Outcome, r.Decision, r.Duration = "ok", "allow", time.Millisecond
				r.Operations = killOps(i)
				if err := s.Finish(ctx, id, r); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
			}
		}
		fmt.Fprintln(out, "ready")
		out.Flush()
		select {}
	}
	for i := 0; ; i++ {
		r := killRecord(i)
		id, err := s.Start(ctx, r)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "s %d %d\n", id, i)
		out.Flush()
		if i%3 != 2 {
			r.Outcome, r.Decision, r.Duration = "ok", "allow", time.Millisecond
			r.Operations = killOps(i)
			if err := s.Finish(ctx, id, r); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "f %d %d\n", id, i)
			out.Flush()
		}
	}
}

func killRecord(i int) *audit.Record {
	return &audit.Record{CallID: "k" + strconv.Itoa(i), Time: time.Now(), Tool: "look", Arguments: `{"path":"x"}`,
		ArgsBytes: 12, PID: os.Getpid(), Session: "sess"}
}

func killOps(i int) []audit.Operation {
	return []audit.Operation{
		{Kind: "read", Subject: "a" + strconv.Itoa(i), Approval: "allow", Bytes: 3, Time: time.Now()},
		{Kind: "write", Subject: "b" + strconv.Itoa(i), Approval: "deny", Reason: "no", Time: time.Now()},
	}
}

func startKilled(t *testing.T, ctx context.Context, path string, hold bool, env ...string) (*exec.Cmd, *bufio.Reader, *syncBuf) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killEnv+"="+path)
	if hold {
		cmd.Env = append(cmd.Env, "AUDIT_KILL_HOLD=1")
	}
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errb := &syncBuf{}
	cmd.Stderr = errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewReader(stdout), errb
}

// rawCount counts the rows of the calls table, read with a connection of
// its own (no store: no journal replayed).
func rawCount(t *testing.T, path string) int {
	t.Helper()
	return rawInt(t, path, `SELECT count(*) FROM calls`)
}

// rawInt answers query, whose answer is a number, with a connection of its
// own to the database at path.
func rawInt(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// journals lists the journals beside the database at path.
func journals(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(path), audit.JournalPrefix(path)+"*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKilledWithRecordsInJournalOnly: a process whose writer has put
// nothing in SQLite is killed; its journal alone holds its records. While
// it lives, another store leaves its journal alone; once it is dead, the
// next read replays every record, finished ones done with their operations,
// the others incomplete, and removes the journal.
func TestKilledWithRecordsInJournalOnly(t *testing.T) {
	t.Run("one journal", func(t *testing.T) { killedWithRecordsInJournalOnly(t, false) })
	// Its journal started anew every 1 KiB: the records are in several
	// files, none of them removed, as none was written to SQLite.
	t.Run("rotated", func(t *testing.T) { killedWithRecordsInJournalOnly(t, true) })
}

func killedWithRecordsInJournalOnly(t *testing.T, rotate bool) {
	s, path := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var env []string
	if rotate {
		env = append(env, "AUDIT_KILL_ROTATE=1")
	}
	cmd, out, errb := startKilled(t, ctx, path, true, env...)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the writing process did not get ready (killed at the test's deadline if it hung): %q %v: %s", line, err, errb)
	}
	if n := rawCount(t, path); n != 0 {
		t.Fatalf("the held writer put %d rows in SQLite; the test needs the journal to be all there is", n)
	}
	files := len(journals(t, path))
	if rotate && files < 3 || !rotate && files != 1 {
		t.Fatalf("%d journals", files)
	}
	// A live process's journal is not replayed.
	recs, err := s.List(ctx, audit.Filter{Limit: -1})
	if err != nil || len(recs) != 0 || len(journals(t, path)) != files {
		t.Fatalf("a live process's journal was replayed: %d records, %v, journals %v", len(recs), err, journals(t, path))
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	recs, err = s.List(ctx, audit.Filter{Limit: -1, Operations: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 30 {
		t.Fatalf("%d records after the kill, want 30: %+v", len(recs), recs)
	}
	for _, r := range recs {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.CallID, "k"))
		if i < 20 {
			if r.Status != audit.StatusDone || r.Outcome != "ok" || r.Decision != "allow" || len(r.Operations) != 2 ||
				r.Operations[1].Subject != "b"+strconv.Itoa(i) || r.Operations[1].Reason != "no" || r.Session != "sess" {
				t.Errorf("finished record %d: %+v", i, r)
			}
		} else if !r.Incomplete || len(r.Operations) != 0 || r.Tool != "look" {
			t.Errorf("started record %d: %+v", i, r)
		}
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals left after the replay: %v", j)
	}
	if got, records, torn := audit.Recovered(s); got != int64(files) || records < 30 || torn != 0 {
		t.Errorf("recovered %d files, %d records, %d torn lines; want %d, 30 or more (a record whose start and finish are in two files counts twice), 0",
			got, records, torn, files)
	}
}

// TestRotatedJournalsRemoved: a store starts a new journal when the one in
// use grows past its bound, and removes each old one once all its records
// are in SQLite; Close removes the last.
func TestRotatedJournalsRemoved(t *testing.T) {
	t.Cleanup(audit.SetRotateBytes(2048))
	s, path := open(t)
	ctx := context.Background()
	audit.HoldWriter(s, true)
	for i := range 100 {
		r := killRecord(i)
		r.Outcome = "ok"
		record(t, ctx, s, r)
	}
	if n := len(journals(t, path)); n < 5 {
		t.Fatalf("%d journals for 200 lines of 2 KiB files", n)
	}
	audit.HoldWriter(s, false)
	if got := callIDs(t, s); len(got) != 100 {
		t.Fatalf("%d records, want 100", len(got))
	}
	if j := journals(t, path); len(j) != 1 {
		t.Errorf("journals once every record is in SQLite: %v; want the one in use", j)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals after Close: %v", j)
	}
}

// TestFullQueueWaits: with the queue full (the writer held back), a Start
// waits for room rather than dropping a record or growing the queue, and
// goes on once the writer has taken the queue.
func TestFullQueueWaits(t *testing.T) {
	t.Cleanup(audit.SetQueue(8, time.Minute))
	s, _ := open(t)
	ctx := context.Background()
	audit.HoldWriter(s, true)
	write := func() error {
		r := killRecord(0)
		id, err := s.Start(ctx, r)
		if err == nil {
			err = s.Finish(ctx, id, r)
		}
		return err
	}
	for range 8 {
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- write() }()
	select {
	case err := <-done:
		t.Fatalf("a Start with the queue full did not wait: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	audit.HoldWriter(s, false)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a Start waiting for room in the queue hung after the writer went on")
	}
	recs, err := s.List(ctx, audit.Filter{Limit: -1})
	if err != nil || len(recs) != 9 {
		t.Fatalf("%d records, %v; want 9", len(recs), err)
	}
}

// TestFullQueueRefusesAfterWaiting: a Start that finds no room for longer
// than it may wait fails (its call is not run), and writes nothing.
func TestFullQueueRefusesAfterWaiting(t *testing.T) {
	t.Cleanup(audit.SetQueue(8, 100*time.Millisecond))
	s, path := open(t)
	ctx := context.Background()
	audit.HoldWriter(s, true)
	var ids []int64
	for i := range 8 {
		id, err := s.Start(ctx, killRecord(i))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	j := journals(t, path)
	if len(j) != 1 {
		t.Fatalf("journals: %v", j)
	}
	before, _ := os.ReadFile(j[0])
	if _, err := s.Start(ctx, killRecord(8)); err == nil {
		t.Fatal("a Start with the queue full past its wait succeeded")
	}
	if after, _ := os.ReadFile(j[0]); !bytes.Equal(after, before) {
		t.Errorf("a refused Start wrote to the journal: %q, then %q", bytes.TrimRight(before, "\x00"), bytes.TrimRight(after, "\x00"))
	}
	audit.HoldWriter(s, false)
	for _, id := range ids {
		if err := s.Finish(ctx, id, killRecord(0)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKilledMidBatch kills a process while it writes, its writer running,
// at some point in its batches: every record it said it had started is
// there, and every one it said it had finished is done, with its
// operations; ids are never given twice.
func TestKilledMidBatch(t *testing.T) {
	for round := range 3 {
		t.Run(strconv.Itoa(round), func(t *testing.T) {
			_, path := open(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd, out, errb := startKilled(t, ctx, path, false)
			started, finished := map[int64]int{}, map[int64]bool{}
			// Kill it at a different point each round, mid-batch.
			want := 300 + 450*round
			var lines []string
			for len(lines) < want {
				line, err := out.ReadString('\n')
				if err != nil {
					t.Fatalf("the writing process stopped: %v: %s", err, errb)
				}
				lines = append(lines, line)
			}
			cmd.Process.Signal(syscall.SIGKILL)
			rest, _ := io.ReadAll(out)
			cmd.Wait()
			all := strings.Split(strings.Join(lines, "")+string(rest), "\n")
			for _, l := range all[:len(all)-1] {
				var kind string
				var id int64
				var i int
				if _, err := fmt.Sscanf(l, "%s %d %d", &kind, &id, &i); err != nil {
					// The kill cut this line: its write had not returned.
					continue
				}
				if kind == "s" {
					if j, ok := started[id]; ok && j != i {
						t.Fatalf("id %d given to records %d and %d", id, j, i)
					}
					started[id] = i
				} else {
					finished[id] = true
				}
			}
			s, err := audit.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			recs, err := s.List(ctx, audit.Filter{Limit: -1, Operations: true})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[int64]audit.Record{}
			for _, r := range recs {
				byID[r.ID] = r
			}
			lost := 0
			for id, i := range started {
				r, ok := byID[id]
				switch {
				case !ok:
					lost++
				case r.CallID != "k"+strconv.Itoa(i):
					t.Errorf("record %d is %q, want k%d", id, r.CallID, i)
				case finished[id] && (r.Status != audit.StatusDone || len(r.Operations) != 2):
					t.Errorf("record %d was finished before the kill: %+v", id, r)
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d records reported written are lost", lost, len(started))
			}
		})
	}
}

// writeJournal writes a journal beside the database at path, as a dead
// store would have, and returns its path.
func writeJournal(t *testing.T, path, suffix, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(filepath.Dir(path), audit.JournalPrefix(path)+suffix)
	header := `{"t":"lathe-audit-journal","v":1,"db":"` + filepath.Base(path) + `"}` + "\n"
	if err := os.WriteFile(p, []byte(header+body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// deadBody is two records of a dead store, one finished.
const deadBody = `{"t":"start","id":900,"c":"dead1","ts":1,"tool":"look","a":"{}","pid":7}
{"t":"start","id":901,"c":"dead2","ts":2,"tool":"look","a":"{}","pid":7}
{"t":"finish","id":900,"d":"allow","o":"ok","ops":[{"k":"read","s":"f.txt","a":"allow"}]}
`

// newDB makes a database at a path of its own, with no store open on it.
func newDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".lathe", "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return path
}

func callIDs(t *testing.T, s *audit.Store) map[string]audit.Record {
	t.Helper()
	recs, err := s.List(context.Background(), audit.Filter{Limit: -1, Operations: true})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]audit.Record{}
	for _, r := range recs {
		m[r.CallID] = r
	}
	return m
}

// TestDeadJournalReplayedOnce: a dead store's journal is replayed at Open
// (finished records done, with their operations) and removed; a replay of
// records already in SQLite (a store that died after its batch committed,
// before it removed its journal) changes nothing.
func TestDeadJournalReplayedOnce(t *testing.T) {
	path := newDB(t)
	writeJournal(t, path, "dead", deadBody, 0o600)
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got := callIDs(t, s)
	if r := got["dead1"]; r.ID != 900 || r.Status != audit.StatusDone || len(r.Operations) != 1 || r.Operations[0].Subject != "f.txt" {
		t.Errorf("dead1: %+v", r)
	}
	if r := got["dead2"]; r.ID != 901 || !r.Incomplete {
		t.Errorf("dead2: %+v", r)
	}
	s.Close()
	// The same journal again: already in SQLite.
	writeJournal(t, path, "again", deadBody, 0o600)
	s, err = audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got = callIDs(t, s)
	if len(got) != 2 || len(got["dead1"].Operations) != 1 {
		t.Errorf("a second replay changed the log: %+v", got)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
	// New records take ids past the replayed ones.
	r := &audit.Record{Tool: "new", Time: time.Now()}
	id, err := s.Start(context.Background(), r)
	if err != nil || id <= 901 {
		t.Errorf("a new record's id %d (%v) is not past the replayed ones", id, err)
	}
	s.Finish(context.Background(), id, r)
}

// TestPlantedJournalsLeftAlone: files under a journal's name that are not
// this user's own journals are neither read nor removed, nor followed: a
// symbolic link to a journal-looking file elsewhere, a FIFO (which must not
// hang Open), a hard link to another of the user's files, a journal others
// can read, another user's file.
func TestPlantedJournalsLeftAlone(t *testing.T) {
	path := newDB(t)
	dir := filepath.Dir(path)
	prefix := audit.JournalPrefix(path)
	// The target of the link looks like a journal of this database.
	elsewhere := filepath.Join(t.TempDir(), "target")
	header := `{"t":"lathe-audit-journal","v":1,"db":"lathe.db"}` + "\n"
	linked := `{"t":"start","id":700,"c":"via-link","ts":1,"tool":"look"}` + "\n"
	if err := os.WriteFile(elsewhere, []byte(header+linked), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, prefix+"link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, prefix+"fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A hard link to another file of the user's, which looks like a
	// journal with its last line cut short (it has no newline): replaying
	// it would remove it.
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("key material"), 0o600); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, prefix+"hard")
	if err := os.Link(secret, hard); err != nil {
		t.Fatal(err)
	}
	loose := writeJournal(t, path, "loose", `{"t":"start","id":701,"c":"loose","ts":1,"tool":"look"}`+"\n", 0o644)
	var foreign string
	if os.Geteuid() == 0 {
		foreign = writeJournal(t, path, "foreign", `{"t":"start","id":702,"c":"foreign","ts":1,"tool":"look"}`+"\n", 0o600)
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	opened := make(chan error, 1)
	var s *audit.Store
	go func() {
		var err error
		s, err = audit.Open(path)
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Open hung on a planted FIFO")
	}
	defer s.Close()
	if got := callIDs(t, s); len(got) != 0 {
		t.Errorf("records read from planted files: %+v", got)
	}
	if b, err := os.ReadFile(elsewhere); err != nil || string(b) != header+linked {
		t.Errorf("the link's target was changed: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(dir, prefix+"link"), filepath.Join(dir, prefix+"fifo"), hard, loose, foreign} {
		if p == "" {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("a planted file was removed: %v", err)
		}
	}
	if foreign == "" {
		t.Log("not root: another user's journal is not tried")
	}
}

// TestGarbageJournalRefused: a journal with a line that is not lathe's
// fails Open with its file and line, and is kept; once the line is gone,
// it is replayed.
func TestGarbageJournalRefused(t *testing.T) {
	path := newDB(t)
	p := writeJournal(t, path, "garbage", `{"t":"start","id":900,"c":"ok1","ts":1,"tool":"look"}`+"\nrm -rf /\n", 0o600)
	_, err := audit.Open(path)
	if err == nil || !errors.Is(err, audit.ErrJournal) || !strings.Contains(err.Error(), p+":3") {
		t.Fatalf("Open with a garbage journal: %v; want an error naming %s:3", err, p)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the garbage journal was not kept: %v", err)
	}
	for _, bad := range []string{
		`{"t":"start","id":900,"c":"x","unknown":1}`,
		`{"t":"drop","id":900}`,
		`{"t":"start","c":"no id"}`,
	} {
		writeJournal(t, path, "garbage", bad+"\n", 0o600)
		if _, err := audit.Open(path); !errors.Is(err, audit.ErrJournal) {
			t.Errorf("a journal line %s: Open: %v", bad, err)
		}
	}
	// Not a journal's header.
	if err := os.WriteFile(p, []byte(`{"t":"start","id":900,"c":"x"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Open(path); !errors.Is(err, audit.ErrJournal) || !strings.Contains(err.Error(), p+":1") {
		t.Errorf("a journal without its header: Open: %v", err)
	}
	writeJournal(t, path, "garbage", `{"t":"start","id":900,"c":"ok1","ts":1,"tool":"look"}`+"\n", 0o600)
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := callIDs(t, s); got["ok1"].ID != 900 {
		t.Errorf("the mended journal was not replayed: %+v", got)
	}
}

// TestNewerJournalLeftAlone: the journal of a newer lathe (its header says
// a later version) may hold lines this one does not know: it neither fails
// Open nor is replayed or removed, and waits for a lathe that reads it.
func TestNewerJournalLeftAlone(t *testing.T) {
	path := newDB(t)
	p := filepath.Join(filepath.Dir(path), audit.JournalPrefix(path)+"newer")
	body := `{"t":"lathe-audit-journal","v":2,"db":"lathe.db","extra":1}` + "\n" + `{"t":"start2","id":900,"x":1}` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := callIDs(t, s); len(got) != 0 {
		t.Errorf("records from a newer journal: %+v", got)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != body {
		t.Errorf("the newer journal was changed: %q %v", b, err)
	}
}

// TestTornLastLine: a crash in the middle of a line's write leaves the
// line cut short at the end of the journal; it is skipped and counted, the
// lines before it replayed.
func TestTornLastLine(t *testing.T) {
	path := newDB(t)
	writeJournal(t, path, "torn", `{"t":"start","id":900,"c":"whole","ts":1,"tool":"look"}`+"\n"+`{"t":"finish","id":900,"d":"al`, 0o600)
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := callIDs(t, s)
	if r := got["whole"]; r.ID != 900 || !r.Incomplete {
		t.Errorf("the whole line's record: %+v", got)
	}
	if files, records, torn := audit.Recovered(s); files != 1 || records != 1 || torn != 1 {
		t.Errorf("recovered %d files, %d records, %d torn lines; want 1, 1, 1", files, records, torn)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
}

// TestZerosInJournal: a journal written through a mapping ends in the
// zeros of its room, and a crash of the machine may leave zeros in place of
// lines whose pages never reached the disk. Zeros end no replay: the lines
// they cut are torn, every whole line is replayed.
func TestZerosInJournal(t *testing.T) {
	zeros := strings.Repeat("\x00", 300)
	whole := `{"t":"start","id":900,"c":"first","ts":1,"tool":"look"}` + "\n"
	after := `{"t":"start","id":902,"c":"after","ts":3,"tool":"look"}` + "\n"
	for _, c := range []struct {
		name, body string
		records    int
		torn       int64
	}{
		{"room after the lines", whole + after + zeros, 2, 0},
		{"a copy cut short", whole + `{"t":"start","id":901,"c":"cut"` + zeros, 1, 1},
		{"a line's start lost", whole + zeros + `1,"c":"lost","ts":2,"tool":"look"}` + "\n" + after + zeros, 2, 1},
		{"a line's end lost", whole + `{"t":"start","id":901,"c":"cut"` + zeros + after, 2, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := newDB(t)
			writeJournal(t, path, "zeros", c.body, 0o600)
			s, err := audit.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := callIDs(t, s)
			if got["first"].ID != 900 || strings.Contains(c.body, after) && got["after"].ID != 902 || len(got) != c.records {
				t.Errorf("replayed %+v", got)
			}
			if files, _, torn := audit.Recovered(s); files != 1 || torn != c.torn {
				t.Errorf("recovered %d files, %d torn lines; want 1, %d", files, torn, c.torn)
			}
		})
	}
}

// TestCloseWritesQueued: Close with records queued (the writer held back)
// writes them all, and removes the journal.
func TestCloseWritesQueued(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lathe", "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	audit.HoldWriter(s, true)
	ctx := context.Background()
	for i := range 50 {
		r := killRecord(i)
		r.Outcome = "ok"
		record(t, ctx, s, r)
	}
	// One more started and not finished, which Close waits a little for.
	if _, err := s.Start(ctx, killRecord(50)); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, path); n != 0 {
		t.Fatalf("%d rows in SQLite with the writer held", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := rawCount(t, path); n != 51 {
		t.Fatalf("%d rows after Close, want 51", n)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals left after Close: %v", j)
	}
}

// lockDB takes the database's write lock with a connection of its own, as
// another process writing would, and returns the function that lets go.
func lockDB(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			db.Exec("ROLLBACK")
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// TestBusyPastTimeoutKeepsRecords: another connection holds the write lock
// for longer than the busy timeout. Calls go on (their records are in the
// journal), a read says what failed rather than waiting, and once the lock
// is free every record is written.
func TestBusyPastTimeoutKeepsRecords(t *testing.T) {
	defer audit.SetBusyTimeout(100 * time.Millisecond)()
	s, path := open(t)
	ctx := context.Background()
	// The first record reserves this store's ids.
	r0 := killRecord(0)
	id0, err := s.Start(ctx, r0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, audit.Filter{}); err != nil {
		t.Fatal(err)
	}
	release := lockDB(t, path)
	for i := 1; i < 100; i++ {
		r := killRecord(i)
		id, err := s.Start(ctx, r)
		if err != nil {
			t.Fatalf("a record started while SQLite was locked: %v", err)
		}
		r.Outcome = "ok"
		if err := s.Finish(ctx, id, r); err != nil {
			t.Fatalf("a record finished while SQLite was locked: %v", err)
		}
	}
	r0.Outcome = "ok"
	if err := s.Finish(ctx, id0, r0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the writer tries, and fails, at least once
	if _, err := s.List(ctx, audit.Filter{}); err == nil {
		t.Error("a read while SQLite was locked past the timeout did not fail")
	}
	release()
	got := callIDs(t, s)
	if len(got) != 100 {
		t.Fatalf("%d records once the lock was free, want 100", len(got))
	}
	for k, r := range got {
		if r.Status != audit.StatusDone {
			t.Errorf("%s: %+v", k, r)
		}
	}
}

// TestCloseWhileBusyKeepsJournal: a store closed while SQLite is locked
// past the timeout says so and leaves its journal, which the next store
// replays.
func TestCloseWhileBusyKeepsJournal(t *testing.T) {
	defer audit.SetBusyTimeout(100 * time.Millisecond)()
	path := filepath.Join(t.TempDir(), ".lathe", "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	write := func(i int) { record(t, ctx, s, killRecord(i)) }
	write(0)
	if _, err := s.List(ctx, audit.Filter{}); err != nil {
		t.Fatal(err)
	}
	release := lockDB(t, path)
	for i := 1; i < 10; i++ {
		write(i)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Close with SQLite locked reported no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung while SQLite was locked")
	}
	if j := journals(t, path); len(j) != 1 {
		t.Fatalf("journals after a failed Close: %v", j)
	}
	release()
	s2, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := callIDs(t, s2); len(got) != 10 {
		t.Fatalf("%d records after the replay, want 10", len(got))
	}
}

// TestOldWriterBeside: a writer that inserts rows one by one with
// AUTOINCREMENT (an older lathe) beside a store: no id is taken twice and
// every row is there, each id the store handed out naming its own record.
func TestOldWriterBeside(t *testing.T) {
	s, path := open(t)
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	ctx := context.Background()
	var wg sync.WaitGroup
	oldErr := make(chan error, 1)
	wg.Go(func() {
		for i := range 300 {
			if _, err := old.Exec(`INSERT INTO calls (call_id, time_ns, tool, status) VALUES (?, 1, 'old', 'done')`,
				"old"+strconv.Itoa(i)); err != nil {
				oldErr <- err
				return
			}
		}
	})
	ids := map[int64]string{}
	for i := range 300 {
		r := killRecord(i)
		ids[record(t, ctx, s, r)] = r.CallID
	}
	wg.Wait()
	select {
	case err := <-oldErr:
		t.Fatal(err)
	default:
	}
	recs, err := s.List(ctx, audit.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 600 {
		t.Fatalf("%d records, want 600", len(recs))
	}
	for _, r := range recs {
		if want, ok := ids[r.ID]; ok && r.CallID != want {
			t.Errorf("record %d is %q, the store gave it to %q", r.ID, r.CallID, want)
		}
	}
}

// TestDeadJournalsMerged: a dead store's records may span its journals (a
// start in one, its finish in the next, started anew past its bound), whose
// names say nothing of their order: the finish is applied to its start
// whichever file is read first.
func TestDeadJournalsMerged(t *testing.T) {
	path := newDB(t)
	// "a" sorts first, and holds the finish.
	writeJournal(t, path, "a", `{"t":"finish","id":900,"d":"allow","o":"ok","ops":[{"k":"read","s":"f.txt"}]}`+"\n", 0o600)
	writeJournal(t, path, "b", `{"t":"start","id":900,"c":"spans","ts":1,"tool":"look"}`+"\n", 0o600)
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := callIDs(t, s)["spans"]
	if r.ID != 900 || r.Status != audit.StatusDone || r.Outcome != "ok" || len(r.Operations) != 1 {
		t.Errorf("a record whose finish is in the journal read first: %+v", r)
	}
	if j := journals(t, path); len(j) != 0 {
		t.Errorf("journals left: %v", j)
	}
}

// TestIDsGivenBack: a store gives back the ids of its block it did not use
// when no one reserved after it, so that processes one after the other (a
// lathe call each) number their records without gaps; when another store
// reserved after it, it keeps them, so that no id is handed out twice.
func TestIDsGivenBack(t *testing.T) {
	path := newDB(t)
	ctx := context.Background()
	write := func(s *audit.Store) int64 {
		t.Helper()
		return record(t, ctx, s, killRecord(0))
	}
	openAt := func() *audit.Store {
		t.Helper()
		s, err := audit.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var last int64
	for i := range 3 {
		s := openAt()
		for range 2 {
			id := write(s)
			if id != last+1 {
				t.Fatalf("process %d: id %d after %d", i, id, last)
			}
			last = id
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	a, b := openAt(), openAt()
	ida := write(a)
	idb := write(b)
	if idb <= ida {
		t.Fatalf("the second store's block (%d) is not after the first's (%d)", idb, ida)
	}
	a.Close()
	// a's block is not given back: b reserved after it.
	c := openAt()
	seen := map[int64]bool{ida: true, idb: true}
	for range 300 {
		for _, s := range []*audit.Store{b, c} {
			id := write(s)
			if seen[id] || id > ida && id < idb {
				t.Fatalf("id %d handed out again, or from the block of a closed store (%d..%d)", id, ida, idb)
			}
			seen[id] = true
		}
	}
	b.Close()
	c.Close()
	s := openAt()
	defer s.Close()
	recs, err := s.List(ctx, audit.Filter{Limit: -1})
	if err != nil || len(recs) != 6+2+600 {
		t.Fatalf("%d records, %v; want %d", len(recs), err, 6+2+600)
	}
}

// TestIDBlocksGrow: a store that uses its ids fast reserves bigger blocks,
// so that a busy gateway does not spend a transaction on ids every few
// tens of milliseconds; every id stays unique, and what it did not use is
// still given back when it closes.
func TestIDBlocksGrow(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	const n = 3000
	seen := map[int64]bool{}
	for i := range n {
		id := record(t, ctx, s, killRecord(i))
		if seen[id] {
			t.Fatalf("id %d handed out twice", id)
		}
		seen[id] = true
	}
	// Blocks of 256 ids would need 12 reservations for these records, and
	// leave at most 256 reserved past the last; growing ones need five
	// (256, 512, 1024, 2048, 4096) and reach past it by more.
	if seq := sequence(t, path); seq < n+256 {
		t.Errorf("the counter is at %d after %d records: blocks did not grow", seq, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// What is given back is the last block reserved, from the highest id
	// handed out: what stays reserved is at most the rest of the block
	// before it, which had fewer than half a first block left when the
	// last was reserved ahead.
	if seq := sequence(t, path); seq-n >= 128 {
		t.Errorf("the counter is at %d after the store closed, %d records: unused ids not given back", seq, n)
	}
}

// sequence reads the calls table's AUTOINCREMENT counter.
func sequence(t *testing.T, path string) int64 {
	t.Helper()
	return int64(rawInt(t, path, `SELECT seq FROM sqlite_sequence WHERE name = 'calls'`))
}

// record starts r in s and finishes it, and returns its id.
func record(t *testing.T, ctx context.Context, s *audit.Store, r *audit.Record) int64 {
	t.Helper()
	id, err := s.Start(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, id, r); err != nil {
		t.Fatal(err)
	}
	return id
}
