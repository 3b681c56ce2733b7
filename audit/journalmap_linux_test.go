package audit_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/lathe-tools/lathe/audit"
)

// TestJournalMapped: on Linux a store's journal is written through a
// mapping: the file holds its room (fallocate'd) from the first line, and
// a record's line is in it, whole, before SQLite has the record.
func TestJournalMapped(t *testing.T) {
	t.Cleanup(audit.SetRotateBytes(64 << 10))
	s, path := open(t)
	ctx := context.Background()
	audit.HoldWriter(s, true)
	defer audit.HoldWriter(s, false)
	id, err := s.Start(ctx, killRecord(1))
	if err != nil {
		t.Fatal(err)
	}
	j := journals(t, path)
	if len(j) != 1 {
		t.Fatalf("journals: %v", j)
	}
	data, err := os.ReadFile(j[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 64<<10 {
		t.Errorf("the journal is %d bytes, want its room of %d: not mapped", len(data), 64<<10)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\x00"), []byte("\n"))
	if len(lines) != 3 || !bytes.Contains(lines[1], []byte(`"c":"k1"`)) || len(lines[2]) != 0 {
		t.Errorf("the journal holds %q", lines)
	}
	if err := s.Finish(ctx, id, killRecord(1)); err != nil {
		t.Fatal(err)
	}
}

// TestJournalCutUnderMapping: something running as the same user cuts a
// live store's journal short under its mapping, where the next copy would
// fault (SIGBUS). The process lives on: the call whose line faulted is
// refused, the store starts a new journal, and every record whose Start
// succeeded reaches SQLite.
func TestJournalCutUnderMapping(t *testing.T) {
	t.Cleanup(audit.SetRotateBytes(64 << 10))
	s, path := open(t)
	ctx := context.Background()
	var ids []int64
	id, err := s.Start(ctx, killRecord(0))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, id)
	j := journals(t, path)
	if len(j) != 1 {
		t.Fatalf("journals: %v", j)
	}
	if err := os.Truncate(j[0], 0); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 40; i++ {
		id, err := s.Start(ctx, killRecord(i))
		switch {
		case i == 1 && err == nil:
			// The copy into a page past the file's end faults, and the
			// line has nowhere to be: that call is not run.
			t.Fatal("the first Start after the cut succeeded: its line is nowhere")
		case i == 1:
			t.Logf("the first Start after the cut: %v", err)
		case err != nil:
			t.Fatalf("Start %d after the cut: %v", i, err)
		default:
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		if err := s.Finish(ctx, id, killRecord(0)); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.List(ctx, audit.Filter{Limit: -1})
	if err != nil || len(recs) != len(ids) || len(ids) != 39 {
		t.Fatalf("%d records (%v), %d started", len(recs), err, len(ids))
	}
}
