package server

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

// The lifting of "task" runs on every line of standard input and every HTTP
// body. BenchmarkLiftLines reads a stream of 10,000 tools/call lines that
// ask for no task through liftLines; BenchmarkLiftLinesBaseline splits the
// same stream into lines with a bufio.Reader as large, the floor it is
// measured against (the SDK splits its input into lines anyway).
var benchLines = strings.Repeat(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+
	strings.Repeat("a", 200)+`"}}}`+"\n", 10000)

func BenchmarkLiftLines(b *testing.B) {
	b.SetBytes(int64(len(benchLines)))
	buf := make([]byte, 32<<10)
	for b.Loop() {
		if _, err := io.CopyBuffer(io.Discard, newLiftLines(strings.NewReader(benchLines)), buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLiftLinesBaseline(b *testing.B) {
	b.SetBytes(int64(len(benchLines)))
	for b.Loop() {
		r := bufio.NewReaderSize(strings.NewReader(benchLines), 1<<20)
		for {
			if _, err := r.ReadSlice('\n'); err != nil {
				break
			}
		}
	}
}

// BenchmarkLiftTaskBody is the cost per HTTP body that asks for no task.
func BenchmarkLiftTaskBody(b *testing.B) {
	body := []byte(benchLines[:strings.IndexByte(benchLines, '\n')])
	for b.Loop() {
		if out := liftTaskBody(body); len(out) != len(body) {
			b.Fatal("changed")
		}
	}
}

// TestLiftLinesKeepsTheStream: what liftLines passes on is the input, but
// for the calls that ask for a task, which carry it in _meta.
func TestLiftLinesKeepsTheStream(t *testing.T) {
	in := benchLines[:600] + "\n" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}` + "\n" +
		strings.Repeat("z", 3<<20) + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	got, err := io.ReadAll(newLiftLines(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	// The rewritten message is encoded anew, its members in sorted order.
	want := strings.Replace(in, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}`,
		`{"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"lathe/task":{"ttl":5}},"name":"x"}}`, 1)
	if !bytes.Equal(got, []byte(want)) {
		t.Errorf("liftLines changed the stream:\n got %.300q\nwant %.300q", got[550:], want[550:])
	}
}
