package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// decodeLine reads one journal line as parseJournal does.
func decodeLine(t testing.TB, b []byte) jline {
	t.Helper()
	if len(b) == 0 || b[len(b)-1] != '\n' || bytes.IndexByte(b[:len(b)-1], '\n') >= 0 {
		t.Fatalf("not one line: %q", b)
	}
	var l jline
	dec := json.NewDecoder(bytes.NewReader(b[:len(b)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil || dec.More() {
		t.Fatalf("%q: %v", b, err)
	}
	return l
}

// marshalled is what encoding/json makes of l, read back: the meaning the
// hand-written lines must have.
func marshalled(t testing.TB, l *jline) jline {
	t.Helper()
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return decodeLine(t, append(b, '\n'))
}

// checkLines holds startLine and finishLine to encoding/json's meaning for
// a record whose strings are all s.
func checkLines(t testing.TB, s string, n int64) {
	r := &Record{CallID: s, Parent: n, Time: time.Unix(0, n), Tool: s, Arguments: s, ArgsBytes: int(n), PID: int(n),
		Kind: s, Session: s, Server: s, Decision: s, DecidedBy: s, Reason: s, Outcome: s, Duration: time.Duration(n),
		ResultBytes: int(n), OperationsDropped: int(n),
		Operations: []Operation{{Kind: s, Subject: s, Approval: s, DecidedBy: s, Reason: s, Error: s, Bytes: n,
			Time: time.Unix(0, n), Duration: time.Duration(n)}, {Kind: "read"}}}
	got := decodeLine(t, startLine(7, r))
	want := marshalled(t, &jline{T: "start", ID: 7, CallID: s, Parent: n, Time: n, Tool: s, Arguments: s,
		ArgsBytes: int(n), PID: int(n), Kind: s, Session: s, Server: s})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("start line of %q, %d:\n got %+v\nwant %+v", s, n, got, want)
	}
	ops := []jop{{Kind: s, Subject: s, Approval: s, DecidedBy: s, Reason: s, Error: s, Bytes: n, Time: n, Duration: n},
		{Kind: "read", Time: time.Time{}.UnixNano()}}
	got = decodeLine(t, finishLine(7, r))
	want = marshalled(t, &jline{T: "finish", ID: 7, Decision: s, DecidedBy: s, Reason: s, Outcome: s, Duration: n,
		ResultBytes: int(n), Ops: ops, Dropped: int(n)})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("finish line of %q, %d:\n got %+v\nwant %+v", s, n, got, want)
	}
}

// TestJournalLineEncoding: the hand-written journal lines mean what
// encoding/json would have written, for strings a hostile tool or client
// may send (quotes, backslashes, newlines that would split a line, control
// characters, bytes that are not UTF-8, U+2028).
func TestJournalLineEncoding(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "line\nbreak\r\n", "\x00\x01\x1f\x7f", "\xff\xfe bad utf-8 \xc3",
		"é漢字🙂", "\u2028\u2029", `{"t":"finish","id":1}` + "\n" + `{"t":"start"`, "</script>&"} {
		for _, n := range []int64{0, 1, -1, 1 << 62} {
			checkLines(t, s, n)
		}
	}
}

func FuzzJournalLine(f *testing.F) {
	f.Add("a\"\\\n\xff", int64(3))
	f.Fuzz(func(t *testing.T, s string, n int64) { checkLines(t, s, n) })
}
