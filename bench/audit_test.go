package bench

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
)

// BenchmarkAudit measures the audit log's throughput: records (a started row
// and its completion, as every call writes) per second with 1 and 64
// concurrent callers, against the raw floor measured in the same run on a
// database file of its own: plain INSERTs, one after the other in a single
// transaction, which is as fast as SQLite takes rows. Both are timed in ten
// alternating rounds, so that drift in the machine's speed touches both
// alike. Each round of records ends with a read, which waits for all of
// them to be in SQLite, so that a write counts once it is in the database,
// not once it is in the journal. It also reports the processor time per
// record of both (audit-cpu-µs/rec, raw-cpu-µs/rec), the writer goroutine's
// included, which a busy machine's scheduling does not inflate. It reports audit-rec/s, raw-rec/s, their ratio audit/raw, and
// failed/op: the share of records that could not be written.
func BenchmarkAudit(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(map[int]string{1: "callers=1", 64: "callers=64"}[callers], func(b *testing.B) {
			dir := b.TempDir()
			raw := openRaw(b, filepath.Join(dir, "raw.db"))
			defer raw.Close()
			s, err := audit.Open(filepath.Join(dir, "audit.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			var failed atomic.Int64
			records := func(n int) time.Duration {
				var next atomic.Int64
				var wg sync.WaitGroup
				start := time.Now()
				for range callers {
					wg.Go(func() {
						for next.Add(1) <= int64(n) {
							r := &audit.Record{Time: time.Now(), Tool: "look", Arguments: `{"path":"x"}`, ArgsBytes: 12}
							id, err := s.Start(ctx, r)
							if err != nil {
								failed.Add(1)
								continue
							}
							r.Outcome, r.Duration = "ok", time.Microsecond
							if err := s.Finish(ctx, id, r); err != nil {
								failed.Add(1)
							}
						}
					})
				}
				wg.Wait()
				// A read waits for every record written before it to be
				// in SQLite: the round's time includes getting them there,
				// not just into the journal.
				if _, err := s.List(ctx, audit.Filter{Limit: 1}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			const rounds = 10
			var auditTime, rawTime, auditCPU, rawCPU time.Duration
			b.ResetTimer()
			for i := range rounds {
				n := b.N/rounds + boolInt(i < b.N%rounds)
				c := cpuUsed()
				rawTime += rawInserts(b, raw, n)
				c2 := cpuUsed()
				auditTime += records(n)
				auditCPU += cpuUsed() - c2
				rawCPU += c2 - c
			}
			b.StopTimer()
			b.ReportMetric(float64(auditCPU.Nanoseconds())/1e3/float64(b.N), "audit-cpu-µs/rec")
			b.ReportMetric(float64(rawCPU.Nanoseconds())/1e3/float64(b.N), "raw-cpu-µs/rec")
			auditRate := float64(b.N) / auditTime.Seconds()
			rawRate := float64(b.N) / rawTime.Seconds()
			b.ReportMetric(auditRate, "audit-rec/s")
			b.ReportMetric(rawRate, "raw-rec/s")
			b.ReportMetric(auditRate/rawRate, "audit/raw")
			b.ReportMetric(float64(failed.Load())/float64(b.N), "failed/op")
		})
	}
}

func boolInt(x bool) int {
	if x {
		return 1
	}
	return 0
}

// openRaw makes a database at path with a table of the audit table's shape.
func openRaw(b *testing.B, path string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE calls (id INTEGER PRIMARY KEY AUTOINCREMENT, call_id TEXT NOT NULL DEFAULT '',
		time_ns INTEGER NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL DEFAULT '', status TEXT NOT NULL,
		outcome TEXT NOT NULL DEFAULT '', duration_ns INTEGER NOT NULL DEFAULT 0, args_bytes INTEGER NOT NULL DEFAULT 0,
		pid INTEGER NOT NULL DEFAULT 0)`); err != nil {
		b.Fatal(err)
	}
	return db
}

// rawInserts writes n rows into db in one transaction and returns how long
// that took.
func rawInserts(b *testing.B, db *sql.DB, n int) time.Duration {
	start := time.Now()
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO calls (time_ns, tool, arguments, status, outcome, duration_ns, args_bytes, pid)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		if _, err := st.Exec(time.Now().UnixNano(), "look", `{"path":"x"}`, "done", "ok", 1000, 12, 1); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}
